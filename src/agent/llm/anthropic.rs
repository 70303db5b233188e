//! Anthropic's Messages API: tool use and streaming. It wants `max_tokens`, a separate system
//! prompt, strictly alternating user/assistant turns, and tool results as user content blocks.

use super::retry::send_with_retries;
use super::sse::SseData;
use super::{
    ChatMessage, LlmError, LlmFuture, LlmProvider, LlmReply, LlmRequest, OnDelta, Role, ToolCall,
    Usage,
};
use crate::tools::definitions::body_with_tools;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The API version this client speaks.
/// The Messages API version every request names.
pub const API_VERSION: &str = "2023-06-01";

/// Anthropic's Messages API (or a server speaking it).
pub struct AnthropicProvider {
    client: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    attempts: u32,
    default_max_tokens: u32,
}

impl AnthropicProvider {
    /// `default_max_tokens` is used when a request carries none (the API requires one).
    pub fn new(
        base_url: &str,
        api_key: Option<String>,
        timeout: Duration,
        attempts: u32,
        default_max_tokens: u32,
    ) -> Result<Self, LlmError> {
        let client = super::retry::http_client(timeout)?;
        let base = base_url.trim_end_matches('/');
        Ok(AnthropicProvider {
            client,
            base_url: base.strip_suffix("/v1").unwrap_or(base).to_string(),
            api_key,
            attempts: attempts.max(1),
            default_max_tokens,
        })
    }

    /// The request's JSON as text; the tools' part is made once per agent.
    fn body(&self, request: &LlmRequest) -> String {
        let system: Vec<&str> = request
            .messages
            .iter()
            .filter(|m| m.role == Role::System)
            .map(|m| m.content.as_str())
            .collect();
        let mut body = json!({
            "model": request.model,
            "max_tokens": request.max_tokens.unwrap_or(self.default_max_tokens),
            "messages": turns(&request.messages),
            "stream": true,
        });
        if !system.is_empty() {
            body["system"] = json!(system.join("\n\n"));
        }
        let tools = (!request.tools.is_empty()).then(|| request.tools.anthropic_json());
        body_with_tools(&body, tools)
    }

    async fn call(
        &self,
        request: &LlmRequest,
        on_delta: OnDelta<'_>,
    ) -> Result<LlmReply, LlmError> {
        let url = format!("{}/v1/messages", self.base_url);
        let body = self.body(request);
        let started = Instant::now();
        let response = send_with_retries(&self.base_url, self.attempts, || {
            let post = self
                .client
                .post(&url)
                .header("anthropic-version", API_VERSION)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone());
            match &self.api_key {
                Some(key) => post.header("x-api-key", key),
                None => post,
            }
        })
        .await?;
        let mut reply = read_events(response, on_delta).await?;
        reply.usage.latency_ms = started.elapsed().as_millis() as u64;
        Ok(reply)
    }
}

impl LlmProvider for AnthropicProvider {
    fn complete<'a>(&'a self, request: &'a LlmRequest, on_delta: OnDelta<'a>) -> LlmFuture<'a> {
        Box::pin(self.call(request, on_delta))
    }
}

/// The conversation as alternating turns of content blocks (tool results ride in user turns).
fn turns(messages: &[ChatMessage]) -> Vec<Value> {
    let mut out: Vec<(String, Vec<Value>)> = Vec::new();
    for m in messages {
        let (role, blocks) = match m.role {
            Role::System => continue,
            Role::User => ("user", vec![json!({"type": "text", "text": m.content})]),
            Role::Tool => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
                    "content": m.content,
                })],
            ),
            Role::Assistant => {
                let mut blocks = Vec::new();
                if !m.content.is_empty() {
                    blocks.push(json!({"type": "text", "text": m.content}));
                }
                for call in &m.tool_calls {
                    // Arguments that did not parse were answered with an error result; the
                    // API needs an object here.
                    let input: Value = serde_json::from_str(&call.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({}));
                    blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
                }
                ("assistant", blocks)
            }
        };
        match out.last_mut() {
            Some((last, existing)) if last == role => existing.extend(blocks),
            _ => out.push((role.to_string(), blocks)),
        }
    }
    out.into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

#[derive(Default)]
struct Block {
    id: String,
    name: String,
    json: String,
    tool: bool,
}

async fn read_events(
    response: reqwest::Response,
    on_delta: OnDelta<'_>,
) -> Result<LlmReply, LlmError> {
    let mut reply = LlmReply::default();
    let mut blocks: BTreeMap<u64, Block> = BTreeMap::new();
    let mut usage = Usage::default();
    let mut stream = SseData::new(response);
    'stream: while let Some(data) = stream.next().await? {
        let event: Value = serde_json::from_str(data.trim()).map_err(|_| LlmError {
            message: format!(
                "the model endpoint sent something that is not a Messages event: {}",
                data.chars().take(200).collect::<String>()
            ),
        })?;
        let index = event["index"].as_u64().unwrap_or(0);
        match event["type"].as_str().unwrap_or_default() {
            "message_start" => {
                usage.input_tokens = event
                    .pointer("/message/usage/input_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
            }
            "content_block_start" => {
                let block = &event["content_block"];
                blocks.insert(
                    index,
                    Block {
                        id: block["id"].as_str().unwrap_or_default().to_string(),
                        name: block["name"].as_str().unwrap_or_default().to_string(),
                        json: String::new(),
                        tool: block["type"] == "tool_use",
                    },
                );
            }
            "content_block_delta" => {
                let delta = &event["delta"];
                if let Some(text) = delta["text"].as_str() {
                    reply.content.push_str(text);
                    on_delta(text);
                }
                if let Some(part) = delta["partial_json"].as_str() {
                    blocks.entry(index).or_default().json.push_str(part);
                }
            }
            "message_delta" => {
                usage.output_tokens = event
                    .pointer("/usage/output_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(usage.output_tokens)
            }
            "message_stop" => break 'stream,
            "error" => {
                return Err(LlmError {
                    message: format!("the model endpoint reported an error: {}", event["error"]),
                });
            }
            _ => {}
        }
    }
    reply.tool_calls = blocks
        .into_iter()
        .filter(|(_, b)| b.tool)
        .map(|(index, b)| ToolCall {
            id: if b.id.is_empty() {
                format!("toolu_{index}")
            } else {
                b.id
            },
            name: b.name,
            arguments: if b.json.is_empty() {
                "{}".into()
            } else {
                b.json
            },
        })
        .collect();
    reply.usage = usage;
    Ok(reply)
}
