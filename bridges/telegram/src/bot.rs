//! The Bot API through teloxide: connect (`getMe`, drop any webhook), long-poll updates, and
//! every call the bridge makes — answers (HTML, with a plain-text retry when Telegram rejects
//! the markup), cards and their edits, press answers, typing, progress, documents, downloads,
//! the command menu. `retry_after` on 429 is waited out for what must arrive (answers, cards,
//! their edits); droppable calls (typing, progress) report it and are skipped by the caller.

use crate::card::keyboard;
use crate::errors::{bridge_error, kind_of};
use crate::render::{answer_messages, plain_messages};
use crate::sent::SendMessageForId;
use crate::updates::{translate_message, translate_press};
use std::future::{Future, IntoFuture};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;
use teloxide::net::Download;
use teloxide::payloads::{
    AnswerCallbackQuerySetters, EditMessageTextSetters, GetUpdatesSetters, SendChatActionSetters,
    SendDocumentSetters, SendMessage, SendMessageSetters,
};
use teloxide::prelude::Requester;
use teloxide::requests::JsonRequest;
use teloxide::types::{
    BotCommand, ChatAction, ChatId, FileId, InlineKeyboardMarkup, InputFile, MessageId, ParseMode,
    ReplyMarkup, ReplyParameters, ThreadId, UpdateKind,
};
use teloxide::{Bot, RequestError};
use tollgate_surface::limits::TELEGRAM_MESSAGE;
use tollgate_surface::{BridgeError, BridgeErrorKind, BridgeEvent, Button, ChatRef, Platform};

/// Sends given up on after this many rate-limit waits in a row.
const MAX_RATE_LIMIT_WAITS: u32 = 5;

/// The longest `retry_after` waited out (the Discord bridge has a ceiling too): a longer one
/// (a flood ban, or a server that answers nonsense) gives the send up at once, so the caller's
/// fallback — an answer kept to be sent at the next start, a card left to its deadline —
/// takes over rather than the session sleeping for hours. Five minutes, not Discord's one:
/// Telegram's flood control in groups asks for minutes, and a card given up on is not shown.
const LONGEST_WAIT: Duration = Duration::from_secs(300);

/// Tries after a network failure or a Telegram 5xx before giving up.
const MAX_TRANSIENT_RETRIES: u32 = 3;

/// A connected bot. Every method takes `&self`: one bot serves the poller and every session.
pub struct TelegramBot {
    bot: Bot,
    /// The bot's own user id and username (for mentions and replies).
    pub id: i64,
    pub username: String,
    offset: AtomicI32,
}

fn thread(chat: &ChatRef) -> Option<ThreadId> {
    chat.thread
        .and_then(|t| i32::try_from(t).ok())
        .map(|t| ThreadId(MessageId(t)))
}

fn message_id(id: i64) -> MessageId {
    MessageId(i32::try_from(id).unwrap_or(i32::MAX))
}

/// Runs a request, waiting out up to [`MAX_RATE_LIMIT_WAITS`] 429s (each at most
/// [`LONGEST_WAIT`]) and retrying transient failures [`MAX_TRANSIENT_RETRIES`] times (after
/// 1 s, then 2 s, …).
async fn with_waits<T, F, Fut>(mut request: F) -> Result<T, BridgeError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, RequestError>>,
{
    let (mut waits, mut retries) = (0, 0);
    loop {
        match request().await {
            Ok(value) => return Ok(value),
            Err(RequestError::RetryAfter(seconds))
                if waits < MAX_RATE_LIMIT_WAITS
                    && Duration::from_secs(u64::from(seconds.seconds())) <= LONGEST_WAIT =>
            {
                waits += 1;
                let wait = Duration::from_secs(u64::from(seconds.seconds()));
                tollgate_surface::metered::rate_limit_wait(Platform::Telegram, wait);
                tokio::time::sleep(wait).await;
            }
            Err(e)
                if kind_of(&e) == BridgeErrorKind::Transient && retries < MAX_TRANSIENT_RETRIES =>
            {
                retries += 1;
                tokio::time::sleep(Duration::from_secs(u64::from(retries))).await;
            }
            Err(e) => return Err(bridge_error(&e)),
        }
    }
}

/// teloxide's client settings (its timeouts suit long polling) and its `TELOXIDE_PROXY`, as
/// `Bot::new` would use them, with idle connections let go after
/// [`tollgate_surface::limits::IDLE_CONNECTION`]; an error where `Bot::new` would panic.
fn http_client() -> Result<reqwest::Client, BridgeError> {
    let mut builder = teloxide::net::default_reqwest_settings()
        .pool_idle_timeout(tollgate_surface::limits::IDLE_CONNECTION);
    if let Ok(proxy) = std::env::var("TELOXIDE_PROXY") {
        // The value is not quoted back: a proxy URL can hold a password.
        let proxy = reqwest::Proxy::all(&proxy).map_err(|e| {
            BridgeError::rejected(format!("TELOXIDE_PROXY is not a proxy URL: {e}"))
        })?;
        builder = builder.proxy(proxy);
    }
    builder
        .build()
        .map_err(|e| BridgeError::rejected(format!("building the HTTP client: {e}")))
}

