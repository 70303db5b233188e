//! Messages in and out of a chat.

use serde::{Deserialize, Serialize};

/// Where a conversation happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Platform {
    Telegram,
    Discord,
    /// The local terminal: the trusted operator.
    Console,
}

impl Platform {
    /// The prefix of session keys (`telegram:<chat>`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Telegram => "telegram",
            Platform::Discord => "discord",
            Platform::Console => "console",
        }
    }
}

/// A person (or bot) on a platform, by the platform's numeric id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserRef {
    pub id: i64,
    /// For display only: never for access decisions (names change hands).
    pub display: String,
    pub is_bot: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChatKind {
    /// A one-to-one chat with the bot (Telegram private chat, Discord DM).
    Private,
    /// A group, supergroup or guild channel.
    Group,
}

/// A chat, and the thread or forum topic inside it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatRef {
    pub platform: Platform,
    pub id: i64,
    pub kind: ChatKind,
    /// Telegram forum topic, or Discord thread.
    pub thread: Option<i64>,
    /// Discord guild, for role checks and `allowed_guilds`.
    pub guild: Option<i64>,
    /// Discord: the channel a thread belongs to (a thread counts as its parent for access).
    pub parent: Option<i64>,
}

/// A file that came with a message, already downloaded by the bridge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// Sanitized file name.
    pub name: String,
    pub path: std::path::PathBuf,
    pub bytes: u64,
}

/// A message a bridge received.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inbound {
    pub chat: ChatRef,
    pub sender: UserRef,
    /// The sender's role ids in the guild (Discord), for `admin_roles`.
    pub roles: Vec<i64>,
    pub message_id: i64,
    pub text: String,
    /// The bot was @-mentioned.
    pub mentioned: bool,
    /// The message replies to one of the bot's.
    pub reply_to_bot: bool,
    pub attachments: Vec<Attachment>,
}

/// Something the runtime asks a bridge to show.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Outbound {
    /// A final answer (split at the platform limit by the bridge).
    Text {
        chat: ChatRef,
        text: String,
    },
    /// The "working…" message, edited in place; droppable under rate limits.
    Progress {
        chat: ChatRef,
        message_id: Option<i64>,
        text: String,
    },
    Typing {
        chat: ChatRef,
    },
    /// An approval card.
    Card {
        chat: ChatRef,
        card: crate::ApprovalCard,
    },
    /// Replace a card's text and remove its buttons (answered, timed out, re-decided).
    CardResolved {
        card: crate::CardRef,
        outcome: crate::CardOutcome,
    },
}
