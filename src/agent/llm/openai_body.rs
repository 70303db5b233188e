//! An OpenAI-compatible request's body, written straight from the request: no JSON tree is
//! built in between. Building one cost every message of the transcript a map and copies of its
//! text, about a hundred allocations a turn (counted with a `malloc` uprobe over the Telegram
//! benchmark's repeat bursts). The tools' JSON, made once per agent, is spliced in as text.
//!
//! Keys are written in the order a `serde_json::Value` writes them (sorted), so the text is
//! the same as the tree's was.

use super::{ChatMessage, LlmRequest, Role, ToolCall};
use crate::tools::definitions::object_with_tools;
use serde::ser::{Serialize, SerializeMap, Serializer};

/// The body as JSON text.
pub(super) fn body(request: &LlmRequest) -> String {
    let tools = (!request.tools.is_empty()).then(|| request.tools.openai_json());
    let text_len: usize = request.messages.iter().map(|m| m.content.len() + 64).sum();
    let mut out = Vec::with_capacity(text_len + tools.map_or(0, str::len) + 160);
    // Writing into a Vec cannot fail, and every value here is a string, number or bool.
    if serde_json::to_writer(&mut out, &Body(request)).is_err() {
        out.clear();
    }
    // serde_json writes valid UTF-8.
    let object = String::from_utf8(out).unwrap_or_default();
    object_with_tools(object, tools)
}

struct Body<'a>(&'a LlmRequest);

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let request = self.0;
        let mut map = serializer.serialize_map(None)?;
        if let Some(max) = request.max_tokens {
            map.serialize_entry("max_tokens", &max)?;
        }
        map.serialize_entry("messages", &Each(&request.messages, Message))?;
        map.serialize_entry("model", &request.model)?;
        map.serialize_entry("stream", &true)?;
        map.serialize_entry("stream_options", &UsageWanted)?;
        map.end()
    }
}

/// `{"include_usage": true}`: the stream's last chunk says how many tokens the call used.
struct UsageWanted;

impl Serialize for UsageWanted {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("include_usage", &true)?;
        map.end()
    }
}

/// A slice written as a JSON array, each item as the function makes it.
struct Each<'a, T, J>(&'a [T], fn(&'a T) -> J);

impl<T, J: Serialize> Serialize for Each<'_, T, J> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(self.1))
    }
}

struct Message<'a>(&'a ChatMessage);

impl Serialize for Message<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let m = self.0;
        let mut map = serializer.serialize_map(None)?;
        match m.role {
            Role::System | Role::User => {
                map.serialize_entry("content", &m.content)?;
                map.serialize_entry("role", role_name(m.role))?;
            }
            Role::Tool => {
                map.serialize_entry("content", &m.content)?;
                map.serialize_entry("role", "tool")?;
                map.serialize_entry("tool_call_id", &m.tool_call_id)?;
            }
            Role::Assistant => {
                // An empty answer (tool calls only) is `null`, as the API writes it.
                let content = (!m.content.is_empty()).then_some(m.content.as_str());
                map.serialize_entry("content", &content)?;
                map.serialize_entry("role", "assistant")?;
                if !m.tool_calls.is_empty() {
                    map.serialize_entry("tool_calls", &Each(&m.tool_calls, Call))?;
                }
            }
        }
        map.end()
    }
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// `{"function": {"arguments", "name"}, "id", "type": "function"}`.
struct Call<'a>(&'a ToolCall);

impl Serialize for Call<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("function", &Function(self.0))?;
        map.serialize_entry("id", &self.0.id)?;
        map.serialize_entry("type", "function")?;
        map.end()
    }
}

struct Function<'a>(&'a ToolCall);

impl Serialize for Function<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("arguments", &self.0.arguments)?;
        map.serialize_entry("name", &self.0.name)?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::definitions::ToolDefinitions;
    use crate::tools::registry::ToolDefinition;
    use serde_json::{Value, json};
    use std::sync::Arc;

    fn request(max_tokens: Option<u32>, tools: Vec<ToolDefinition>) -> LlmRequest {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: "{\"path\":\"a \\\"b\\\"\"}".into(),
        };
        LlmRequest {
            model: "m".into(),
            messages: vec![
                ChatMessage::new(Role::System, "be brief"),
                ChatMessage::new(Role::User, "héllo \"there\"\n"),
                ChatMessage {
                    tool_calls: vec![call("c1"), call("c2")],
                    ..ChatMessage::new(Role::Assistant, "")
                },
                ChatMessage {
                    tool_call_id: Some("c1".into()),
                    ..ChatMessage::new(Role::Tool, "contents")
                },
                ChatMessage::new(Role::Tool, "no id"),
                ChatMessage::new(Role::Assistant, "done"),
            ],
            tools: Arc::new(ToolDefinitions::new(tools)),
            max_tokens,
        }
    }

    /// Every role, tool calls, an empty answer, text needing escapes, and an absent
    /// `tool_call_id` come out as the API's JSON, keys in a `Value`'s order.
    #[test]
    fn the_body_is_the_apis_json_for_every_kind_of_message() {
        let tools = vec![ToolDefinition {
            name: "read_file".into(),
            description: "Read".into(),
            parameters: json!({"type": "object"}),
        }];
        let text = body(&request(Some(64), tools));
        let function = json!({"arguments": "{\"path\":\"a \\\"b\\\"\"}", "name": "read_file"});
        let expected = json!({
            "max_tokens": 64,
            "messages": [
                {"content": "be brief", "role": "system"},
                {"content": "héllo \"there\"\n", "role": "user"},
                {"content": null, "role": "assistant", "tool_calls": [
                    {"function": function, "id": "c1", "type": "function"},
                    {"function": function, "id": "c2", "type": "function"},
                ]},
                {"content": "contents", "role": "tool", "tool_call_id": "c1"},
                {"content": "no id", "role": "tool", "tool_call_id": null},
                {"content": "done", "role": "assistant"},
            ],
            "model": "m",
            "stream": true,
            "stream_options": {"include_usage": true},
            "tools": [{"type": "function", "function": {
                "name": "read_file", "description": "Read", "parameters": {"type": "object"},
            }}],
        });
        let parsed: Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(parsed, expected, "{text}");
        // Without tools or a limit, neither key is written; the rest is the same text a
        // `Value` writes.
        let bare = body(&request(None, Vec::new()));
        let mut as_value = expected.clone();
        if let Value::Object(map) = &mut as_value {
            map.remove("tools");
            map.remove("max_tokens");
        }
        assert_eq!(bare, as_value.to_string());
    }
}
