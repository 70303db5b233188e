//! The Telegram Bot API through teloxide: connect (`getMe`, drop any webhook), long-poll
//! updates and translate messages into [`Inbound`], send answers as HTML with a plain-text
//! retry when Telegram rejects the markup, and honour `retry_after` on 429. Translation and
//! rendering only: who may talk, and what runs, is the runtime's business.

use crate::render::{answer_messages, plain_messages};
use std::time::Duration;
use teloxide::payloads::{GetUpdatesSetters, SendMessageSetters};
use teloxide::prelude::Requester;
use teloxide::types::{ChatId, ParseMode, UpdateKind};
use teloxide::{Bot, RequestError};
use tollgate_surface::limits::TELEGRAM_MESSAGE;
use tollgate_surface::{BridgeError, ChatKind, ChatRef, Inbound, Platform, UserRef};

/// Sends given up on after this many rate-limit waits in a row.
const MAX_RATE_LIMIT_WAITS: u32 = 5;

/// A connected bot.
pub struct TelegramBot {
    bot: Bot,
    /// The bot's own user id and username (for mentions and replies).
    pub id: i64,
    pub username: String,
    offset: i32,
}

fn bridge_error(e: &RequestError) -> BridgeError {
    BridgeError {
        message: format!("Telegram: {e}"),
        retry_after_secs: match e {
            RequestError::RetryAfter(s) => Some(u64::from(s.seconds())),
            _ => None,
        },
    }
}

impl TelegramBot {
    /// Connects to the Bot API at `api_url` (the public one, a self-hosted one, or a test fake).
    pub async fn connect(token: &str, api_url: &str) -> Result<Self, BridgeError> {
        let url = reqwest::Url::parse(api_url).map_err(|e| BridgeError {
            message: format!("`{api_url}` is not a URL: {e}"),
            retry_after_secs: None,
        })?;
        let bot = Bot::new(token).set_api_url(url);
        let me = bot.get_me().await.map_err(|e| bridge_error(&e))?;
        bot.delete_webhook().await.map_err(|e| bridge_error(&e))?;
        Ok(TelegramBot {
            id: i64::try_from(me.user.id.0).unwrap_or(i64::MAX),
            username: me.user.username.clone().unwrap_or_default(),
            bot,
            offset: 0,
        })
    }

    /// The next messages (long-polling up to `wait`).
    pub async fn poll(&mut self, wait: Duration) -> Result<Vec<Inbound>, BridgeError> {
        let updates = self
            .bot
            .get_updates()
            .offset(self.offset)
            .timeout(u32::try_from(wait.as_secs()).unwrap_or(30))
            .await
            .map_err(|e| bridge_error(&e))?;
        let mut inbound = Vec::new();
        for update in updates {
            self.offset = i32::try_from(update.id.0)
                .unwrap_or(i32::MAX)
                .saturating_add(1);
            if let UpdateKind::Message(message) = update.kind
                && let Some(translated) = self.translate(&message)
            {
                inbound.push(translated);
            }
        }
        Ok(inbound)
    }

    fn translate(&self, message: &teloxide::types::Message) -> Option<Inbound> {
        let text = message.text().or_else(|| message.caption())?.to_string();
        let from = message.from.as_ref()?;
        let kind = if message.chat.is_private() {
            ChatKind::Private
        } else {
            ChatKind::Group
        };
        let mention = format!("@{}", self.username);
        let reply_to_bot = message
            .reply_to_message()
            .and_then(|r| r.from.as_ref())
            .is_some_and(|u| i64::try_from(u.id.0).ok() == Some(self.id));
        Some(Inbound {
            chat: ChatRef {
                platform: Platform::Telegram,
                id: message.chat.id.0,
                kind,
                thread: message
                    .is_topic_message
                    .then(|| message.thread_id.map(|t| i64::from(t.0.0)))
                    .flatten(),
                guild: None,
                parent: None,
            },
            sender: UserRef {
                id: i64::try_from(from.id.0).unwrap_or(i64::MAX),
                display: from.full_name(),
                is_bot: from.is_bot,
            },
            roles: Vec::new(),
            message_id: i64::from(message.id.0),
            mentioned: !self.username.is_empty() && text.contains(&mention),
            text,
            reply_to_bot,
            attachments: Vec::new(),
        })
    }

    /// Sends an answer: Telegram HTML split under the limit; if Telegram rejects the markup,
    /// the same text again as plain text. Rate limits are waited out (`retry_after`).
    pub async fn send_answer(&self, chat: i64, markdown: &str) -> Result<(), BridgeError> {
        for html in answer_messages(markdown) {
            let sent = self
                .send_with_waits(chat, &html, Some(ParseMode::Html))
                .await;
            if let Err(e) = sent {
                if e.retry_after_secs.is_some() {
                    return Err(e);
                }
                // Telegram refused the HTML: send the original text plainly instead.
                for plain in plain_messages(markdown, TELEGRAM_MESSAGE) {
                    self.send_with_waits(chat, &plain, None).await?;
                }
                return Ok(());
            }
        }
        Ok(())
    }

    async fn send_with_waits(
        &self,
        chat: i64,
        text: &str,
        mode: Option<ParseMode>,
    ) -> Result<(), BridgeError> {
        let mut waits = 0;
        loop {
            let mut request = self.bot.send_message(ChatId(chat), text);
            if let Some(mode) = mode {
                request = request.parse_mode(mode);
            }
            match request.await {
                Ok(_) => return Ok(()),
                Err(RequestError::RetryAfter(seconds)) if waits < MAX_RATE_LIMIT_WAITS => {
                    waits += 1;
                    tokio::time::sleep(Duration::from_secs(u64::from(seconds.seconds()))).await;
                }
                Err(e) => return Err(bridge_error(&e)),
            }
        }
    }
}
