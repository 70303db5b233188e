//! Who may talk to an agent (design.md section 5). Strangers are ignored silently (a reply would
//! confirm the bot exists) and audited by the caller; bots, including this one, are ignored;
//! Telegram's anonymous group admins are not identified, so they are ignored too.

use crate::config::{AccessId, DiscordConfig, TelegramConfig};
use tollgate_surface::{ChatKind, ChatRef, Inbound, Platform, UserRef};

/// Telegram's stand-in sender for anonymous group admins, and for channel posts.
const TELEGRAM_ANONYMOUS_SENDERS: [i64; 2] = [1_087_968_824, 136_817_688];

/// Whether a message is admitted, and whether its sender is an admin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Admitted {
        admin: bool,
    },
    /// Ignored silently; the reason goes to the audit log.
    Ignored(&'static str),
}

fn listed(list: &[AccessId], id: i64) -> bool {
    list.iter()
        .any(|entry| *entry == AccessId::Anyone || *entry == AccessId::Id(id))
}

fn is_admin(admins: &[AccessId], id: i64) -> bool {
    // `"*"` is refused in `admins` by the config; check ids only, whatever the list holds.
    admins.contains(&AccessId::Id(id))
}

#[must_use]
pub fn telegram_access(config: &TelegramConfig, message: &Inbound) -> Access {
    let sender = message.sender.id;
    if message.sender.is_bot {
        return Access::Ignored("sender is a bot");
    }
    if TELEGRAM_ANONYMOUS_SENDERS.contains(&sender)
        || (message.chat.kind == ChatKind::Group && sender == message.chat.id)
    {
        return Access::Ignored("anonymous sender (posting as the group)");
    }
    let admin = is_admin(&config.admins, sender);
    let user_ok = admin || listed(&config.allowed_users, sender);
    match message.chat.kind {
        ChatKind::Private if user_ok => Access::Admitted { admin },
        ChatKind::Private => Access::Ignored("user not in allowed_users or admins"),
        ChatKind::Group if !listed(&config.allowed_chats, message.chat.id) => {
            Access::Ignored("chat not in allowed_chats")
        }
        ChatKind::Group if user_ok => Access::Admitted { admin },
        ChatKind::Group => Access::Ignored("user not in allowed_users or admins"),
    }
}

#[must_use]
pub fn discord_access(config: &DiscordConfig, message: &Inbound) -> Access {
    let sender = message.sender.id;
    if message.sender.is_bot {
        return Access::Ignored("sender is a bot");
    }
    let in_guild = message.chat.guild.is_some();
    let role_admin = in_guild
        && message
            .roles
            .iter()
            .any(|r| is_admin(&config.admin_roles, *r));
    let admin = is_admin(&config.admins, sender) || role_admin;
    let user_ok = admin || listed(&config.allowed_users, sender);
    if !in_guild {
        return if user_ok {
            Access::Admitted { admin }
        } else {
            Access::Ignored("user not in allowed_users or admins")
        };
    }
    // A thread counts as its parent channel.
    let channel = message.chat.parent.unwrap_or(message.chat.id);
    let place_ok = message
        .chat
        .guild
        .is_some_and(|g| listed(&config.allowed_guilds, g))
        || listed(&config.allowed_channels, channel);
    if !place_ok {
        return Access::Ignored("guild and channel not allowed");
    }
    if user_ok {
        Access::Admitted { admin }
    } else {
        Access::Ignored("user not in allowed_users, admins or admin_roles")
    }
}

/// Whether `user` may answer Telegram cards and use admin commands: listed in `admins` by id.
/// A bot never counts, whatever its id.
#[must_use]
pub fn telegram_admin(config: &TelegramConfig, user: &UserRef) -> bool {
    !user.is_bot && is_admin(&config.admins, user.id)
}

