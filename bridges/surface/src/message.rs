//! Chats, users and messages, as every platform is seen through the seam.

use serde::{Deserialize, Serialize};

/// Where a conversation happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChatKind {
    /// A one-to-one chat with the bot (Telegram private chat, Discord DM).
    Private,
    /// A group, supergroup or guild channel.
    Group,
}

/// A chat, and the thread or forum topic inside it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
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

impl ChatRef {
    /// A private chat with `user` (a Telegram private chat's id is its user's id).
    #[must_use]
    pub fn private(platform: Platform, user: i64) -> Self {
        ChatRef {
            platform,
            id: user,
            kind: ChatKind::Private,
            thread: None,
            guild: None,
            parent: None,
        }
    }
}

/// A file a message carries, not downloaded yet: the runtime says where it goes
/// ([`crate::Bridge::fetch`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteFile {
    /// The platform's id of the file (opaque to the runtime).
    pub id: String,
    /// The name the sender gave (unsanitized), or one made from the kind of file.
    pub name: String,
    /// As the platform reported it: the runtime refuses big files before fetching them.
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
    /// The text, with the bot's own mention taken out and a command addressed to this bot
    /// written without its address (`/stop@bot` is `/stop`).
    pub text: String,
    /// The bot was @-mentioned.
    pub mentioned: bool,
    /// The message replies to one of the bot's.
    pub reply_to_bot: bool,
    pub files: Vec<RemoteFile>,
    /// Discord: a mention in a channel starts a conversation in a thread of its own, which does
    /// not exist yet — `chat` already names it (a thread's id is the id of the message it starts
    /// from). The runtime opens it ([`crate::Bridge::open_thread`]) only once the message is
    /// admitted: a stranger opens nothing.
    #[serde(default)]
    pub starts_thread: bool,
    /// The message is in a conversation the bot started, where the platform lets the bot read
    /// every message (Discord: a thread it opened, with the Message Content intent on): it
    /// continues the conversation without a mention.
    #[serde(default)]
    pub in_bot_thread: bool,
}
