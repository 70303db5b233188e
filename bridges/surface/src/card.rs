//! Cards as data: what the runtime wants shown (an approval, a question, an "all N" row) and how
//! it ended. A bridge renders them in its platform's markup; the runtime never builds markup.
//! A button carries an opaque token that locates a record; it authorizes nothing (the runtime
//! checks the presser).

use crate::message::ChatRef;
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

/// Everything a card can show.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum CardView {
    /// A call waiting for an admin.
    Approval(ApprovalCard),
    /// `ask_user_question`: the requester answers by button or by replying.
    Question {
        agent: String,
        question: String,
        rows: Vec<Vec<Button>>,
    },
    /// "Approve all N / Deny all N" for the cards waiting in a chat, each shown in full.
    Bulk {
        /// The tool of each card the row answers, in order.
        tools: Vec<String>,
        rows: Vec<Vec<Button>>,
    },
}

impl CardView {
    /// The buttons the card shows.
    #[must_use]
    pub fn rows(&self) -> &[Vec<Button>] {
        match self {
            CardView::Approval(card) => &card.rows,
            CardView::Question { rows, .. } | CardView::Bulk { rows, .. } => rows,
        }
    }
}

/// Where a card (or any message) was posted, to edit it later.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    /// A question's answer.
    Answered {
        answer: String,
    },
    /// An "all N" row whose set of cards changed: it no longer answers anything.
    Replaced,
    /// An "all N" row that was pressed.
    AllAnswered {
        approved: bool,
        answered: usize,
        of: usize,
        by: String,
    },
}
