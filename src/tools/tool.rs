//! The tool trait: a name, a schema, and a `propose` half that resolves what a call would touch
//! without changing anything.

use super::approved::{ApprovedCall, ToolOutput};
use super::exec::ExecContext;
use super::proposal::Proposal;
use crate::policy::effect::Effect;
use crate::policy::mode::SandboxPolicy;
use crate::policy::sandbox::{Roots, check_effects};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What `propose` may look at.
#[derive(Clone, Debug)]
pub struct ProposeContext {
    /// The session's workspace (resolved): relative paths start here.
    pub workspace: PathBuf,
    /// Binaries whose approval key is a prefix (the agent's `prefix_binaries`).
    pub prefix_binaries: Vec<String>,
    /// The roots and sandbox the gate will judge with: a preview reads only what the call
    /// itself could read (a diff must never show a file the agent may not see).
    pub roots: Roots,
    pub sandbox: SandboxPolicy,
    /// The agent's companion models (`analyze_media` offers a picker where none is bound).
    pub companions: CompanionView,
}

/// What an agent's companions are, for a proposal: role → companion bound (the config's, then
/// those bound on a picker card), and the choices a picker may offer per role.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompanionView {
    pub bound: std::collections::BTreeMap<String, String>,
    pub choices: std::collections::BTreeMap<String, Vec<String>>,
}

impl CompanionView {
    /// `agent`'s companions: its config's bindings over `stored` ones, and its choices.
    #[must_use]
    pub fn for_agent(
        agent: &crate::config::AgentConfig,
        stored: std::collections::BTreeMap<String, String>,
    ) -> Self {
        let mut bound = stored;
        bound.extend(agent.companions.clone());
        CompanionView {
            bound,
            choices: agent.companion_choices.clone(),
        }
    }
}

impl ProposeContext {
    /// A context for proposals in tests: workspace `root`, writable, no other roots.
    #[cfg(test)]
    pub(crate) fn for_tests(root: &Path) -> Self {
        ProposeContext {
            workspace: root.to_path_buf(),
            prefix_binaries: vec![],
            roots: Roots {
                workspace: root.to_path_buf(),
                writable: vec![root.to_path_buf()],
                readable: vec![],
                protected: vec![],
            },
            sandbox: SandboxPolicy::WorkspaceWrite,
            companions: CompanionView::default(),
        }
    }

    /// Whether the sandbox would let this call read `path`.
    #[must_use]
    pub fn may_read(&self, path: &Path) -> bool {
        check_effects(
            &[Effect::Read(path.to_path_buf())],
            self.sandbox,
            &self.roots,
            &crate::policy::sandbox::Network::NONE,
            "",
        )
        .is_none()
    }
}

/// Why a call could not be proposed, or failed: told to the model, and the run goes on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not fit the tool's schema.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The tool ran and could not do what was asked (the message says why, for the model).
    #[error("{0}")]
    Failed(String),
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError::Failed(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        ToolError::Failed(message.to_string())
    }
}

impl From<crate::store::StoreError> for ToolError {
    fn from(e: crate::store::StoreError) -> Self {
        ToolError::Failed(e.to_string())
    }
}

/// Why a tool could not be registered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("a tool named `{0}` is already registered")]
    Duplicate(String),
}

/// A boxed future, so tools can be held as `dyn Tool`.
pub type ToolFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = ToolOutput> + Send + 'a>>;

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
    /// Its propose half blocks (reads a file and diffs it for the card): the executor runs it
    /// stepping aside from the async worker, which every re-decision calls again.
    fn proposes_slowly(&self) -> bool {
        false
    }
    /// Resolves what the call would touch; mutates nothing.
    fn propose(&self, args: &Value, ctx: &ProposeContext) -> Result<Proposal, ToolError>;
    /// The execute half: runs an approved call with its stored arguments.
    fn execute<'a>(&'a self, call: &'a ApprovedCall, ctx: &'a ExecContext) -> ToolFuture<'a>;
}
