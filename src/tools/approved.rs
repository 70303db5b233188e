//! The execute half's input: a proposal that the gate allowed or a human approved. Only this
//! crate can make one ([`ApprovedCall::new`] is crate-private), and it holds the stored
//! `execute_args` — so no code path can execute raw model arguments, or arguments changed
//! after approval.

use super::proposal::Proposal;
use crate::policy::{DecisionSource, ReasonCode};
use serde_json::{Value, json};
use std::fmt;

/// Who decided a call — let it run, or refused it. One type for every place a decision is
/// recorded (the approved call, the call's outcome, the audit), so no consumer matches on
/// strings such as "admin" or "runtime".
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Provenance {
    /// The gate, without asking: the step that answered, and why.
    Gate {
        source: DecisionSource,
        reason_code: ReasonCode,
    },
    /// A person who answered the card: an admin's press, or the console operator.
    Human { by: String },
    /// The runtime, where no person decided.
    Runtime(RuntimeReason),
}

/// Why the runtime decided in a person's place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuntimeReason {
    /// Nobody answered before the card's deadline.
    Timeout,
    /// Nobody could be asked (an unattended run, a subagent, a reminder).
    NoApprover,
}

impl RuntimeReason {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            RuntimeReason::Timeout => "timeout",
            RuntimeReason::NoApprover => "no-approver",
        }
    }
}

impl Provenance {
    /// The audit fields: `source` (`admin`, `runtime` or the gate's step), and `by` or
    /// `reason_code`.
    #[must_use]
    pub fn fields(&self) -> Value {
        match self {
            Provenance::Gate {
                source,
                reason_code,
            } => json!({"source": source, "reason_code": reason_code, "by": "gate"}),
            Provenance::Human { by } => json!({"source": "admin", "by": by}),
            Provenance::Runtime(reason) => {
                json!({"source": "runtime", "reason_code": reason.as_str()})
            }
        }
    }
}

impl fmt::Display for Provenance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Provenance::Gate {
                source,
                reason_code,
            } => write!(f, "{source} ({reason_code})"),
            Provenance::Human { by } => f.write_str(by),
            Provenance::Runtime(reason) => write!(f, "runtime ({})", reason.as_str()),
        }
    }
}

/// A proposal cleared to run.
#[derive(Clone, Debug)]
pub struct ApprovedCall {
    proposal: Proposal,
    approval: Provenance,
}

impl ApprovedCall {
    pub(crate) fn new(proposal: Proposal, approval: Provenance) -> Self {
        ApprovedCall { proposal, approval }
    }

    /// The arguments stored when the call was proposed: what was approved is what runs.
    #[must_use]
    pub fn execute_args(&self) -> &Value {
        &self.proposal.execute_args
    }

    #[must_use]
    pub fn proposal(&self) -> &Proposal {
        &self.proposal
    }

    #[must_use]
    pub fn approval(&self) -> &Provenance {
        &self.approval
    }
}

/// What a tool call produced, as the model will see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolOutput {
    pub text: String,
    pub is_error: bool,
    /// Part of the output was cut (a cap, a page).
    pub truncated: bool,
}

impl ToolOutput {
    #[must_use]
    pub fn ok(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            is_error: false,
            truncated: false,
        }
    }

    #[must_use]
    pub fn error(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            is_error: true,
            truncated: false,
        }
    }
}
