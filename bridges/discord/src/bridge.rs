//! The Discord bridge: the [`Bridge`] the runtime calls. It runs serenity's gateway client
//! (REST lookups through the configured base, its ratelimiter off: ours reads the headers),
//! hands events in, and renders answers and cards as Discord messages. It decides nothing.

use crate::bot::Bot;
use crate::handler::Handler;
use crate::render::{self, answer_messages, components};
use crate::rest::Delivery;
use crate::shards_up::ShardsUp;
use serde_json::{Value, json};
use serenity::all::GatewayIntents;
use serenity::client::ClientBuilder;
use serenity::http::HttpBuilder;
use serenity::model::id::ApplicationId;
use std::sync::Arc;
use std::time::Duration;
use tollgate_surface::limits::{DISCORD_CUSTOM_ID, DISCORD_MESSAGE};
use tollgate_surface::{
    Bridge, BridgeError, BridgeErrorKind, BridgeFuture, CardOutcome, CardRef, CardView, ChatRef,
    CommandSpec, EventSender, FetchSink, Inbound, Limits, Platform, PressHandle, RemoteFile,
};

/// Discord shows "typing…" for ten seconds per call.
const TYPING_LASTS: Duration = Duration::from_secs(10);

/// Which shards this process runs: `first` to `last` included, of `total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shards {
    pub first: u32,
    pub last: u32,
    pub total: u32,
}

/// How to reach Discord and what the operator allowed.
#[derive(Clone)]
pub struct DiscordOptions {
    pub token: String,
    /// `https://discord.com`, or a test fake.
    pub api_url: String,
    /// The privileged Message Content intent is enabled for this bot.
    pub message_content: bool,
    pub shards: Option<Shards>,
    /// The largest attachment fetched.
    pub max_attachment_bytes: u64,
}

impl std::fmt::Debug for DiscordOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token.
        f.debug_struct("DiscordOptions")
            .field("api_url", &self.api_url)
            .field("message_content", &self.message_content)
            .field("shards", &self.shards)
            .field("max_attachment_bytes", &self.max_attachment_bytes)
            .finish_non_exhaustive()
    }
}

/// How often the shard runners' stages are read into [`ShardsUp`].
const SHARD_WATCH: Duration = Duration::from_secs(2);

/// Keeps `up` to what serenity's shard runners say: a shard is up while its runner exists and
/// is connected (a restarted shard has a new runner that is not, yet).
async fn watch_shards(manager: Arc<serenity::gateway::ShardManager>, up: Arc<ShardsUp>) {
    loop {
        tokio::time::sleep(SHARD_WATCH).await;
        let connected = manager
            .runners
            .lock()
            .await
            .iter()
            .filter(|(_, runner)| runner.stage == serenity::gateway::ConnectionStage::Connected)
            .map(|(id, _)| id.0)
            .collect();
        up.replace(connected);
    }
}

/// A connected Discord bot as a bridge.
pub struct DiscordBridge {
    bot: Arc<Bot>,
    options: DiscordOptions,
    shards_up: Arc<ShardsUp>,
}

impl DiscordBridge {
    /// Checks the token (the bot's user and application) at `options.api_url`.
    pub async fn connect(options: DiscordOptions) -> Result<Self, BridgeError> {
        let bot = Bot::connect(&options.token, &options.api_url, options.message_content).await?;
        let shards = options
            .shards
            .map_or(1, |s| s.last.saturating_sub(s.first) as usize + 1);
        Ok(DiscordBridge {
            bot: Arc::new(bot),
            options,
            shards_up: Arc::new(ShardsUp::new(shards)),
        })
    }

