//! A proposal: what a call would do, resolved before anything acts. The gate judges it; the
//! execute half (with the tools issue) runs only an approved proposal's stored arguments.

use crate::policy::declaration::{Declaration, McpOrigin};
use crate::policy::effect::Effect;
use crate::policy::resolve::GateCall;
use crate::policy::shell::ShellAnalysis;
use serde_json::Value;
use std::sync::Arc;

/// What one tool call would do.
#[derive(Clone, Debug)]
pub struct Proposal {
    /// The tool the model called.
    pub tool: String,
    /// One line for the card and the audit log.
    pub message: String,
    /// What would change (a diff, the command), if there is more to show.
    pub preview: Option<String>,
    pub effects: Vec<Effect>,
    pub declaration: Declaration,
    /// The hidden half that acts, and the arguments it will run with once approved.
    pub execute_tool: String,
    pub execute_args: Value,
    /// Choices for a human to pick from (a picker prompts in every mode).
    pub options: Option<Vec<String>>,
    /// The lexed and judged command, for `execute_command`.
    pub shell: Option<Arc<ShellAnalysis>>,
    /// The MCP server the tool comes from.
    pub mcp: Option<McpOrigin>,
}

impl Proposal {
    /// The gate's view of this proposal.
    #[must_use]
    pub fn gate_call(&self) -> GateCall<'_> {
        GateCall {
            tool: &self.tool,
            declaration: &self.declaration,
            effects: &self.effects,
            has_options: self.options.as_ref().is_some_and(|o| !o.is_empty()),
            shell: self.shell.as_deref(),
            mcp: self.mcp.as_ref(),
        }
    }
}
