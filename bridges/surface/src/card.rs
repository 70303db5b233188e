//! Cards as data: what the runtime wants shown (an approval, a question, an "all N" row) and how
//! it ended. A bridge renders them in its platform's markup; the runtime never builds markup.
//! A button carries an opaque token that locates a record; it authorizes nothing (the runtime
//! checks the presser).

use crate::message::ChatRef;
use crate::text::Layout;
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

fn map_rows(rows: &[Vec<Button>], f: &impl Fn(&str, Layout) -> String) -> Vec<Vec<Button>> {
    rows.iter()
        .map(|row| {
            row.iter()
                .map(|b| Button {
                    label: f(&b.label, Layout::Line),
                    token: b.token.clone(),
                })
                .collect()
        })
        .collect()
}

impl ApprovalCard {
    /// The card with `f` applied to every text a person reads (not to button tokens).
    #[must_use]
    pub fn map_text(&self, f: &impl Fn(&str, Layout) -> String) -> ApprovalCard {
        ApprovalCard {
            agent: f(&self.agent, Layout::Line),
            requester: f(&self.requester, Layout::Line),
            tool: f(&self.tool, Layout::Line),
            tier: f(&self.tier, Layout::Line),
            reason: f(&self.reason, Layout::Lines),
            details: f(&self.details, Layout::Lines),
            rows: map_rows(&self.rows, f),
        }
    }
}

impl CardView {
    /// The card with `f` applied to every text a person reads (not to button tokens): the
    /// runtime's one place to guard what a card shows.
    #[must_use]
    pub fn map_text(&self, f: &impl Fn(&str, Layout) -> String) -> CardView {
        match self {
            CardView::Approval(card) => CardView::Approval(card.map_text(f)),
            CardView::Question {
                agent,
                question,
                rows,
            } => CardView::Question {
                agent: f(agent, Layout::Line),
                question: f(question, Layout::Lines),
                rows: map_rows(rows, f),
            },
            CardView::Bulk { tools, rows } => CardView::Bulk {
                tools: tools.iter().map(|t| f(t, Layout::Line)).collect(),
                rows: map_rows(rows, f),
            },
        }
    }

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

impl CardOutcome {
    /// The outcome with `f` applied to every text a person reads.
    #[must_use]
    pub fn map_text(&self, f: &impl Fn(&str, Layout) -> String) -> CardOutcome {
        let line = |s: &String| f(s, Layout::Line);
        match self {
            CardOutcome::Approved { by } => CardOutcome::Approved { by: line(by) },
            CardOutcome::Denied { by } => CardOutcome::Denied { by: line(by) },
            CardOutcome::Redecided { decision } => CardOutcome::Redecided {
                decision: f(decision, Layout::Lines),
            },
            CardOutcome::Answered { answer } => CardOutcome::Answered {
                answer: f(answer, Layout::Lines),
            },
            CardOutcome::AllAnswered {
                approved,
                answered,
                of,
                by,
            } => CardOutcome::AllAnswered {
                approved: *approved,
                answered: *answered,
                of: *of,
                by: line(by),
            },
            CardOutcome::TimedOut => CardOutcome::TimedOut,
            CardOutcome::Expired => CardOutcome::Expired,
            CardOutcome::Replaced => CardOutcome::Replaced,
        }
    }
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