/// Whether `user` may answer Discord cards and use admin commands: listed in `admins`, or
/// holding an `admin_roles` role in the guild where the card is (never in DMs). A bot never
/// counts.
#[must_use]
pub fn discord_admin(
    config: &DiscordConfig,
    user: &UserRef,
    roles: &[i64],
    chat: &ChatRef,
) -> bool {
    if user.is_bot {
        return false;
    }
    let role_admin =
        chat.guild.is_some() && roles.iter().any(|r| is_admin(&config.admin_roles, *r));
    is_admin(&config.admins, user.id) || role_admin
}

/// Whether `user` may grant what holds for the whole agent (an "Always" for a command, a
/// companion binding): a Discord admin by role is an admin in that role's guild only, and such
/// a grant would hold in every guild and chat the agent serves, so it takes an admin listed
/// by id. A bot never counts.
#[must_use]
pub fn discord_agent_admin(config: &DiscordConfig, user: &UserRef) -> bool {
    !user.is_bot && is_admin(&config.admins, user.id)
}

/// The session of a chat for `user`: `telegram:<chat>[:<topic>]`, `discord:<channel-or-thread>`,
/// with `:<user>` in shared chats when sessions are per user.
#[must_use]
pub fn chat_session_key(chat: &ChatRef, user: i64, per_user_in_groups: bool) -> String {
    let mut key = match chat.platform {
        Platform::Telegram => match chat.thread {
            Some(topic) => format!("telegram:{}:{topic}", chat.id),
            None => format!("telegram:{}", chat.id),
        },
        Platform::Discord => format!("discord:{}", chat.thread.unwrap_or(chat.id)),
        Platform::Console => format!("console:{user}"),
    };
    if per_user_in_groups && chat.kind == ChatKind::Group {
        key.push_str(&format!(":{user}"));
    }
    key
}

/// In groups the bot answers only when mentioned or replied to (unless `require_mention` is
/// off), or in a conversation of its own it can read (a Discord thread it opened, with the
/// Message Content intent); in private chats, always.
#[must_use]
pub fn should_answer(require_mention: bool, message: &Inbound) -> bool {
    message.chat.kind == ChatKind::Private
        || !require_mention
        || message.mentioned
        || message.reply_to_bot
        || message.in_bot_thread
}

#[cfg(test)]
mod tests {
    use super::*;

    fn telegram(text: &str) -> TelegramConfig {
        let toml = format!(
            "[providers.p]\nkind = \"openai\"\nbase_url = \"http://x\"\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\n[telegram]\n{text}\n"
        );
        crate::config::load_with_env(None, Some(&toml), Default::default())
            .unwrap()
            .telegram
            .unwrap()
    }

    fn discord(text: &str) -> DiscordConfig {
        let toml = format!(
            "[providers.p]\nkind = \"openai\"\nbase_url = \"http://x\"\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\n[discord]\n{text}\n"
        );
        crate::config::load_with_env(None, Some(&toml), Default::default())
            .unwrap()
            .discord
            .unwrap()
    }

    fn message(platform: Platform, kind: ChatKind, chat: i64, sender: i64) -> Inbound {
        Inbound {
            chat: ChatRef {
                platform,
                id: chat,
                kind,
                thread: None,
                guild: None,
                parent: None,
            },
            sender: UserRef {
                id: sender,
                display: "x".into(),
                is_bot: false,
            },
            roles: vec![],
            message_id: 1,
            text: "hi".into(),
            mentioned: false,
            reply_to_bot: false,
            starts_thread: false,
            in_bot_thread: false,
            files: vec![],
        }
    }

