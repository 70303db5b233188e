//! Approval cards: what an admin sees and presses. A button carries an opaque token that
//! locates a pending record; it authorizes nothing (the runtime checks the presser).

use crate::message::{ChatRef, UserRef};
use serde::{Deserialize, Serialize};

/// One button: its label and its token (`callback_data` / `custom_id`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Button {
    pub label: String,
    pub token: String,
}

/// A card asking for a decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalCard {
    pub agent: String,
    pub requester: String,
    pub tool: String,
    pub tier: String,
    pub reason: String,
    /// What would happen: the command, or a unified diff. The bridge cuts it to fit and
    /// attaches the whole text as a file when it does.
    pub details: String,
    /// Rows of buttons: Approve · Deny; then "Always …" or picker options where offered.
    pub rows: Vec<Vec<Button>>,
}

/// Where a card was posted, to edit it later.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardRef {
    pub chat: ChatRef,
    pub message_id: i64,
}

/// How a card ended, shown in place of its buttons.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum CardOutcome {
    Approved {
        by: String,
    },
    Denied {
        by: String,
    },
    /// Nobody answered in time: the runtime denied it.
    TimedOut,
    /// The gate decided it again (an "always", `/mode`, `/sandbox`) without a press.
    Redecided {
        decision: String,
    },
    /// The run is gone.
    Expired,
}

/// A button press, as the platform reported it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Press {
    pub token: String,
    pub presser: UserRef,
    pub chat: ChatRef,
    /// The presser's roles in the guild where the card is (Discord).
    pub roles: Vec<i64>,
}
