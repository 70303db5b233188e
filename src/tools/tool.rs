//! The tool trait: a name, a schema, and a `propose` half that resolves what a call would touch
//! without changing anything.

use super::proposal::Proposal;
use serde_json::Value;
use std::fmt;
use std::path::PathBuf;

/// What `propose` may look at.
#[derive(Clone, Debug)]
pub struct ProposeContext {
    /// The session's workspace (resolved): relative paths start here.
    pub workspace: PathBuf,
    /// Binaries whose approval key is a prefix (the agent's `prefix_binaries`).
    pub prefix_binaries: Vec<String>,
}

/// Why a call could not even be proposed: told to the model, and the run goes on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolError {
    /// The arguments do not fit the tool's schema.
    InvalidArguments(String),
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::InvalidArguments(message) => write!(f, "invalid arguments: {message}"),
        }
    }
}

impl std::error::Error for ToolError {}

/// A tool an agent can call.
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// The JSON schema of the arguments.
    fn parameters(&self) -> Value;
    /// Waits on a human (no timeout applies).
    fn long_running(&self) -> bool {
        false
    }
    /// Resolves what the call would touch; mutates nothing.
    fn propose(&self, args: &Value, ctx: &ProposeContext) -> Result<Proposal, ToolError>;
}
