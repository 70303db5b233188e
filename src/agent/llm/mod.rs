//! Model providers: the conversation types every provider speaks, and the provider trait.
//! Each provider turns these into its own wire format, streams the reply, retries what is worth
//! retrying, and reports usage.

pub mod anthropic;
mod openai;
mod openai_body;
mod openai_chunk;
pub mod retry;
mod sse;

pub use anthropic::AnthropicProvider;
pub use openai::OpenAiProvider;

use crate::tools::ToolDefinitions;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// Who said a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// A tool call the model asked for; `arguments` is the raw JSON text (it may not parse).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
    /// The assistant's tool calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool result: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    #[must_use]
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        ChatMessage {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    #[must_use]
    pub fn tool_result(call_id: &str, content: impl Into<String>) -> Self {
        ChatMessage {
            role: Role::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.to_string()),
        }
    }
}

/// What to ask a model.
#[derive(Clone, Debug)]
pub struct LlmRequest {
    pub model: String,
    pub messages: Vec<ChatMessage>,
    /// Shared, with their JSON made once ([`ToolDefinitions`]).
    pub tools: Arc<ToolDefinitions>,
    pub max_tokens: Option<u32>,
}

/// Tokens and time of one model call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub latency_ms: u64,
}

impl Usage {
    /// Adds another call's usage.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.latency_ms += other.latency_ms;
    }
}

/// The model's reply.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LlmReply {
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
}

/// A model call that failed, in words the user can act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LlmError {
    pub message: String,
}

impl fmt::Display for LlmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LlmError {}

pub type LlmFuture<'a> = Pin<Box<dyn Future<Output = Result<LlmReply, LlmError>> + Send + 'a>>;

/// Called with each piece of streamed text as it arrives.
pub type OnDelta<'a> = &'a (dyn Fn(&str) + Send + Sync);

/// A model endpoint.
pub trait LlmProvider: Send + Sync {
    fn complete<'a>(&'a self, request: &'a LlmRequest, on_delta: OnDelta<'a>) -> LlmFuture<'a>;
}
