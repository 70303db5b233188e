//! A button press, as a platform reported it.

use crate::card::CardRef;
use crate::message::{ChatRef, UserRef};
use serde::{Deserialize, Serialize};

/// What a bridge needs to answer a press (Telegram's callback query id; a Discord interaction's
/// id and token). Opaque to the runtime, which only hands it back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PressHandle(pub String);

/// A press. Every press is handed in — even one without data or without its message — so every
/// press gets an answer and no button keeps spinning.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Press {
    /// The button's data (empty when the platform sent none).
    pub token: String,
    pub presser: UserRef,
    pub chat: ChatRef,
    /// The presser's roles in the guild where the card is (Discord), for `admin_roles`.
    pub roles: Vec<i64>,
    /// The message whose button was pressed, when the platform says.
    pub message: Option<CardRef>,
    pub handle: PressHandle,
}