    /// The bot's user name (for the log).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.bot.name
    }

    /// The gateway intents in use: guilds (channels and threads), guild and direct messages,
    /// and Message Content only when the operator enabled it.
    #[must_use]
    pub fn intents(&self) -> GatewayIntents {
        let mut intents = GatewayIntents::GUILDS
            | GatewayIntents::GUILD_MESSAGES
            | GatewayIntents::DIRECT_MESSAGES;
        if self.options.message_content {
            intents |= GatewayIntents::MESSAGE_CONTENT;
        }
        intents
    }

    fn thread_intro(&self, opened_it: bool) -> String {
        if self.options.message_content && opened_it {
            "I answer here: everything written in this thread goes to me.".into()
        } else {
            format!(
                "I answer here. To continue, mention me (@{}) or reply to one of my messages — I cannot read the rest of this thread.",
                self.bot.name
            )
        }
    }
}

fn command_json(command: &CommandSpec) -> Value {
    let mut spec = json!({
        "name": command.name,
        "description": command.description,
        "type": 1,
        // Installed in guilds, used there and in the bot's DMs: never in other people's
        // private channels, where the bot could not answer in place.
        "integration_types": [0],
        "contexts": [0, 1],
    });
    if command.admin_only {
        // Hidden from members by default: a hint server admins can change. The runtime checks
        // tollgate's own admins on every use.
        spec["default_member_permissions"] = json!("0");
    }
    if let Some(args) = command.args {
        spec["options"] = json!([{
            "type": 3,
            "name": "args",
            "description": args.chars().take(100).collect::<String>(),
            "required": false,
        }]);
    }
    spec
}

impl Bridge for DiscordBridge {
    fn platform(&self) -> Platform {
        Platform::Discord
    }

    fn limits(&self) -> Limits {
        Limits {
            message_chars: DISCORD_MESSAGE,
            button_data: DISCORD_CUSTOM_ID,
            download_bytes: self.options.max_attachment_bytes,
            typing_lasts: TYPING_LASTS,
        }
    }

    fn connected(&self) -> bool {
        self.shards_up.all_up()
    }

