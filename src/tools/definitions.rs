//! The tools offered to the model, serialized once: each provider writes them into every
//! request in its own wire format, and building that JSON for a dozen schemas on every model
//! call was work repeated for nothing. A cache per agent hands out the same definitions (and
//! their JSON) to every request while the registry and toolset stay the same.

use super::registry::{ToolDefinition, ToolRegistry, Toolset};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex, OnceLock};

/// Tool definitions and their JSON in each provider's format, made on first use.
#[derive(Debug, Default)]
pub struct ToolDefinitions {
    list: Vec<ToolDefinition>,
    openai: OnceLock<String>,
    anthropic: OnceLock<String>,
}

impl ToolDefinitions {
    #[must_use]
    pub fn new(list: Vec<ToolDefinition>) -> Self {
        ToolDefinitions {
            list,
            ..ToolDefinitions::default()
        }
    }

    /// No tools (the classifier, a summary).
    #[must_use]
    pub fn none() -> Arc<Self> {
        Arc::new(ToolDefinitions::default())
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    #[must_use]
    pub fn list(&self) -> &[ToolDefinition] {
        &self.list
    }

    /// The `tools` array of an OpenAI-compatible request.
    pub fn openai_json(&self) -> &str {
        self.openai.get_or_init(|| {
            let tools: Vec<Value> = self
                .list
                .iter()
                .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
                .collect();
            Value::Array(tools).to_string()
        })
    }

    /// The `tools` array of an Anthropic Messages request.
    pub fn anthropic_json(&self) -> &str {
        self.anthropic.get_or_init(|| {
            let tools: Vec<Value> = self
                .list
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
                .collect();
            Value::Array(tools).to_string()
        })
    }
}

/// `body` (a JSON object) as text, with `"tools": tools` (JSON text) added when there are any.
#[must_use]
pub fn body_with_tools(body: &Value, tools: Option<&str>) -> String {
    object_with_tools(body.to_string(), tools)
}

/// `object` (a JSON object's text) with `"tools": tools` (JSON text) added when there are any.
#[must_use]
pub fn object_with_tools(object: String, tools: Option<&str>) -> String {
    let mut text = object;
    if let Some(tools) = tools
        && text.ends_with('}')
    {
        text.pop();
        if !text.ends_with('{') {
            text.push(',');
        }
        text.push_str("\"tools\":");
        text.push_str(tools);
        text.push('}');
    }
    text
}

/// Registries and toolsets remembered at most (sessions with MCP servers list their own).
const KEPT: usize = 8;

/// One agent's definitions, by the registry and toolset they were made from (the same `Arc`s,
/// held, so a pointer is never reused while remembered).
#[derive(Default)]
pub struct DefinitionsCache {
    made: Mutex<Vec<Made>>,
}

/// Definitions and what they were made from.
type Made = (Arc<ToolRegistry>, Toolset, Arc<ToolDefinitions>);

impl DefinitionsCache {
    /// The definitions of `toolset` in `registry`, made once.
    pub fn get(&self, registry: &Arc<ToolRegistry>, toolset: &Toolset) -> Arc<ToolDefinitions> {
        let mut made = self.made.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, _, found)) = made
            .iter()
            .find(|(r, t, _)| Arc::ptr_eq(r, registry) && t.same(toolset))
        {
            return found.clone();
        }
        let definitions = Arc::new(ToolDefinitions::new(registry.definitions(toolset)));
        if made.len() >= KEPT {
            made.remove(0);
        }
        made.push((registry.clone(), toolset.clone(), definitions.clone()));
        definitions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_spliced_into_the_body_and_made_once() {
        let body = json!({"model": "m", "stream": true});
        let tools = ToolDefinitions::new(vec![ToolDefinition {
            name: "read_file".into(),
            description: "Read".into(),
            parameters: json!({"type": "object"}),
        }]);
        let text = body_with_tools(&body, Some(tools.openai_json()));
        let parsed: Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(parsed["tools"][0]["function"]["name"], "read_file");
        assert_eq!(parsed["model"], "m");
        assert_eq!(body_with_tools(&json!({}), Some("[]")), "{\"tools\":[]}");
        assert_eq!(body_with_tools(&body, None), body.to_string());
        // The same text each time: made once.
        assert!(std::ptr::eq(tools.openai_json(), tools.openai_json()));

        let cache = DefinitionsCache::default();
        let registry = Arc::new(ToolRegistry::builtin());
        let toolset = Toolset::from_names(["read_file", "ls"]);
        let first = cache.get(&registry, &toolset);
        assert!(Arc::ptr_eq(&first, &cache.get(&registry, &toolset.clone())));
        assert_eq!(first.list().len(), 2);
        let other = Toolset::from_names(["read_file"]);
        assert_eq!(cache.get(&registry, &other).list().len(), 1);
    }
}
