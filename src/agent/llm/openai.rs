//! Any OpenAI-compatible `/chat/completions` endpoint (OpenAI, Ollama, vLLM, llama.cpp server,
//! OpenRouter): tool calling, SSE streaming (with a plain JSON reply accepted too), retries.

use super::openai_chunk::Chunk;
use super::retry::send_with_retries;
use super::sse::SseData;
use super::{LlmError, LlmFuture, LlmProvider, LlmReply, LlmRequest, OnDelta, ToolCall, Usage};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// An OpenAI-compatible endpoint.
pub struct OpenAiProvider {
    client: reqwest::Client,
    base_url: String,
    /// `{base_url}/chat/completions`, parsed once: parsing it at every request was a
    /// measurable part of a turn's cost. `None` if it does not parse; each request then
    /// passes the text, and reqwest's error says why.
    completions: Option<reqwest::Url>,
    api_key: Option<String>,
    attempts: u32,
}

/// The chat completions endpoint under `base_url` (no trailing slash).
fn completions_url(base_url: &str) -> String {
    format!("{base_url}/chat/completions")
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
        let base_url = base_url.trim_end_matches('/').to_string();
        Ok(OpenAiProvider {
            client,
            completions: reqwest::Url::parse(&completions_url(&base_url)).ok(),
            base_url,
            api_key,
            attempts: attempts.max(1),
        })
    }

    async fn attempt_all(
        &self,
        request: &LlmRequest,
        on_delta: OnDelta<'_>,
    ) -> Result<LlmReply, LlmError> {
        // Shared by the attempts: a retry sends the same bytes without copying them.
        let body = hyper::body::Bytes::from(super::openai_body::body(request));
        let started = Instant::now();
        let response = send_with_retries(&self.base_url, self.attempts, || {
            let post = match &self.completions {
                Some(url) => self.client.post(url.clone()),
                None => self.client.post(completions_url(&self.base_url)),
            };
            let post = post
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
        let Some(event) = Chunk::parse(data).map_err(|_| garbage(data))? else {
            continue;
        };
        if let Some(error) = &event.error {
            return Err(LlmError {
                message: format!("the model endpoint reported an error: {error}"),
            });
        }
        if let Some(usage) = event.usage() {
            reply.usage = usage;
        }
        let Some(delta) = event.delta() else {
            continue;
        };
        if let Some(text) = delta.content()
            && !text.is_empty()
        {
            reply.content.push_str(text);
            on_delta(text);
        }
        for call in delta.tool_calls() {
            let partial = calls.entry(call.index()).or_default();
            if let Some(id) = call.id() {
                partial.id = id.to_string();
            }
            if let Some(name) = call.name() {
                partial.name.push_str(name);
            }
            if let Some(args) = call.arguments() {
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
