//! A connected bot and every REST call the bridge makes: messages (answers, notices, cards,
//! progress) and their edits, files beside cards, typing, answers to interactions, threads,
//! the slash commands and attachment downloads. Each message goes out with `allowed_mentions`
//! empty, so nothing the bot posts pings anyone.

use crate::channels::Channels;
use crate::render::no_pings;
use crate::rest::{Delivery, Rest};
use crate::translate::Me;
use serde_json::{Value, json};
use serenity::builder::CreateAttachment;
use serenity::http::{LightMethod, Multipart, MultipartUpload, Request, Route};
use serenity::model::id::{ApplicationId, ChannelId, MessageId};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use tollgate_surface::limits::DISCORD_MESSAGE;
use tollgate_surface::{BridgeError, BridgeErrorKind, ChatKind, ChatRef, PressHandle};

/// Message flag: only the invoker sees it.
pub const EPHEMERAL: u64 = 1 << 6;

/// Characters of a thread's name.
const THREAD_NAME: usize = 90;

/// Discord's JSON error code for "A thread has already been created for this message".
const THREAD_ALREADY_CREATED: i64 = 160_004;

/// Minutes of quiet before Discord archives a thread the bot opened (a day; a message
/// unarchives it).
const THREAD_ARCHIVE_MINUTES: u32 = 1440;

/// The bot: who it is and how it reaches Discord.
pub struct Bot {
    pub rest: Rest,
    pub channels: Channels,
    pub id: u64,
    pub name: String,
    pub application: u64,
    pub message_content: bool,
}

fn channel_id(id: u64) -> ChannelId {
    ChannelId::new(id.max(1))
}

fn positive(id: i64) -> Result<u64, BridgeError> {
    u64::try_from(id)
        .ok()
        .filter(|id| *id > 0)
        .ok_or_else(|| BridgeError::rejected(format!("`{id}` is not a Discord id")))
}

/// A nonce for a message create: with `enforce_nonce`, Discord creates one message however often
/// the request is retried (a retry after a timeout must not post an answer twice). Unique
/// across restarts: the start time in milliseconds, then a counter.
fn nonce() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static STARTED: OnceLock<u128> = OnceLock::new();
    let started = STARTED.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis())
    });
    // At most 25 characters: 11 hex digits of milliseconds and up to 13 of the counter.
    format!("{started:x}.{:x}", NEXT.fetch_add(1, Ordering::Relaxed))
}

fn message_id_of(answer: &Value) -> Result<i64, BridgeError> {
    answer["id"]
        .as_str()
        .and_then(|id| id.parse().ok())
        .ok_or_else(|| BridgeError::rejected("Discord: a sent message came back without an id"))
}

impl Bot {
    /// Who the token belongs to, and its application (for slash commands and interactions).
    pub async fn connect(
        token: &str,
        api_url: &str,
        message_content: bool,
    ) -> Result<Self, BridgeError> {
        let rest = Rest::new(token, api_url)?;
        let me: Value = rest
            .json(LightMethod::Get, Route::UserMe, None, Delivery::MustArrive)
            .await?;
        let application: Value = rest
            .json(
                LightMethod::Get,
                Route::Oauth2ApplicationCurrent,
                None,
                Delivery::MustArrive,
            )
            .await?;
        let number = |v: &Value| v.as_str().and_then(|s| s.parse::<u64>().ok());
        let (Some(id), Some(application)) = (number(&me["id"]), number(&application["id"])) else {
            return Err(BridgeError::rejected(
                "Discord: the bot's user or application came back without an id",
            ));
        };
        Ok(Bot {
            rest,
            channels: Channels::default(),
            id,
            name: me["username"].as_str().unwrap_or("bot").to_string(),
            application,
            message_content,
        })
    }

    #[must_use]
    pub fn me(&self) -> Me {
        Me {
            id: self.id,
            message_content: self.message_content,
        }
    }

    /// The channel messages to `chat` go to: a thread, a channel, or the DM with a user.
    pub async fn channel_of(&self, chat: &ChatRef) -> Result<u64, BridgeError> {
        if chat.kind == ChatKind::Private && chat.guild.is_none() {
            return self.channels.direct(&self.rest, positive(chat.id)?).await;
        }
        positive(chat.thread.unwrap_or(chat.id))
    }

    /// Posts a message (`body` without `allowed_mentions`, which is added); its id.
    pub async fn post(
        &self,
        chat: &ChatRef,
        mut body: Value,
        delivery: Delivery,
    ) -> Result<i64, BridgeError> {
        let channel = self.channel_of(chat).await?;
        body["allowed_mentions"] = no_pings();
        body["nonce"] = json!(nonce());
        body["enforce_nonce"] = json!(true);
        let answer: Value = self
            .rest
            .json(
                LightMethod::Post,
                Route::ChannelMessages {
                    channel_id: channel_id(channel),
                },
                Some(&body),
                delivery,
            )
            .await?;
        message_id_of(&answer)
    }

