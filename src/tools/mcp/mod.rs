//! MCP tools as the gate sees them: named `mcp_<server>_<tool>` (cut to the providers'
//! 64-character `[A-Za-z0-9_-]` limit with a short hash when needed), high-risk unless their
//! server is trusted, governed by their full name as policy key. Arguments go to the server
//! untouched: its schema is the judge.

use super::approved::{ApprovedCall, ToolOutput};
use super::exec::ExecContext;
pub mod client;

use super::proposal::Proposal;
use super::tool::{ProposeContext, Tool, ToolError, ToolFuture};
use crate::config::McpServerConfig;
use crate::policy::declaration::{Declaration, McpOrigin};
use crate::policy::tier::Tier;
use client::ServerSlot;
use serde_json::Value;
use std::sync::Weak;

/// The providers' limit on tool names.
pub const MAX_TOOL_NAME: usize = 64;

/// The name the model sees for a server's tool.
#[must_use]
pub fn mcp_tool_name(server: &str, tool: &str) -> String {
    let clean: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let full = format!("mcp_{server}_{clean}");
    if full.len() <= MAX_TOOL_NAME && clean == tool {
        return full;
    }
    // Cut, and add a hash of the original name so two long (or cleaned) names stay distinct.
    let hash = format!("{:08x}", fnv1a(format!("{server}\0{tool}").as_bytes()));
    let keep = MAX_TOOL_NAME - hash.len() - 1;
    let cut: String = full.chars().take(keep).collect();
    format!("{cut}_{hash}")
}

fn fnv1a(bytes: &[u8]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for b in bytes {
        hash ^= u32::from(*b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

/// The declaration the config gives a server's tool.
#[must_use]
pub fn mcp_declaration(server_config: &McpServerConfig, name: &str, tool: &str) -> Declaration {
    let tier = if server_config.trusted {
        server_config
            .tool_tiers
            .get(tool)
            .or(server_config.tier.as_ref())
            .copied()
            .unwrap_or(Tier::HighRisk)
    } else {
        Tier::HighRisk
    };
    Declaration {
        policy_key: Some(name.to_string()),
        ..Declaration::tier(tier)
    }
}

/// A tool an MCP server offers.
#[derive(Clone)]
pub struct McpTool {
    pub name: String,
    pub server: String,
    /// The server's own name for the tool.
    pub remote_name: String,
    pub description: String,
    pub input_schema: Value,
    pub declaration: Declaration,
    pub trusted: bool,
    /// The server that serves it; absent for a hypothetical tool (`explain`).
    server_slot: Option<Weak<ServerSlot>>,
}

impl McpTool {
    #[must_use]
    pub fn new(
        server: &str,
        server_config: &McpServerConfig,
        remote_name: &str,
        description: &str,
        input_schema: Value,
    ) -> Self {
        let name = mcp_tool_name(server, remote_name);
        McpTool {
            declaration: mcp_declaration(server_config, &name, remote_name),
            name,
            server: server.to_string(),
            remote_name: remote_name.to_string(),
            description: description.to_string(),
            input_schema,
            trusted: server_config.trusted,
            server_slot: None,
        }
    }

    /// The tool as served by one of the agent's servers.
    #[must_use]
    pub fn with_server(mut self, slot: Weak<ServerSlot>) -> Self {
        self.server_slot = Some(slot);
        self
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.input_schema.clone()
    }

    fn execute<'a>(&'a self, call: &'a ApprovedCall, _ctx: &'a ExecContext) -> ToolFuture<'a> {
        Box::pin(async move {
            match self.server_slot.as_ref().and_then(Weak::upgrade) {
                Some(slot) => slot.call(&self.remote_name, call.execute_args()).await,
                None => ToolOutput::error(format!(
                    "MCP server `{}` is not running; `{}` did not run",
                    self.server, self.remote_name
                )),
            }
        })
    }

    fn propose(&self, args: &Value, _ctx: &ProposeContext) -> Result<Proposal, ToolError> {
        if !(args.is_object() || args.is_null()) {
            return Err(ToolError::InvalidArguments(
                "MCP tool arguments must be a JSON object".into(),
            ));
        }
        Ok(Proposal {
            tool: self.name.clone(),
            message: format!(
                "call `{}` on MCP server `{}`",
                self.remote_name, self.server
            ),
            preview: Some(args.to_string()),
            effects: Vec::new(),
            declaration: self.declaration.clone(),
            execute_tool: self.name.clone(),
            execute_args: args.clone(),
            options: None,
            shell: None,
            mcp: Some(McpOrigin {
                server: self.server.clone(),
                trusted: self.trusted,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_the_provider_limit() {
        assert_eq!(mcp_tool_name("fs", "read_file"), "mcp_fs_read_file");
        let long = "x".repeat(100);
        let a = mcp_tool_name("fs", &long);
        let b = mcp_tool_name("fs", &format!("{long}y"));
        assert_eq!(a.len(), MAX_TOOL_NAME);
        assert_ne!(a, b);
        let dotted = mcp_tool_name("fs", "read.file");
        assert!(dotted.starts_with("mcp_fs_read_file_"));
        assert!(
            dotted
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
    }
}