impl TelegramBot {
    /// Connects to the Bot API at `api_url` (the public one, a self-hosted one, or a test fake).
    pub async fn connect(token: &str, api_url: &str) -> Result<Self, BridgeError> {
        let url = reqwest::Url::parse(api_url)
            .map_err(|e| BridgeError::rejected(format!("`{api_url}` is not a URL: {e}")))?;
        let bot = Bot::with_client(token, http_client()?).set_api_url(url);
        let me = bot.get_me().await.map_err(|e| bridge_error(&e))?;
        bot.delete_webhook().await.map_err(|e| bridge_error(&e))?;
        Ok(TelegramBot {
            id: i64::try_from(me.user.id.0).unwrap_or(i64::MAX),
            username: me.user.username.clone().unwrap_or_default(),
            bot,
            offset: AtomicI32::new(0),
        })
    }

    /// `text` without the bot's token (teloxide's errors can carry the request URL, which
    /// holds it): for what the bridge logs itself.
    #[must_use]
    pub fn redact(&self, text: &str) -> String {
        let token = self.bot.token();
        if token.is_empty() {
            return text.to_string();
        }
        text.replace(token, "<bot token>")
    }

    /// The next messages and presses (long-polling up to `wait`), translated.
    pub async fn poll(&self, wait: Duration) -> Result<Vec<BridgeEvent>, BridgeError> {
        let updates = self
            .bot
            .get_updates()
            .offset(self.offset.load(Ordering::SeqCst))
            .timeout(u32::try_from(wait.as_secs()).unwrap_or(30))
            .await
            .map_err(|e| bridge_error(&e))?;
        let mut translated = Vec::new();
        for update in updates {
            let next = i32::try_from(update.id.0)
                .unwrap_or(i32::MAX)
                .saturating_add(1);
            self.offset.fetch_max(next, Ordering::SeqCst);
            match &update.kind {
                UpdateKind::Message(message) => {
                    if let Some(m) = translate_message(message, self.id, &self.username) {
                        translated.push(BridgeEvent::Message(m));
                    }
                }
                UpdateKind::CallbackQuery(query) => {
                    translated.push(BridgeEvent::Press(translate_press(query)));
                }
                _ => {}
            }
        }
        Ok(translated)
    }

    /// Sends an answer: Telegram HTML split under the limit; if Telegram rejects the markup,
    /// the same text again as plain text. Rate limits are waited out (`retry_after`).
    pub async fn send_answer(&self, chat: &ChatRef, markdown: &str) -> Result<(), BridgeError> {
        for html in answer_messages(markdown) {
            if let Err(e) = self
                .send_text(chat, &html, Some(ParseMode::Html), None, None)
                .await
            {
                if e.kind != BridgeErrorKind::Rejected {
                    return Err(e);
                }
                // Telegram refused the HTML: send the original text plainly instead.
                for plain in plain_messages(markdown, TELEGRAM_MESSAGE) {
                    self.send_text(chat, &plain, None, None, None).await?;
                }
                return Ok(());
            }
        }
        Ok(())
    }

    /// Sends a notice as plain text, split under the limit where it is long (an allowlist
    /// that grew, a tool name a model chose): returns the last message's id.
    pub async fn send_notice(&self, chat: &ChatRef, text: &str) -> Result<i64, BridgeError> {
        let mut sent = None;
        for part in plain_messages(text, TELEGRAM_MESSAGE) {
            sent = Some(self.send_text(chat, &part, None, None, None).await?);
        }
        match sent {
            Some(id) => Ok(id),
            // An empty notice still goes out (Telegram refuses it, and the caller hears why).
            None => self.send_text(chat, text, None, None, None).await,
        }
    }

    /// Sends a card (HTML) with its buttons, as a reply to `reply_to` (its details file) when
    /// given; returns its message id, to edit it later.
    pub async fn send_card(
        &self,
        chat: &ChatRef,
        html: &str,
        rows: &[Vec<Button>],
        reply_to: Option<i64>,
    ) -> Result<i64, BridgeError> {
        let markup = keyboard(rows)?;
        self.send_text(chat, html, Some(ParseMode::Html), Some(markup), reply_to)
            .await
    }