    /// Posts a message (`body`, as [`Bot::post`] takes it) with `text` attached as a file
    /// named `name`, in one request: the message and its file arrive together or not at all.
    pub async fn post_with_file(
        &self,
        chat: &ChatRef,
        mut body: Value,
        name: &str,
        text: &str,
    ) -> Result<i64, BridgeError> {
        let channel = self.channel_of(chat).await?;
        body["allowed_mentions"] = no_pings();
        body["nonce"] = json!(nonce());
        body["enforce_nonce"] = json!(true);
        let upload = CreateAttachment::bytes(text.as_bytes().to_vec(), name.to_string());
        let request = Request::new(
            Route::ChannelMessages {
                channel_id: channel_id(channel),
            },
            LightMethod::Post,
        )
        .multipart(Some(Multipart {
            upload: MultipartUpload::Attachments(vec![upload]),
            fields: vec![],
            payload_json: Some(body.to_string()),
        }));
        let bytes = self.rest.send(request, Delivery::MustArrive).await?;
        let answer: Value = serde_json::from_slice(&bytes).map_err(|e| {
            BridgeError::rejected(format!("Discord: an answer that is not a message: {e}"))
        })?;
        message_id_of(&answer)
    }

    /// Replaces a message's content and components.
    pub async fn edit(
        &self,
        chat: &ChatRef,
        message: i64,
        mut body: Value,
        delivery: Delivery,
    ) -> Result<(), BridgeError> {
        let channel = self.channel_of(chat).await?;
        body["allowed_mentions"] = no_pings();
        self.rest
            .call(
                LightMethod::Patch,
                Route::ChannelMessage {
                    channel_id: channel_id(channel),
                    message_id: MessageId::new(positive(message)?),
                },
                Some(&body),
                delivery,
            )
            .await
    }

    /// "typing…" (droppable).
    pub async fn typing(&self, chat: &ChatRef) -> Result<(), BridgeError> {
        let channel = self.channel_of(chat).await?;
        self.rest
            .call(
                LightMethod::Post,
                Route::ChannelTyping {
                    channel_id: channel_id(channel),
                },
                None,
                Delivery::Droppable,
            )
            .await
    }

    /// Answers an interaction through its token: the deferred answer of a command, or a
    /// follow-up to a press (privately to the presser when `private`).
    pub async fn follow_up(
        &self,
        handle: &PressHandle,
        text: &str,
        private: bool,
    ) -> Result<(), BridgeError> {
        let (_, token) = handle
            .0
            .split_once(':')
            .ok_or_else(|| BridgeError::rejected("not a Discord interaction handle"))?;
        // An answer longer than a message would be refused, leaving "thinking…" forever.
        let content: String = text.chars().take(DISCORD_MESSAGE).collect();
        let mut body = json!({ "content": content, "allowed_mentions": no_pings() });
        if private {
            body["flags"] = json!(EPHEMERAL);
        }
        self.rest
            .call(
                LightMethod::Post,
                Route::WebhookFollowupMessages {
                    application_id: ApplicationId::new(self.application.max(1)),
                    token,
                },
                Some(&body),
                Delivery::MustArrive,
            )
            .await
    }

    /// Opens a thread from message `message` in channel `parent`, named after `text`; whether
    /// this call opened it (`false`: it was open already, perhaps someone else's).
    pub async fn open_thread(
        &self,
        parent: i64,
        message: i64,
        text: &str,
    ) -> Result<bool, BridgeError> {
        let (parent, message) = (positive(parent)?, positive(message)?);
        let mut name: String = text
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(THREAD_NAME)
            .collect();
        if name.trim().is_empty() {
            name = "conversation".into();
        }
        let body = json!({ "name": name, "auto_archive_duration": THREAD_ARCHIVE_MINUTES });
        let opened = self
            .rest
            .call(
                LightMethod::Post,
                Route::ChannelMessageThreads {
                    channel_id: channel_id(parent),
                    message_id: MessageId::new(message),
                },
                Some(&body),
                Delivery::MustArrive,
            )
            .await;
        match opened {
            // The thread's id is the message's.
            Ok(()) => {
                self.channels.opened(message, parent);
                Ok(true)
            }
            // Opened before: by this bot (a retry, or a restart between opening and answering)
            // or by someone else (the author, another bot). Used all the same, but not taken
            // as the bot's own: who owns it is looked up when it matters (in a thread someone
            // else opened, `require_mention` still applies).
            Err(e)
                if e.message
                    .contains(&format!("(code {THREAD_ALREADY_CREATED})")) =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Registers the slash commands (replacing what was registered before).
    pub async fn set_commands(&self, commands: &Value) -> Result<(), BridgeError> {
        self.rest
            .call(
                LightMethod::Put,
                Route::Commands {
                    application_id: ApplicationId::new(self.application.max(1)),
                },
                Some(commands),
                Delivery::MustArrive,
            )
            .await
    }

    /// Downloads an attachment from its CDN address (no token goes with it), refusing more
    /// than `cap` bytes while streaming.
    pub async fn download(
        &self,
        url: &str,
        out: &mut tollgate_surface::FetchSink,
        cap: u64,
    ) -> Result<u64, BridgeError> {
        let fail = BridgeError::rejected;
        let transient = |e: reqwest::Error| {
            BridgeError::new(
                BridgeErrorKind::Transient,
                format!("Discord: downloading an attachment: {}", e.without_url()),
            )
        };
        let response = self
            .rest
            .client()
            .get(url)
            .send()
            .await
            .map_err(transient)?;
        if !response.status().is_success() {
            return Err(fail(format!(
                "Discord: downloading an attachment: {}",
                response.status()
            )));
        }
        if response.content_length().is_some_and(|n| n > cap) {
            return Err(fail(format!("the file is over the limit of {cap} bytes")));
        }
        let stream = response.bytes_stream();
        tollgate_surface::fetch::write_capped(
            stream,
            out,
            cap,
            "Discord: downloading an attachment",
        )
        .await
    }
}
