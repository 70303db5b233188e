//! Gateway and REST objects as Discord sends them — complete enough for serenity, which drops a
//! payload it cannot read with only a warning (`tests/suite/discord/fake.rs` reads each one back
//! through serenity's own types, so a fake that drifts fails there, not as a silent hang).

use serde_json::{Value, json};

/// The fake bot's user and application ids.
pub const BOT: u64 = 4_000;
pub const APPLICATION: u64 = 4_001;

pub const TIMESTAMP: &str = "2026-12-01T00:00:00.000000+00:00";

pub fn user(id: u64, name: &str, bot: bool) -> Value {
    json!({
        "id": id.to_string(), "username": name, "discriminator": "0", "global_name": name,
        "avatar": null, "bot": bot,
    })
}

pub fn member(user_id: u64, name: &str, roles: &[u64]) -> Value {
    json!({
        "user": user(user_id, name, false),
        "roles": roles.iter().map(|r| r.to_string()).collect::<Vec<_>>(),
        "joined_at": TIMESTAMP, "deaf": false, "mute": false, "flags": 0,
    })
}

/// Where a message is: a DM channel, or a channel (or thread) of a guild.
#[derive(Clone, Copy, Debug)]
pub struct Place {
    pub channel: u64,
    pub guild: Option<u64>,
}

impl Place {
    pub fn dm(channel: u64) -> Place {
        Place {
            channel,
            guild: None,
        }
    }

    pub fn guild(guild: u64, channel: u64) -> Place {
        Place {
            channel,
            guild: Some(guild),
        }
    }
}

/// A message from `author` (id, name, roles) at `place`; `mentions` the users it mentions.
pub fn message(
    id: u64,
    place: Place,
    author: (u64, &str, &[u64]),
    content: &str,
    mentions: &[u64],
) -> Value {
    let (author_id, name, roles) = author;
    let mut message = json!({
        "id": id.to_string(), "channel_id": place.channel.to_string(),
        "author": user(author_id, name, false), "content": content, "timestamp": TIMESTAMP,
        "edited_timestamp": null, "tts": false, "mention_everyone": false,
        "mentions": mentions.iter().map(|m| user(*m, if *m == BOT { "tollbot" } else { "someone" }, *m == BOT)).collect::<Vec<_>>(),
        "mention_roles": [], "attachments": [], "embeds": [], "pinned": false, "type": 0,
        "flags": 0, "components": [],
    });
    if let Some(guild) = place.guild {
        message["guild_id"] = json!(guild.to_string());
        let mut partial = member(author_id, name, roles);
        partial.as_object_mut().unwrap().remove("user");
        message["member"] = partial;
    }
    message
}

/// A message of the bot itself (what a card or an answer is, as an interaction carries it).
pub fn bot_message(id: u64, channel: u64, content: &str) -> Value {
    json!({
        "id": id.to_string(), "channel_id": channel.to_string(), "author": user(BOT, "tollbot", true),
        "content": content, "timestamp": TIMESTAMP, "edited_timestamp": null, "tts": false,
        "mention_everyone": false, "mentions": [], "mention_roles": [], "attachments": [],
        "embeds": [], "pinned": false, "type": 0, "flags": 0, "components": [],
    })
}

pub fn attachment(id: u64, name: &str, size: u64, url: &str) -> Value {
    json!({"id": id.to_string(), "filename": name, "size": size, "url": url, "proxy_url": url})
}

fn interaction_base(kind: u8, id: u64, place: Place, presser: (u64, &str, &[u64])) -> Value {
    let (user_id, name, roles) = presser;
    let mut base = json!({
        "id": id.to_string(), "application_id": APPLICATION.to_string(), "type": kind,
        "channel_id": place.channel.to_string(), "token": format!("itoken-{id}"), "version": 1,
        "locale": "en-US", "entitlements": [], "attachment_size_limit": 26_214_400,
        "authorizing_integration_owners": {},
    });
    match place.guild {
        Some(guild) => {
            base["guild_id"] = json!(guild.to_string());
            base["member"] = member(user_id, name, roles);
        }
        None => base["user"] = user(user_id, name, false),
    }
    base
}

/// A press of the button `custom_id` on message `card` (in `place`).
pub fn button_press(
    id: u64,
    place: Place,
    presser: (u64, &str, &[u64]),
    card: u64,
    custom_id: &str,
) -> Value {
    let mut press = interaction_base(3, id, place, presser);
    press["data"] = json!({"custom_id": custom_id, "component_type": 2});
    press["message"] = bot_message(card, place.channel, "card");
    press
}

/// A choice `value` from the select menu on message `card`.
pub fn select_press(
    id: u64,
    place: Place,
    presser: (u64, &str, &[u64]),
    card: u64,
    value: &str,
) -> Value {
    let mut press = interaction_base(3, id, place, presser);
    press["data"] = json!({"custom_id": "select", "component_type": 3, "values": [value]});
    press["message"] = bot_message(card, place.channel, "card");
    press
}

/// A slash command `/name` with an optional `args` option.
pub fn slash_command(
    id: u64,
    place: Place,
    user: (u64, &str, &[u64]),
    name: &str,
    args: Option<&str>,
) -> Value {
    let mut command = interaction_base(2, id, place, user);
    let options = match args {
        Some(a) => json!([{"name": "args", "type": 3, "value": a}]),
        None => json!([]),
    };
    command["data"] = json!({"id": "77", "name": name, "type": 1, "options": options});
    command
}

/// A channel as `GET /channels/{id}` answers: `kind` 0 text, 11 public thread, 15 forum.
pub fn channel(id: u64, kind: u8, guild: u64, parent: Option<u64>, owner: Option<u64>) -> Value {
    let mut channel = json!({
        "id": id.to_string(), "type": kind, "guild_id": guild.to_string(), "name": format!("c{id}"),
        "position": 0, "permission_overwrites": [], "nsfw": false,
    });
    if let Some(parent) = parent {
        channel["parent_id"] = json!(parent.to_string());
    }
    if let Some(owner) = owner {
        channel["owner_id"] = json!(owner.to_string());
        channel["thread_metadata"] = json!({"archived": false, "auto_archive_duration": 1440, "archive_timestamp": TIMESTAMP, "locked": false});
    }
    channel
}

pub fn ready(session: &str, resume_url: &str) -> Value {
    json!({
        "v": 10, "user": user(BOT, "tollbot", true), "guilds": [], "session_id": session,
        "resume_gateway_url": resume_url, "shard": [0, 1],
        "application": {"id": APPLICATION.to_string(), "flags": 0},
    })
}
