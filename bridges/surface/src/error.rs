//! What went wrong delivering something, by kind: the runtime decides what to do from the kind
//! (wait, fall back, ignore, give up), never from the text, which is for the log.

use std::fmt;
use std::time::Duration;

/// Why a platform refused or failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BridgeErrorKind {
    /// Rate limited: try again after this long (droppable sends are skipped instead).
    RateLimited { after: Duration },
    /// The user cannot be messaged (never opened a chat with the bot, blocked it, left).
    Unreachable,
    /// An edit that changes nothing (the message already says this).
    NotModified,
    /// The network or the platform's own servers failed: the same request may work later.
    Transient,
    /// The platform answered that the request is wrong; sending it again will not help.
    Rejected,
}

/// A bridge failed to deliver something.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BridgeError {
    pub kind: BridgeErrorKind,
    /// For the log (may name the platform's endpoint; never shown to a chat).
    pub message: String,
}

impl BridgeError {
    #[must_use]
    pub fn new(kind: BridgeErrorKind, message: impl Into<String>) -> Self {
        BridgeError {
            kind,
            message: message.into(),
        }
    }

    /// A request the platform would refuse again.
    #[must_use]
    pub fn rejected(message: impl Into<String>) -> Self {
        BridgeError::new(BridgeErrorKind::Rejected, message)
    }

    /// How long the platform asked to wait, when it did.
    #[must_use]
    pub fn retry_after(&self) -> Option<Duration> {
        match self.kind {
            BridgeErrorKind::RateLimited { after } => Some(after),
            _ => None,
        }
    }
}

impl fmt::Display for BridgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            BridgeErrorKind::RateLimited { after } => {
                write!(f, "{} (retry after {}s)", self.message, after.as_secs())
            }
            _ => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for BridgeError {}
