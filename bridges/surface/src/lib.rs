//! `tollgate-surface`: the data a chat bridge and the tollgate runtime exchange, and the one
//! trait a bridge implements. Data and one trait only: no platform code and no policy. A bridge
//! translates platform events into [`Inbound`] and [`Press`], and renders [`Outbound`]; it never
//! decides who may do what (the runtime does, from the config).

mod card;
mod message;

pub use card::{ApprovalCard, Button, CardOutcome, CardRef, Press};
pub use message::{Attachment, ChatKind, ChatRef, Inbound, Outbound, Platform, UserRef};

use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// Platform limits a renderer must respect (checked before sending, never discovered by a 400).
pub mod limits {
    /// Telegram: characters of one message's text.
    pub const TELEGRAM_MESSAGE: usize = 4096;
    /// Telegram: bytes of a button's `callback_data`.
    pub const TELEGRAM_CALLBACK_DATA: usize = 64;
    /// Telegram: characters of card details before the full text goes out as a file.
    pub const TELEGRAM_CARD_DETAILS: usize = 2000;
    /// Discord: characters of one message's content.
    pub const DISCORD_MESSAGE: usize = 2000;
    /// Discord: characters of a component's `custom_id`.
    pub const DISCORD_CUSTOM_ID: usize = 100;
    /// Discord: buttons in one action row.
    pub const DISCORD_BUTTONS_PER_ROW: usize = 5;
}

/// A bridge failed to deliver something.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeError {
    pub message: String,
    /// The platform asked us to wait this long before retrying (Telegram's `retry_after`,
    /// Discord's rate-limit reset).
    pub retry_after_secs: Option<u64>,
}

impl fmt::Display for BridgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.retry_after_secs {
            Some(s) => write!(f, "{} (retry after {s}s)", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for BridgeError {}

/// What a bridge returns for a sent message: where it landed, so it can be edited later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub chat: ChatRef,
    pub message_id: i64,
}

/// A boxed future, so bridges can be held as `dyn Bridge`.
pub type BridgeFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, BridgeError>> + Send + 'a>>;

/// A chat platform as the runtime sees it: it renders what the runtime sends.
pub trait Bridge: Send + Sync {
    fn platform(&self) -> Platform;
    /// Renders one outbound item (splitting text to the platform's limit, attaching overflow
    /// as a file, honouring rate limits).
    fn send(&self, outbound: Outbound) -> BridgeFuture<'_, Vec<Sent>>;
}
