//! Any OpenAI-compatible `/chat/completions` endpoint (OpenAI, Ollama, vLLM, llama.cpp server,
//! OpenRouter): tool calling, SSE streaming (with a plain JSON reply accepted too), retries.

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

/// An OpenAI-compatible endpoint.
pub struct OpenAiProvider {
    client: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    attempts: u32,
}

impl OpenAiProvider {
    /// `attempts` is how many times a retryable failure is tried in all (at least once).
    pub fn new(
        base_url: &str,
        api_key: Option<String>,
        timeout: Duration,
        attempts: u32,
    ) -> Result<Self, LlmError> {
        let client = super::retry::http_client(timeout)?;
        Ok(OpenAiProvider {
            client,
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key,
            attempts: attempts.max(1),
        })
    }

    /// The request's JSON as text; the tools' part is made once per agent.
    fn body(request: &LlmRequest) -> String {
        let messages: Vec<Value> = request.messages.iter().map(message_json).collect();
        let mut body = json!({
            "model": request.model,
            "messages": messages,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        if let Some(max) = request.max_tokens {
            body["max_tokens"] = json!(max);
        }
        let tools = (!request.tools.is_empty()).then(|| request.tools.openai_json());
        body_with_tools(&body, tools)
    }

    async fn attempt_all(
        &self,
        request: &LlmRequest,
        on_delta: OnDelta<'_>,
    ) -> Result<LlmReply, LlmError> {
        let url = format!("{}/chat/completions", self.base_url);
        let body = Self::body(request);
        let started = Instant::now();
        let response = send_with_retries(&self.base_url, self.attempts, || {
            let post = self
                .client
                .post(&url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone());
            match &self.api_key {
                Some(key) => post.bearer_auth(key),
                None => post,
            }
        })
        .await?;
        let streamed = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("event-stream"));
        let mut reply = if streamed {
            read_stream(response, on_delta).await?
        } else {
            let value: Value = response.json().await.map_err(|e| LlmError {
                message: format!(
                    "the model endpoint at {} sent a reply that is not JSON: {e}",
                    self.base_url
                ),
            })?;
            let reply = whole_reply(&value)?;
            if !reply.content.is_empty() {
                on_delta(&reply.content);
            }
            reply
        };
        reply.usage.latency_ms = started.elapsed().as_millis() as u64;
        Ok(reply)
    }
}

impl LlmProvider for OpenAiProvider {
    fn complete<'a>(&'a self, request: &'a LlmRequest, on_delta: OnDelta<'a>) -> LlmFuture<'a> {
        Box::pin(self.attempt_all(request, on_delta))
    }
}

fn message_json(m: &ChatMessage) -> Value {
    match m.role {
        Role::System => json!({"role": "system", "content": m.content}),
        Role::User => json!({"role": "user", "content": m.content}),
        Role::Tool => json!({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}),
        Role::Assistant => {
            let mut v = json!({"role": "assistant", "content": if m.content.is_empty() { Value::Null } else { json!(m.content) }});
            if !m.tool_calls.is_empty() {
                v["tool_calls"] = m
                    .tool_calls
                    .iter()
                    .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                    .collect();
            }
            v
        }
    }
}

fn garbage(what: &str) -> LlmError {
    let quote: String = what.chars().take(200).collect();
    LlmError {
        message: format!(
            "the model endpoint sent something that is not a chat completion: {quote}"
        ),
    }
}

fn usage_of(value: &Value) -> Option<Usage> {
    let usage = value.get("usage").filter(|u| u.is_object())?;
    Some(Usage {
        input_tokens: usage["prompt_tokens"].as_u64().unwrap_or(0),
        output_tokens: usage["completion_tokens"].as_u64().unwrap_or(0),
        latency_ms: 0,
    })
}

fn whole_reply(value: &Value) -> Result<LlmReply, LlmError> {
    if let Some(error) = value.get("error") {
        return Err(LlmError {
            message: format!("the model endpoint reported an error: {error}"),
        });
    }
    let message = value
        .pointer("/choices/0/message")
        .ok_or_else(|| garbage(&value.to_string()))?;
    let tool_calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .enumerate()
                .map(|(i, c)| ToolCall {
                    id: c["id"]
                        .as_str()
                        .map_or_else(|| format!("call_{i}"), str::to_string),
                    name: c
                        .pointer("/function/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    arguments: c
                        .pointer("/function/arguments")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(LlmReply {
        content: message["content"].as_str().unwrap_or_default().to_string(),
        tool_calls,
        usage: usage_of(value).unwrap_or_default(),
    })
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

async fn read_stream(
    response: reqwest::Response,
    on_delta: OnDelta<'_>,
) -> Result<LlmReply, LlmError> {
    let mut reply = LlmReply::default();
    let mut calls: BTreeMap<u64, PartialCall> = BTreeMap::new();
    let mut stream = SseData::new(response);
    while let Some(data) = stream.next().await? {
        let data = data.as_str();
        if data == "[DONE]" {
            break;
        }
        let event: Value = serde_json::from_str(data).map_err(|_| garbage(data))?;
        if let Some(error) = event.get("error") {
            return Err(LlmError {
                message: format!("the model endpoint reported an error: {error}"),
            });
        }
        if let Some(usage) = usage_of(&event) {
            reply.usage = usage;
        }
        let Some(delta) = event.pointer("/choices/0/delta") else {
            continue;
        };
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            reply.content.push_str(text);
            on_delta(text);
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = call["index"].as_u64().unwrap_or(0);
            let partial = calls.entry(index).or_default();
            if let Some(id) = call["id"].as_str() {
                partial.id = id.to_string();
            }
            if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
                partial.name.push_str(name);
            }
            if let Some(args) = call.pointer("/function/arguments").and_then(Value::as_str) {
                partial.arguments.push_str(args);
            }
        }
    }
    reply.tool_calls = calls
        .into_iter()
        .map(|(index, p)| ToolCall {
            id: if p.id.is_empty() {
                format!("call_{index}")
            } else {
                p.id
            },
            name: p.name,
            arguments: p.arguments,
        })
        .collect();
    Ok(reply)
}
