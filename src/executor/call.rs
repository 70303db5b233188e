//! A tool call as the model wrote it, and how it ended.

use crate::tools::{Provenance, ToolOutput};

/// Arguments larger than this are refused before parsing: no tool needs them, and a model that
/// sends them is looping or confused.
pub const MAX_ARGUMENTS: usize = 1024 * 1024;

/// A tool call as the model wrote it.
#[derive(Clone, Debug)]
pub struct ToolCallRequest {
    pub id: String,
    pub name: String,
    /// The raw JSON text of the arguments (it may not parse).
    pub arguments: String,
    /// The run the call belongs to, when a run engine runs it: its events carry the id.
    pub run: Option<String>,
}

impl ToolCallRequest {
    /// What this call asks for, as a digest of its tool and arguments exactly as the model
    /// sent them: an approval given for one call is never taken as the answer to another
    /// that happens to carry the same id.
    #[must_use]
    pub fn fingerprint(&self) -> String {
        use sha2::Digest;
        let mut digest = sha2::Sha256::new();
        digest.update(self.name.as_bytes());
        digest.update([0]);
        digest.update(self.arguments.as_bytes());
        digest
            .finalize()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }

    /// This call's result.
    #[must_use]
    pub fn result(&self, output: ToolOutput, outcome: CallOutcome) -> ToolCallResult {
        ToolCallResult {
            id: self.id.clone(),
            name: self.name.clone(),
            output,
            outcome,
        }
    }
}

/// How a call ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallOutcome {
    Executed,
    /// The gate, a person or the runtime (nobody answered in time) said no.
    Denied(Provenance),
    /// Never reached a decision (not in the toolset, bad arguments) or nobody could answer.
    Refused,
    TimedOut,
    Cancelled,
}

/// A call's result, paired with its call.
#[derive(Clone, Debug)]
pub struct ToolCallResult {
    pub id: String,
    pub name: String,
    pub output: ToolOutput,
    pub outcome: CallOutcome,
}
