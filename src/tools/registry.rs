//! The registry of tools by name, and an agent's toolset: its `tools` plus its MCP servers'
//! tools, minus `denied_tools`. A tool outside the toolset does not exist for that agent.

use super::builtin;
use super::tool::Tool;
use crate::config::AgentConfig;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Tools by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl ToolRegistry {
    /// A registry holding every built-in tool.
    #[must_use]
    pub fn builtin() -> Self {
        let mut registry = ToolRegistry::default();
        for tool in builtin::all() {
            registry.tools.insert(tool.name.to_string(), Arc::new(tool));
        }
        registry
    }

    /// Adds a tool; a name already taken is refused (a server cannot shadow a built-in).
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), super::tool::RegistryError> {
        let name = tool.name().to_string();
        if self.tools.contains_key(&name) {
            return Err(super::tool::RegistryError::Duplicate(name));
        }
        self.tools.insert(name, tool);
        Ok(())
    }

    #[must_use]
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }
}

/// A tool as offered to the model: its name, description and argument schema.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

impl ToolRegistry {
    /// The definitions the model is offered: exactly the toolset's tools that are registered.
    /// A tool outside the toolset does not exist for the agent, so it is never offered.
    #[must_use]
    pub fn definitions(&self, toolset: &Toolset) -> Vec<ToolDefinition> {
        toolset
            .iter()
            .filter_map(|name| self.get(name))
            .map(|tool| ToolDefinition {
                name: tool.name().to_string(),
                description: tool.description().to_string(),
                parameters: tool.parameters(),
            })
            .collect()
    }
}

/// The names of the tools one agent can call (shared: every session of an agent holds the
/// same set, and a clone is a reference count).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Toolset(Arc<BTreeSet<String>>);

impl Toolset {
    /// `tools` plus the MCP tools its servers listed, minus `denied_tools`.
    pub fn for_agent<'a>(
        agent: &AgentConfig,
        mcp_tools: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let mut names: BTreeSet<String> = agent.tools.iter().cloned().collect();
        names.extend(mcp_tools.into_iter().map(str::to_string));
        for denied in &agent.denied_tools {
            names.remove(denied);
        }
        Toolset(Arc::new(names))
    }

    #[must_use]
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }

    /// Exactly these tools.
    #[must_use]
    pub fn from_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        Toolset(Arc::new(names.into_iter().map(str::to_string).collect()))
    }

    /// The very same set (a clone of this one), without comparing names.
    #[must_use]
    pub fn same(&self, other: &Toolset) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