    fn listen(&self, events: EventSender) -> BridgeFuture<'_, ()> {
        Box::pin(async move {
            // REST through the configured base: only with serenity's ratelimiter off does it
            // honour the proxy (its gateway lookup would otherwise go to discord.com).
            let http = HttpBuilder::new(&self.options.token)
                .proxy(self.options.api_url.trim_end_matches('/'))
                .ratelimiter_disabled(true)
                .application_id(ApplicationId::new(self.bot.application.max(1)))
                .build();
            let handler = Handler {
                bot: self.bot.clone(),
                events,
                shards_up: self.shards_up.clone(),
            };
            let mut client = ClientBuilder::new_with_http(http, self.intents())
                .event_handler(handler)
                .await
                .map_err(|e| {
                    BridgeError::new(BridgeErrorKind::Transient, format!("Discord: {e}"))
                })?;
            let watcher = tokio::spawn(watch_shards(
                client.shard_manager.clone(),
                self.shards_up.clone(),
            ));
            let started = match self.options.shards {
                // serenity counts the range's end in (it boots `end - start + 1` shards), so
                // `first..last` runs first to last included, as the config says.
                Some(s) => client.start_shard_range(s.first..s.last, s.total).await,
                None => client.start().await,
            };
            watcher.abort();
            self.shards_up.replace(std::collections::BTreeSet::new());
            started.map_err(|e| {
                BridgeError::new(BridgeErrorKind::Transient, format!("Discord gateway: {e}"))
            })
        })
    }

    fn send_answer<'a>(&'a self, chat: &'a ChatRef, markdown: &'a str) -> BridgeFuture<'a, ()> {
        Box::pin(async move {
            for part in answer_messages(markdown) {
                self.bot
                    .post(chat, json!({ "content": part }), Delivery::MustArrive)
                    .await?;
            }
            Ok(())
        })
    }

    fn send_notice<'a>(&'a self, chat: &'a ChatRef, text: &'a str) -> BridgeFuture<'a, CardRef> {
        Box::pin(async move {
            let content: String = text.chars().take(DISCORD_MESSAGE).collect();
            let message_id = self
                .bot
                .post(chat, json!({ "content": content }), Delivery::MustArrive)
                .await?;
            Ok(CardRef {
                chat: chat.clone(),
                message_id,
            })
        })
    }

    fn post_card<'a>(&'a self, chat: &'a ChatRef, card: &'a CardView) -> BridgeFuture<'a, CardRef> {
        Box::pin(async move {
            let rendered = render::card(card);
            let body = json!({ "content": rendered.content, "components": components(card.rows(), matches!(card, CardView::Approval(_)))? });
            // Cut details travel with their whole text in the same message: nobody sees a
            // card they could approve without the file that shows what it does.
            let message_id = match &rendered.full_details {
                Some(full) => {
                    self.bot
                        .post_with_file(chat, body, "approval-details.txt", full)
                        .await?
                }
                None => self.bot.post(chat, body, Delivery::MustArrive).await?,
            };
            Ok(CardRef {
                chat: chat.clone(),
                message_id,
            })
        })
    }

    fn settle_card<'a>(
        &'a self,
        at: &'a CardRef,
        card: &'a CardView,
        outcome: &'a CardOutcome,
    ) -> BridgeFuture<'a, ()> {
        Box::pin(async move {
            let body = json!({ "content": render::settled(card, outcome), "components": [] });
            self.bot
                .edit(&at.chat, at.message_id, body, Delivery::MustArrive)
                .await
        })
    }

    fn answer_press<'a>(
        &'a self,
        press: &'a PressHandle,
        text: &'a str,
        private: bool,
    ) -> BridgeFuture<'a, ()> {
        Box::pin(self.bot.follow_up(press, text, private))
    }

    fn typing<'a>(&'a self, chat: &'a ChatRef) -> BridgeFuture<'a, ()> {
        Box::pin(self.bot.typing(chat))
    }

    fn progress<'a>(
        &'a self,
        chat: &'a ChatRef,
        at: Option<&'a CardRef>,
        text: &'a str,
    ) -> BridgeFuture<'a, CardRef> {
        Box::pin(async move {
            let content: String = text.chars().take(DISCORD_MESSAGE).collect();
            let body = json!({ "content": content });
            match at {
                Some(at) => {
                    self.bot
                        .edit(&at.chat, at.message_id, body, Delivery::Droppable)
                        .await?;
                    Ok(at.clone())
                }
                None => {
                    let message_id = self.bot.post(chat, body, Delivery::Droppable).await?;
                    Ok(CardRef {
                        chat: chat.clone(),
                        message_id,
                    })
                }
            }
        })
    }

    fn fetch<'a>(
        &'a self,
        file: &'a RemoteFile,
        sink: &'a mut FetchSink,
        cap: u64,
    ) -> BridgeFuture<'a, u64> {
        Box::pin(async move {
            if file.bytes > cap {
                return Err(BridgeError::rejected(format!(
                    "the file is {} bytes; the limit is {cap}",
                    file.bytes
                )));
            }
            self.bot.download(&file.id, sink, cap).await
        })
    }

    fn open_thread<'a>(&'a self, message: &'a Inbound) -> BridgeFuture<'a, ()> {
        Box::pin(async move {
            let (Some(parent), Some(_)) = (message.chat.parent, message.chat.thread) else {
                return Ok(());
            };
            let ours = self
                .bot
                .open_thread(parent, message.message_id, &message.text)
                .await?;
            // The thread is open: a lost introduction loses nothing the user asked for. One
            // open already may be someone else's, where only a mention or reply reaches us.
            let intro = json!({ "content": self.thread_intro(ours) });
            if let Err(e) = self
                .bot
                .post(&message.chat, intro, Delivery::MustArrive)
                .await
            {
                tracing::warn!(target: "tollgate::serve", "Discord: introducing a thread: {e}");
            }
            Ok(())
        })
    }

    fn register_commands<'a>(&'a self, commands: &'a [CommandSpec]) -> BridgeFuture<'a, ()> {
        Box::pin(async move {
            let all: Vec<Value> = commands.iter().map(command_json).collect();
            self.bot.set_commands(&Value::Array(all)).await
        })
    }
}
