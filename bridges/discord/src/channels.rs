//! What the bridge knows about channels: whether one is a thread, its parent channel (a thread
//! counts as its parent for access) and whether the bot opened it; and each user's DM channel.
//! Learned from the gateway (`GUILD_CREATE`, `THREAD_CREATE`) and, for a channel not seen yet,
//! looked up once over REST. Bounded: a bot in many guilds must not grow these without end.

use crate::rest::{Delivery, Rest};
use serenity::http::{LightMethod, Route};
use serenity::model::channel::{ChannelType, GuildChannel};
use serenity::model::id::ChannelId;
use std::collections::HashMap;
use std::sync::Mutex;
use tollgate_surface::BridgeError;

/// Channels (and DM channels) remembered at most; past it the map starts again from empty (a
/// lookup costs one REST call).
const KEPT: usize = 20_000;

/// A channel as access and sessions need it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChannelInfo {
    /// For a thread: the channel it belongs to. `None` for a channel that is not a thread.
    pub parent: Option<u64>,
    /// A thread this bot opened.
    pub owned: bool,
    /// A channel where a mention can open a thread (a text or announcement channel).
    pub can_open_threads: bool,
}

impl ChannelInfo {
    /// What `channel` is, as seen by the bot `bot`.
    #[must_use]
    pub fn of(channel: &GuildChannel, bot: u64) -> Self {
        let thread = matches!(
            channel.kind,
            ChannelType::PublicThread | ChannelType::PrivateThread | ChannelType::NewsThread
        );
        ChannelInfo {
            parent: if thread {
                channel.parent_id.map(ChannelId::get)
            } else {
                None
            },
            owned: thread && channel.owner_id.is_some_and(|o| o.get() == bot),
            can_open_threads: matches!(channel.kind, ChannelType::Text | ChannelType::News),
        }
    }
}

/// The bridge's memory of channels.
#[derive(Default)]
pub struct Channels {
    known: Mutex<HashMap<u64, ChannelInfo>>,
    /// User id → the id of the DM channel with them.
    direct: Mutex<HashMap<u64, u64>>,
}

fn remember<K: std::hash::Hash + Eq, V>(map: &Mutex<HashMap<K, V>>, key: K, value: V) {
    let mut map = map
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if map.len() >= KEPT {
        map.clear();
    }
    map.insert(key, value);
}

impl Channels {
    pub fn learn(&self, channel: &GuildChannel, bot: u64) {
        remember(&self.known, channel.id.get(), ChannelInfo::of(channel, bot));
    }

    /// What `channel` is: remembered, or looked up over REST (and remembered).
    pub async fn info(
        &self,
        rest: &Rest,
        channel: u64,
        bot: u64,
    ) -> Result<ChannelInfo, BridgeError> {
        let known = self
            .known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&channel)
            .copied();
        if let Some(info) = known {
            return Ok(info);
        }
        let fetched: GuildChannel = rest
            .json(
                LightMethod::Get,
                Route::Channel {
                    channel_id: ChannelId::new(channel.max(1)),
                },
                None,
                Delivery::MustArrive,
            )
            .await?;
        let info = ChannelInfo::of(&fetched, bot);
        remember(&self.known, channel, info);
        Ok(info)
    }

    /// Notes that the bot opened thread `thread` in `parent`.
    pub fn opened(&self, thread: u64, parent: u64) {
        remember(
            &self.known,
            thread,
            ChannelInfo {
                parent: Some(parent),
                owned: true,
                can_open_threads: false,
            },
        );
    }

    /// Notes `user`'s DM channel.
    pub fn learn_direct(&self, user: u64, channel: u64) {
        remember(&self.direct, user, channel);
    }

    /// The DM channel with `user`: remembered, or opened over REST.
    pub async fn direct(&self, rest: &Rest, user: u64) -> Result<u64, BridgeError> {
        let known = self
            .direct
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&user)
            .copied();
        if let Some(channel) = known {
            return Ok(channel);
        }
        let body = serde_json::json!({ "recipient_id": user.to_string() });
        let opened: serde_json::Value = rest
            .json(
                LightMethod::Post,
                Route::UserMeDmChannels,
                Some(&body),
                Delivery::MustArrive,
            )
            .await?;
        let channel = opened["id"]
            .as_str()
            .and_then(|id| id.parse().ok())
            .ok_or_else(|| BridgeError::rejected("Discord: opening a DM gave no channel id"))?;
        remember(&self.direct, user, channel);
        Ok(channel)
    }
}
