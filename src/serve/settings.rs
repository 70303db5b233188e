//! The part of a bridge's config section the runtime needs, read the same way for every
//! platform: the agent, who is admitted and who is an admin (by the platform's own rules: ids on
//! Telegram; ids or guild roles on Discord), where cards go, and the pacing knobs.

use crate::config::{AccessId, ApprovalsTo, Config, DiscordConfig, TelegramConfig};
use crate::router::{
    Access, chat_session_key, discord_access, discord_admin, discord_agent_admin, telegram_access,
    telegram_admin,
};
use tollgate_surface::{ChatRef, Inbound, Platform, UserRef};

/// Who is admitted and who is an admin, by the platform's rules.
#[derive(Clone, Debug)]
enum Rules {
    Telegram(TelegramConfig),
    Discord(DiscordConfig),
}

/// A bridge's settings.
#[derive(Clone, Debug)]
pub struct BridgeSettings {
    pub platform: Platform,
    /// The agent that answers on this bridge.
    pub agent: String,
    pub approvals_to: ApprovalsTo,
    pub require_mention: bool,
    pub group_sessions_per_user: bool,
    pub rate_limit_per_minute: u32,
    pub queue_cap: usize,
    pub progress_interval_secs: u64,
    pub typing: bool,
    pub idle_session_secs: u64,
    rules: Rules,
}

impl BridgeSettings {
    /// The settings of `platform`'s section; an error names what is missing.
    pub fn for_platform(
        config: &Config,
        platform: Platform,
    ) -> Result<Self, super::error::ServeError> {
        Self::read(config, platform).map_err(super::error::ServeError::Settings)
    }

    fn read(config: &Config, platform: Platform) -> Result<Self, String> {
        let agent = |named: &Option<String>, section: &str| -> Result<String, String> {
            match named {
                Some(name) if config.agents.contains_key(name) => Ok(name.clone()),
                Some(name) => Err(format!("[{section}] agent `{name}` is not configured")),
                None if config.agents.len() == 1 => {
                    Ok(config.agents.keys().next().cloned().unwrap_or_default())
                }
                None => Err(format!(
                    "several agents are configured: set `agent` under [{section}]"
                )),
            }
        };
        // `[telegram]` and `[discord]` spell their common keys alike: read them one way.
        macro_rules! from_section {
            ($section:expr, $name:literal, $rules:path) => {{
                let s = $section
                    .as_ref()
                    .ok_or(concat!("there is no [", $name, "] section"))?;
                Ok(BridgeSettings {
                    platform,
                    agent: agent(&s.agent, $name)?,
                    approvals_to: s.approvals_to,
                    require_mention: s.require_mention,
                    group_sessions_per_user: s.group_sessions_per_user,
                    rate_limit_per_minute: s.rate_limit_per_minute,
                    queue_cap: s.queue_cap,
                    progress_interval_secs: s.progress_interval_secs,
                    typing: s.typing,
                    idle_session_secs: s.idle_session_secs,
                    rules: $rules(s.clone()),
                })
            }};
        }
        match platform {
            Platform::Telegram => from_section!(config.telegram, "telegram", Rules::Telegram),
            Platform::Discord => from_section!(config.discord, "discord", Rules::Discord),
            Platform::Console => Err("the console is not a chat bridge".into()),
        }
    }

    /// Whether a message is admitted, and whether its sender is an admin.
    #[must_use]
    pub fn access(&self, message: &Inbound) -> Access {
        match &self.rules {
            Rules::Telegram(t) => telegram_access(t, message),
            Rules::Discord(d) => discord_access(d, message),
        }
    }

    /// The session of `user`'s messages in `chat`.
    #[must_use]
    pub fn session_key(&self, chat: &ChatRef, user: i64) -> String {
        chat_session_key(chat, user, self.group_sessions_per_user)
    }

    /// Whether `user` (with `roles`, in `chat`) may answer cards and use admin commands.
    #[must_use]
    pub fn is_admin(&self, user: &UserRef, roles: &[i64], chat: &ChatRef) -> bool {
        match &self.rules {
            Rules::Telegram(t) => telegram_admin(t, user),
            Rules::Discord(d) => discord_admin(d, user, roles, chat),
        }
    }

    /// Whether `user` may grant what holds for the whole agent: on Discord only an admin
    /// listed by id (a role makes an admin of one guild).
    #[must_use]
    pub fn is_agent_admin(&self, user: &UserRef) -> bool {
        match &self.rules {
            Rules::Telegram(t) => telegram_admin(t, user),
            Rules::Discord(d) => discord_agent_admin(d, user),
        }
    }

    /// The admins' private chats, for `approvals_to = "admins"`.
    #[must_use]
    pub fn admin_chats(&self) -> Vec<ChatRef> {
        let admins = match &self.rules {
            Rules::Telegram(t) => &t.admins,
            Rules::Discord(d) => &d.admins,
        };
        admins
            .iter()
            .filter_map(|a| match a {
                AccessId::Id(id) => Some(ChatRef::private(self.platform, *id)),
                AccessId::Anyone => None,
            })
            .collect()
    }
}
