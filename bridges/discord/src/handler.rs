//! The gateway's events, as serenity delivers them, handed to the runtime: messages, button
//! presses and slash commands. Every interaction is acknowledged at once (Discord allows three
//! seconds) — a press with a deferred update, a command with a deferred private answer — and
//! answered later through its token. What the channels are is learned on the way.

use crate::bot::{Bot, EPHEMERAL};
use crate::channels::ChannelInfo;
use crate::rest::Delivery;
use crate::shards_up::ShardsUp;
use crate::translate;
use serde_json::json;
use serenity::all::{
    ConnectionStage, Context, EventHandler, GuildChannel, Interaction, InteractionContext, Message,
    Ready, ShardStageUpdateEvent,
};
use serenity::http::{LightMethod, Route};
use serenity::model::guild::Guild;
use serenity::model::id::{InteractionId, UserId};
use std::sync::Arc;
use tollgate_surface::{BridgeEvent, EventSender};

/// Discord's interaction callback types.
const DEFERRED_CHANNEL_MESSAGE: u8 = 5;
const DEFERRED_UPDATE_MESSAGE: u8 = 6;

pub struct Handler {
    pub bot: Arc<Bot>,
    pub events: EventSender,
    pub shards_up: Arc<ShardsUp>,
}

impl Handler {
    /// Where a guild message or interaction happened; `None` (and a log line) when Discord
    /// would not say — such an event is dropped rather than guessed at.
    async fn info(&self, guild: bool, channel: u64) -> Option<ChannelInfo> {
        if !guild {
            return Some(ChannelInfo::default());
        }
        match self
            .bot
            .channels
            .info(&self.bot.rest, channel, self.bot.id)
            .await
        {
            Ok(info) => Some(info),
            Err(e) => {
                tracing::warn!(target: "tollgate::serve", "Discord: looking up channel {channel}: {e}");
                None
            }
        }
    }

    async fn acknowledge(&self, id: InteractionId, token: &str, body: serde_json::Value) {
        let route = Route::InteractionResponse {
            interaction_id: id,
            token,
        };
        if let Err(e) = self
            .bot
            .rest
            .call(LightMethod::Post, route, Some(&body), Delivery::Acknowledge)
            .await
        {
            tracing::warn!(target: "tollgate::serve", "Discord: acknowledging an interaction: {e}");
        }
    }

    async fn hand_in(&self, event: BridgeEvent) {
        // serenity runs each event on a task of its own, so a full channel makes that task
        // wait (nothing is dropped) but not the gateway, and two events close together may be
        // handed in out of order. A closed channel means the runtime is stopping.
        let _ = self.events.send(event).await;
    }
}

#[serenity::async_trait]
impl EventHandler for Handler {
    async fn ready(&self, ctx: Context, _ready: Ready) {
        self.shards_up.set(ctx.shard_id.0, true);
    }

    async fn shard_stage_update(&self, _ctx: Context, event: ShardStageUpdateEvent) {
        self.shards_up
            .set(event.shard_id.0, event.new == ConnectionStage::Connected);
    }

    async fn guild_create(&self, _ctx: Context, guild: Guild, _is_new: Option<bool>) {
        for channel in guild.channels.values().chain(guild.threads.iter()) {
            self.bot.channels.learn(channel, self.bot.id);
        }
    }

    async fn thread_create(&self, _ctx: Context, thread: GuildChannel) {
        self.bot.channels.learn(&thread, self.bot.id);
    }

    async fn message(&self, _ctx: Context, message: Message) {
        if message.author.id == UserId::new(self.bot.id.max(1)) {
            return;
        }
        let guild = message.guild_id.is_some();
        if !guild {
            self.bot
                .channels
                .learn_direct(message.author.id.get(), message.channel_id.get());
        }
        let Some(info) = self.info(guild, message.channel_id.get()).await else {
            return;
        };
        if let Some(inbound) = translate::message(&message, self.bot.me(), info) {
            self.hand_in(BridgeEvent::Message(inbound)).await;
        }
    }

    async fn interaction_create(&self, _ctx: Context, interaction: Interaction) {
        match interaction {
            Interaction::Component(press) => {
                self.acknowledge(
                    press.id,
                    &press.token,
                    json!({ "type": DEFERRED_UPDATE_MESSAGE }),
                )
                .await;
                let guild = press.guild_id.is_some();
                if let Some(info) = self.info(guild, press.channel_id.get()).await {
                    self.hand_in(BridgeEvent::Press(translate::press(&press, info)))
                        .await;
                }
            }
            Interaction::Command(command) => {
                let body =
                    json!({ "type": DEFERRED_CHANNEL_MESSAGE, "data": { "flags": EPHEMERAL } });
                self.acknowledge(command.id, &command.token, body).await;
                let guild = command.guild_id.is_some();
                // A command in someone else's private channel has no guild either: it is not
                // the user's DM with the bot, and nothing is answered there but privately.
                let private_channel = command.context == Some(InteractionContext::PrivateChannel);
                if private_channel {
                    return;
                }
                if !guild {
                    self.bot
                        .channels
                        .learn_direct(command.user.id.get(), command.channel_id.get());
                }
                if let Some(info) = self.info(guild, command.channel_id.get()).await {
                    self.hand_in(BridgeEvent::Command(translate::command(&command, info)))
                        .await;
                }
            }
            _ => {}
        }
    }
}
