//! The execute half's input: a proposal that the gate allowed or a human approved. Only this
//! crate can make one ([`ApprovedCall::new`] is crate-private), and it holds the stored
//! `execute_args` — so no code path can execute raw model arguments, or arguments changed
//! after approval.

use super::proposal::Proposal;
use serde_json::Value;

/// Who let a call run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Approval {
    /// The gate allowed it without asking (its decision's source and reason code).
    Gate { source: String, reason_code: String },
    /// A person approved it.
    Human { by: String },
}

/// A proposal cleared to run.
#[derive(Clone, Debug)]
pub struct ApprovedCall {
    proposal: Proposal,
    approval: Approval,
}

impl ApprovedCall {
    pub(crate) fn new(proposal: Proposal, approval: Approval) -> Self {
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
    pub fn approval(&self) -> &Approval {
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