    #[test]
    fn telegram_table() {
        use Access::*;
        let config = telegram("allowed_users = [10]\nallowed_chats = [-100]\nadmins = [1]");
        let table = [
            (ChatKind::Private, 10, 10, Admitted { admin: false }),
            (ChatKind::Private, 1, 1, Admitted { admin: true }),
            (
                ChatKind::Private,
                99,
                99,
                Ignored("user not in allowed_users or admins"),
            ),
            (ChatKind::Group, -100, 10, Admitted { admin: false }),
            (
                ChatKind::Group,
                -100,
                99,
                Ignored("user not in allowed_users or admins"),
            ),
            (
                ChatKind::Group,
                -200,
                1,
                Ignored("chat not in allowed_chats"),
            ),
            (
                ChatKind::Group,
                -100,
                -100,
                Ignored("anonymous sender (posting as the group)"),
            ),
            (
                ChatKind::Group,
                -100,
                1_087_968_824,
                Ignored("anonymous sender (posting as the group)"),
            ),
        ];
        for (kind, chat, sender, expected) in table {
            assert_eq!(
                telegram_access(&config, &message(Platform::Telegram, kind, chat, sender)),
                expected,
                "{kind:?} {chat} {sender}"
            );
        }
        let mut bot = message(Platform::Telegram, ChatKind::Private, 1, 1);
        bot.sender.is_bot = true;
        assert_eq!(telegram_access(&config, &bot), Ignored("sender is a bot"));
        let nobody = telegram("");
        assert!(
            matches!(
                telegram_access(
                    &nobody,
                    &message(Platform::Telegram, ChatKind::Private, 5, 5)
                ),
                Ignored(_)
            ),
            "empty lists admit nobody"
        );
        let anyone = telegram("allowed_users = [\"*\"]");
        assert_eq!(
            telegram_access(
                &anyone,
                &message(Platform::Telegram, ChatKind::Private, 5, 5)
            ),
            Admitted { admin: false }
        );
    }

    #[test]
    fn discord_table() {
        use Access::*;
        let config = discord(
            "allowed_users = [10]\nallowed_guilds = [500]\nallowed_channels = [700]\nadmins = [1]\nadmin_roles = [42]",
        );
        let mut in_guild = message(Platform::Discord, ChatKind::Group, 600, 10);
        in_guild.chat.guild = Some(500);
        assert_eq!(
            discord_access(&config, &in_guild),
            Admitted { admin: false }
        );
        let mut other_guild = message(Platform::Discord, ChatKind::Group, 700, 99);
        other_guild.chat.guild = Some(501);
        other_guild.roles = vec![42];
        assert_eq!(
            discord_access(&config, &other_guild),
            Admitted { admin: true },
            "allowed channel, admin role"
        );
        let mut thread = message(Platform::Discord, ChatKind::Group, 900, 10);
        thread.chat.guild = Some(501);
        thread.chat.parent = Some(700);
        assert_eq!(
            discord_access(&config, &thread),
            Admitted { admin: false },
            "a thread counts as its parent"
        );
        let mut stranger = in_guild.clone();
        stranger.sender.id = 99;
        assert!(matches!(discord_access(&config, &stranger), Ignored(_)));
        let mut dm_with_role = message(Platform::Discord, ChatKind::Private, 3, 99);
        dm_with_role.roles = vec![42];
        assert!(
            matches!(discord_access(&config, &dm_with_role), Ignored(_)),
            "roles count only in a guild"
        );
    }

    #[test]
    fn sessions_and_mentions() {
        let mut group = message(Platform::Telegram, ChatKind::Group, -100, 10);
        assert_eq!(
            chat_session_key(&group.chat, group.sender.id, false),
            "telegram:-100"
        );
        assert_eq!(
            chat_session_key(&group.chat, group.sender.id, true),
            "telegram:-100:10"
        );
        group.chat.thread = Some(7);
        assert_eq!(
            chat_session_key(&group.chat, group.sender.id, false),
            "telegram:-100:7"
        );
        assert!(!should_answer(true, &group));
        group.reply_to_bot = true;
        assert!(should_answer(true, &group));
        let private = message(Platform::Telegram, ChatKind::Private, 10, 10);
        assert!(should_answer(true, &private));
        assert_eq!(
            chat_session_key(&private.chat, private.sender.id, true),
            "telegram:10"
        );
        let mut thread = message(Platform::Discord, ChatKind::Group, 600, 10);
        thread.chat.thread = Some(601);
        assert_eq!(
            chat_session_key(&thread.chat, thread.sender.id, false),
            "discord:601"
        );
    }
}