    async fn send_text(
        &self,
        chat: &ChatRef,
        text: &str,
        mode: Option<ParseMode>,
        markup: Option<InlineKeyboardMarkup>,
        reply_to: Option<i64>,
    ) -> Result<i64, BridgeError> {
        let sent = with_waits(|| {
            let mut payload = SendMessage::new(ChatId(chat.id), text);
            payload.parse_mode = mode;
            payload.message_thread_id = thread(chat);
            payload.reply_markup = markup.clone().map(ReplyMarkup::from);
            payload.reply_parameters = reply_to.map(|id| ReplyParameters::new(message_id(id)));
            JsonRequest::new(self.bot.clone(), SendMessageForId(payload)).into_future()
        })
        .await?;
        Ok(i64::from(sent.message_id))
    }

    /// Replaces a card's (or any message's) HTML and its buttons (none: the buttons go away).
    pub async fn edit_card(
        &self,
        chat_id: i64,
        message: i64,
        html: &str,
        rows: &[Vec<Button>],
    ) -> Result<(), BridgeError> {
        let markup = keyboard(rows)?;
        let edited = with_waits(|| {
            self.bot
                .edit_message_text(ChatId(chat_id), message_id(message), html)
                .parse_mode(ParseMode::Html)
                .reply_markup(markup.clone())
                .into_future()
        })
        .await;
        edited.map(|_| ())
    }

    /// The whole text of something cut on a card, as a file the card then replies to; the
    /// file's message id.
    pub async fn send_document(
        &self,
        chat: &ChatRef,
        name: &str,
        text: &str,
    ) -> Result<i64, BridgeError> {
        with_waits(|| {
            let file = InputFile::memory(text.as_bytes().to_vec()).file_name(name.to_string());
            let mut request = self.bot.send_document(ChatId(chat.id), file);
            if let Some(thread) = thread(chat) {
                request = request.message_thread_id(thread);
            }
            request.into_future()
        })
        .await
        .map(|sent| i64::from(sent.id.0))
    }

    /// Answers a press: the presser sees `text` (as an alert when `alert`).
    pub async fn answer_press(
        &self,
        callback_id: &str,
        text: &str,
        alert: bool,
    ) -> Result<(), BridgeError> {
        with_waits(|| {
            self.bot
                .answer_callback_query(teloxide::types::CallbackQueryId(callback_id.to_string()))
                .text(text)
                .show_alert(alert)
                .into_future()
        })
        .await
        .map(|_| ())
    }

    /// "typing…" (droppable: a 429 is returned, not waited out).
    pub async fn typing(&self, chat: &ChatRef) -> Result<(), BridgeError> {
        let mut request = self
            .bot
            .send_chat_action(ChatId(chat.id), ChatAction::Typing);
        if let Some(thread) = thread(chat) {
            request = request.message_thread_id(thread);
        }
        request.await.map(|_| ()).map_err(|e| bridge_error(&e))
    }

    /// Posts the progress message (droppable).
    pub async fn send_progress(&self, chat: &ChatRef, text: &str) -> Result<i64, BridgeError> {
        let mut request = self.bot.send_message(ChatId(chat.id), text);
        if let Some(thread) = thread(chat) {
            request = request.message_thread_id(thread);
        }
        request
            .await
            .map(|m| i64::from(m.id.0))
            .map_err(|e| bridge_error(&e))
    }

    /// Edits the progress message (droppable).
    pub async fn edit_progress(
        &self,
        chat_id: i64,
        message: i64,
        text: &str,
    ) -> Result<(), BridgeError> {
        self.bot
            .edit_message_text(ChatId(chat_id), message_id(message), text)
            .await
            .map(|_| ())
            .map_err(|e| bridge_error(&e))
    }

    /// Registers the command menu.
    pub async fn set_commands(&self, commands: &[(&str, &str)]) -> Result<(), BridgeError> {
        let commands: Vec<BotCommand> = commands
            .iter()
            .map(|(name, description)| BotCommand::new(*name, *description))
            .collect();
        with_waits(|| self.bot.set_my_commands(commands.clone()).into_future())
            .await
            .map(|_| ())
    }

    /// Downloads a file to `dest`, refusing more than `cap` bytes (Telegram's report of the
    /// size is checked first; the count of bytes received is checked again while streaming).
    pub async fn download(
        &self,
        file_id: &str,
        out: &mut tollgate_surface::FetchSink,
        cap: u64,
    ) -> Result<u64, BridgeError> {
        let fail = BridgeError::rejected;
        let file =
            with_waits(|| self.bot.get_file(FileId(file_id.to_string())).into_future()).await?;
        if u64::from(file.meta.size) > cap {
            return Err(fail(format!(
                "the file is {} bytes; the limit is {cap}",
                file.meta.size
            )));
        }
        let stream = self.bot.download_file_stream(&file.path);
        tollgate_surface::fetch::write_capped(stream, out, cap, "Telegram: downloading a file")
            .await
    }
}
