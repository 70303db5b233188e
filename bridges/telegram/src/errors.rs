//! Bot API failures as the seam's kinds, from teloxide's typed errors: the runtime acts on the
//! kind (wait, fall back to the chat, ignore a repeated edit), never on Telegram's text.

use std::time::Duration;
use teloxide::{ApiError, RequestError};
use tollgate_surface::{BridgeError, BridgeErrorKind};

/// The kind of a failed request.
#[must_use]
pub fn kind_of(e: &RequestError) -> BridgeErrorKind {
    match e {
        RequestError::RetryAfter(after) => BridgeErrorKind::RateLimited {
            after: Duration::from_secs(u64::from(after.seconds())),
        },
        RequestError::Network(_) | RequestError::Io(_) => BridgeErrorKind::Transient,
        RequestError::Api(api) => match api {
            ApiError::BotBlocked
            | ApiError::CantInitiateConversation
            | ApiError::CantTalkWithBots
            | ApiError::ChatNotFound
            | ApiError::UserNotFound
            | ApiError::UserDeactivated
            | ApiError::BotKicked
            | ApiError::BotKickedFromSupergroup => BridgeErrorKind::Unreachable,
            ApiError::MessageNotModified => BridgeErrorKind::NotModified,
            // A 403 always means this chat or user is closed to the bot; teloxide knows some
            // texts by older wordings ("Unauthorized: bot can't initiate…"), Telegram now says
            // "Forbidden: …".
            ApiError::Unknown(text) if text.starts_with("Forbidden:") => {
                BridgeErrorKind::Unreachable
            }
            ApiError::Unknown(text) if is_server_error(text) => BridgeErrorKind::Transient,
            _ => BridgeErrorKind::Rejected,
        },
        _ => BridgeErrorKind::Rejected,
    }
}

/// Telegram's own server errors (5xx) arrive as unknown API errors with their status text.
fn is_server_error(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    [
        "internal server error",
        "bad gateway",
        "gateway timeout",
        "service unavailable",
    ]
    .iter()
    .any(|s| text.contains(s))
}

/// A failed request as a bridge error.
#[must_use]
pub fn bridge_error(e: &RequestError) -> BridgeError {
    BridgeError::new(kind_of(e), format!("Telegram: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_come_from_the_typed_errors() {
        assert_eq!(
            kind_of(&RequestError::Api(ApiError::CantInitiateConversation)),
            BridgeErrorKind::Unreachable
        );
        assert_eq!(
            kind_of(&RequestError::Api(ApiError::Unknown(
                "Forbidden: bot can't initiate conversation with a user".into()
            ))),
            BridgeErrorKind::Unreachable
        );
        assert_eq!(
            kind_of(&RequestError::Api(ApiError::BotBlocked)),
            BridgeErrorKind::Unreachable
        );
        assert_eq!(
            kind_of(&RequestError::Api(ApiError::MessageNotModified)),
            BridgeErrorKind::NotModified
        );
        assert_eq!(
            kind_of(&RequestError::Api(ApiError::Unknown("Bad Gateway".into()))),
            BridgeErrorKind::Transient
        );
        assert_eq!(
            kind_of(&RequestError::Api(ApiError::Unknown(
                "Bad Request: x".into()
            ))),
            BridgeErrorKind::Rejected
        );
    }
}
