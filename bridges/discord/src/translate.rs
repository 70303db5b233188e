//! Gateway events in the surface's terms: a message (with the files it carries, not fetched),
//! a button press, a slash command. Nothing here decides who may do what; it only says where a
//! message was (a DM, a channel, a thread and its parent) and whether it addressed the bot.

use crate::channels::ChannelInfo;
use serenity::model::application::{
    CommandDataOptionValue, CommandInteraction, ComponentInteraction, ComponentInteractionDataKind,
};
use serenity::model::channel::Message;
use serenity::model::id::{GuildId, RoleId};
use serenity::model::user::User;
use tollgate_surface::{
    CardRef, ChatKind, ChatRef, CommandInvocation, Inbound, Platform, Press, PressHandle,
    RemoteFile, UserRef,
};

/// The bot as translation needs it.
#[derive(Clone, Copy, Debug)]
pub struct Me {
    pub id: u64,
    /// Every message in a thread the bot opened continues it (the operator enabled the
    /// privileged Message Content intent).
    pub message_content: bool,
}

fn id(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn user(author: &User) -> UserRef {
    UserRef {
        id: id(author.id.get()),
        display: author
            .global_name
            .clone()
            .unwrap_or_else(|| author.name.clone()),
        is_bot: author.bot,
    }
}

fn roles(roles: &[RoleId]) -> Vec<i64> {
    roles.iter().map(|r| id(r.get())).collect()
}

/// Where something happened: a DM is named by its user (as on Telegram, where a private chat's
/// id is its user's); a thread by its parent channel and itself.
#[must_use]
pub fn chat(guild: Option<GuildId>, channel: u64, sender: u64, info: ChannelInfo) -> ChatRef {
    let Some(guild) = guild else {
        return ChatRef::private(Platform::Discord, id(sender));
    };
    match info.parent {
        Some(parent) => ChatRef {
            platform: Platform::Discord,
            id: id(parent),
            kind: ChatKind::Group,
            thread: Some(id(channel)),
            guild: Some(id(guild.get())),
            parent: Some(id(parent)),
        },
        None => ChatRef {
            platform: Platform::Discord,
            id: id(channel),
            kind: ChatKind::Group,
            thread: None,
            guild: Some(id(guild.get())),
            parent: None,
        },
    }
}

/// `content` without the bot's mentions (`<@id>`, `<@!id>`).
fn without_own_mention(content: &str, bot: u64) -> String {
    content
        .replace(&format!("<@{bot}>"), "")
        .replace(&format!("<@!{bot}>"), "")
        .trim()
        .to_string()
}

/// A message as the runtime sees it; `None` for the bot's own messages and for what carries
/// neither text nor files. `info` says where it was posted (for a guild message).
#[must_use]
pub fn message(message: &Message, me: Me, info: ChannelInfo) -> Option<Inbound> {
    if message.author.id.get() == me.id {
        return None;
    }
    let files: Vec<RemoteFile> = message
        .attachments
        .iter()
        .map(|a| RemoteFile {
            // The CDN address: fetched without the bot's token.
            id: a.url.clone(),
            name: a.filename.clone(),
            bytes: u64::from(a.size),
        })
        .collect();
    let text = without_own_mention(&message.content, me.id);
    if text.is_empty() && files.is_empty() {
        return None;
    }
    // Discord lists whom a message mentions: an id, never a substring of the text.
    let mentioned = message.mentions.iter().any(|u| u.id.get() == me.id);
    let reply_to_bot = message
        .referenced_message
        .as_ref()
        .is_some_and(|r| r.author.id.get() == me.id);
    let mut chat = chat(
        message.guild_id,
        message.channel_id.get(),
        message.author.id.get(),
        info,
    );
    // A mention in a channel opens a thread from the message (its id is the message's).
    let starts_thread = chat.guild.is_some()
        && chat.thread.is_none()
        && info.can_open_threads
        && (mentioned || reply_to_bot);
    if starts_thread {
        chat.parent = Some(chat.id);
        chat.thread = Some(id(message.id.get()));
    }
    Some(Inbound {
        chat,
        sender: user(&message.author),
        roles: message
            .member
            .as_ref()
            .map(|m| roles(&m.roles))
            .unwrap_or_default(),
        message_id: id(message.id.get()),
        text,
        mentioned,
        reply_to_bot,
        files,
        starts_thread,
        in_bot_thread: me.message_content && info.owned,
    })
}

/// What a press or a command is answered through: the interaction's id and token.
#[must_use]
pub fn handle(interaction_id: u64, token: &str) -> PressHandle {
    PressHandle(format!("{interaction_id}:{token}"))
}

/// A button press (or a choice from a select menu).
#[must_use]
pub fn press(interaction: &ComponentInteraction, info: ChannelInfo) -> Press {
    let chat = chat(
        interaction.guild_id,
        interaction.channel_id.get(),
        interaction.user.id.get(),
        info,
    );
    let token = match &interaction.data.kind {
        ComponentInteractionDataKind::StringSelect { values } => {
            values.first().cloned().unwrap_or_default()
        }
        _ => interaction.data.custom_id.clone(),
    };
    Press {
        token,
        presser: user(&interaction.user),
        message: Some(CardRef {
            chat: chat.clone(),
            message_id: id(interaction.message.id.get()),
        }),
        chat,
        roles: interaction
            .member
            .as_ref()
            .map(|m| roles(&m.roles))
            .unwrap_or_default(),
        handle: handle(interaction.id.get(), &interaction.token),
    }
}

/// A slash command, its options written after its name as a text command would have them.
#[must_use]
pub fn command(interaction: &CommandInteraction, info: ChannelInfo) -> CommandInvocation {
    let args: Vec<String> = interaction
        .data
        .options
        .iter()
        .filter_map(|o| match &o.value {
            CommandDataOptionValue::String(s) => Some(s.clone()),
            CommandDataOptionValue::Integer(n) => Some(n.to_string()),
            CommandDataOptionValue::Boolean(b) => Some(b.to_string()),
            _ => None,
        })
        .collect();
    CommandInvocation {
        chat: chat(
            interaction.guild_id,
            interaction.channel_id.get(),
            interaction.user.id.get(),
            info,
        ),
        sender: user(&interaction.user),
        roles: interaction
            .member
            .as_ref()
            .map(|m| roles(&m.roles))
            .unwrap_or_default(),
        name: interaction.data.name.clone(),
        args: args.join(" "),
        handle: handle(interaction.id.get(), &interaction.token),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::{Value, json};

    const BOT: u64 = 4000;

    fn user(id: u64) -> Value {
        json!({"id": id.to_string(), "username": format!("u{id}"), "discriminator": "0", "global_name": null, "avatar": null, "bot": false})
    }

    fn discord_message(
        channel: u64,
        guild: Option<u64>,
        author: u64,
        content: &str,
        mentions: &[u64],
    ) -> Message {
        let mut m = json!({
            "id": "900", "channel_id": channel.to_string(), "author": user(author), "content": content,
            "timestamp": "2026-12-01T00:00:00.000000+00:00", "edited_timestamp": null, "tts": false,
            "mention_everyone": false, "mentions": mentions.iter().map(|m| user(*m)).collect::<Vec<_>>(),
            "mention_roles": [], "attachments": [], "embeds": [], "pinned": false, "type": 0,
        });
        if let Some(g) = guild {
            m["guild_id"] = json!(g.to_string());
            m["member"] = json!({"roles": ["55"], "joined_at": "2026-12-01T00:00:00.000000+00:00", "deaf": false, "mute": false, "flags": 0});
        }
        serde_json::from_value(m).unwrap()
    }

    fn me(message_content: bool) -> Me {
        Me {
            id: BOT,
            message_content,
        }
    }

    const TEXT_CHANNEL: ChannelInfo = ChannelInfo {
        parent: None,
        owned: false,
        can_open_threads: true,
    };

    #[test]
    fn a_dm_is_named_by_its_user_and_carries_no_roles() {
        let got = message(
            &discord_message(31, None, 7, "hello", &[]),
            me(false),
            ChannelInfo::default(),
        )
        .unwrap();
        assert_eq!(got.chat, ChatRef::private(Platform::Discord, 7));
        assert!(got.roles.is_empty() && !got.starts_thread && !got.mentioned);
        // The bot's own messages are not events.
        assert!(
            message(
                &discord_message(31, None, BOT, "mine", &[]),
                me(false),
                ChannelInfo::default()
            )
            .is_none()
        );
    }

    #[test]
    fn a_mention_in_a_channel_starts_a_thread_named_by_the_message() {
        let m = discord_message(600, Some(10), 7, "<@4000> plan it <@!4000>", &[BOT]);
        let got = message(&m, me(false), TEXT_CHANNEL).unwrap();
        assert!(got.mentioned && got.starts_thread);
        assert_eq!(got.text, "plan it");
        assert_eq!(
            (got.chat.id, got.chat.thread, got.chat.parent),
            (600, Some(900), Some(600))
        );
        assert_eq!(got.roles, vec![55]);
        // Another user whose id starts with the bot's is neither a mention nor stripped.
        let other = discord_message(600, Some(10), 7, "<@40001> look", &[40001]);
        let got = message(&other, me(false), TEXT_CHANNEL).unwrap();
        assert!(!got.mentioned && !got.starts_thread);
        assert_eq!(got.text, "<@40001> look");
        // The text "<@4000>" without Discord listing the mention is not one either.
        let typed = discord_message(600, Some(10), 7, "<@4000> typed", &[]);
        assert!(!message(&typed, me(false), TEXT_CHANNEL).unwrap().mentioned);
    }

    #[test]
    fn a_press_carries_the_chosen_value_roles_and_its_handle() {
        let base = |data: Value| -> ComponentInteraction {
            serde_json::from_value(json!({
                "id": "77", "application_id": "1", "type": 3, "channel_id": "700", "guild_id": "10",
                "token": "tok", "version": 1, "locale": "en-US", "entitlements": [],
                "attachment_size_limit": 1024, "authorizing_integration_owners": {},
                "member": {"user": user(8), "roles": ["55"], "joined_at": "2026-12-01T00:00:00.000000+00:00", "deaf": false, "mute": false, "flags": 0},
                "data": data,
                "message": {
                    "id": "123", "channel_id": "700", "author": user(BOT), "content": "card",
                    "timestamp": "2026-12-01T00:00:00.000000+00:00", "edited_timestamp": null,
                    "tts": false, "mention_everyone": false, "mentions": [], "mention_roles": [],
                    "attachments": [], "embeds": [], "pinned": false, "type": 0,
                },
            }))
            .unwrap()
        };
        let thread = ChannelInfo {
            parent: Some(600),
            owned: true,
            can_open_threads: false,
        };
        let button = press(
            &base(json!({"custom_id": "t1x:approve", "component_type": 2})),
            thread,
        );
        assert_eq!(button.token, "t1x:approve");
        assert_eq!(button.presser.id, 8);
        assert_eq!(button.roles, vec![55]);
        assert_eq!(button.handle, PressHandle("77:tok".into()));
        assert_eq!(button.message.as_ref().unwrap().message_id, 123);
        assert_eq!(button.chat.thread, Some(700));
        // A choice from a select menu is the chosen option's value, not the menu's id.
        let select =
            base(json!({"custom_id": "select", "component_type": 3, "values": ["t1x:opt3"]}));
        assert_eq!(press(&select, thread).token, "t1x:opt3");
    }

    #[test]
    fn a_thread_counts_as_its_parent_and_reads_everything_only_when_owned_with_content() {
        let owned = ChannelInfo {
            parent: Some(600),
            owned: true,
            can_open_threads: false,
        };
        let m = discord_message(700, Some(10), 7, "go on", &[]);
        let got = message(&m, me(true), owned).unwrap();
        assert_eq!(
            (got.chat.id, got.chat.thread, got.chat.parent),
            (600, Some(700), Some(600))
        );
        assert!(got.in_bot_thread && !got.starts_thread);
        assert!(!message(&m, me(false), owned).unwrap().in_bot_thread);
        let foreign = ChannelInfo {
            owned: false,
            ..owned
        };
        assert!(!message(&m, me(true), foreign).unwrap().in_bot_thread);
        // A mention inside a thread never opens another.
        let mention = discord_message(700, Some(10), 7, "<@4000> here", &[BOT]);
        assert!(!message(&mention, me(false), foreign).unwrap().starts_thread);
    }
}
