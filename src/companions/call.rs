//! The requests to companion models. Images: an OpenAI-compatible chat completion whose user
//! message carries the image as a `data:` URL, or an Anthropic message with a base64 image
//! block. Audio: an OpenAI-compatible `/audio/transcriptions` (OpenAI, whisper.cpp's server).
//! One answer each, not streamed; failures are retried as the agent's own calls are.

use super::media::MediaKind;
use super::role::Modality;
use crate::agent::llm::Usage;
use crate::agent::llm::retry::send_with_retries;
use crate::config::{ProviderConfig, ProviderKind};
use base64::Engine;
use serde_json::{Value, json};
use std::time::Instant;

/// Tokens a companion may answer with (Anthropic requires a cap).
const ANSWER_TOKENS: u32 = 1024;

/// What a companion answered, and what it cost.
#[derive(Clone, Debug, PartialEq)]
pub struct CompanionAnswer {
    pub text: String,
    pub usage: Usage,
}

/// A file for a companion: its bytes, its type (from the bytes) and its name.
pub struct Media<'a> {
    pub bytes: &'a [u8],
    pub kind: MediaKind,
    pub name: &'a str,
}

fn api_key(provider: &ProviderConfig) -> Option<String> {
    provider
        .api_key_env
        .as_ref()
        .and_then(|name| std::env::var(name).ok())
}

fn tokens(value: &Value) -> u64 {
    value.as_u64().unwrap_or(0)
}

/// Sends a request (built afresh for each attempt, retried as the agent's own calls are) and
/// reads its JSON answer.
async fn reply_json(
    base: &str,
    attempts: u32,
    build: impl Fn() -> reqwest::RequestBuilder,
) -> Result<Value, String> {
    send_with_retries(base, attempts, build)
        .await
        .map_err(|e| e.message)?
        .json()
        .await
        .map_err(|e| format!("the companion at {base} sent a reply that is not JSON: {e}"))
}

/// Sends `media` with `question` to `model` at `provider` (named `provider_name` in messages).
pub async fn analyze(
    client: &reqwest::Client,
    provider_name: &str,
    provider: &ProviderConfig,
    model: &str,
    media: &Media<'_>,
    question: &str,
) -> Result<CompanionAnswer, String> {
    let started = Instant::now();
    let base = provider.base_url.trim_end_matches('/');
    let attempts = provider.max_retries.saturating_add(1);
    let key = api_key(provider);
    let encoded = || base64::engine::general_purpose::STANDARD.encode(media.bytes);
    let (answer, mut usage) = match (media.kind.modality, provider.kind) {
        (Modality::Video, _) => {
            return Err("no provider supports video yet: describe what you need from the video, or ask for a frame as an image".into());
        }
        (Modality::Image, ProviderKind::Openai) => {
            let url = format!("data:{};base64,{}", media.kind.mime, encoded());
            let body = json!({
                "model": model,
                "stream": false,
                "max_tokens": ANSWER_TOKENS,
                "messages": [{"role": "user", "content": [
                    {"type": "text", "text": question},
                    {"type": "image_url", "image_url": {"url": url}},
                ]}],
            });
            let endpoint = format!("{base}/chat/completions");
            let reply = reply_json(base, attempts, || {
                let post = client.post(&endpoint).json(&body);
                match &key {
                    Some(key) => post.bearer_auth(key),
                    None => post,
                }
            })
            .await?;
            let text = reply["choices"][0]["message"]["content"].as_str();
            let usage = Usage {
                input_tokens: tokens(&reply["usage"]["prompt_tokens"]),
                output_tokens: tokens(&reply["usage"]["completion_tokens"]),
                latency_ms: 0,
            };
            (text.map(str::to_string), usage)
        }
        (Modality::Image, ProviderKind::Anthropic) => {
            let body = json!({
                "model": model,
                "max_tokens": ANSWER_TOKENS,
                "messages": [{"role": "user", "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": media.kind.mime, "data": encoded()}},
                    {"type": "text", "text": question},
                ]}],
            });
            let endpoint = format!("{base}/v1/messages");
            let reply = reply_json(base, attempts, || {
                let post = client
                    .post(&endpoint)
                    .header(
                        "anthropic-version",
                        crate::agent::llm::anthropic::API_VERSION,
                    )
                    .json(&body);
                match &key {
                    Some(key) => post.header("x-api-key", key),
                    None => post,
                }
            })
            .await?;
            let text = reply["content"]
                .as_array()
                .and_then(|blocks| blocks.iter().find_map(|b| b["text"].as_str()));
            let usage = Usage {
                input_tokens: tokens(&reply["usage"]["input_tokens"]),
                output_tokens: tokens(&reply["usage"]["output_tokens"]),
                latency_ms: 0,
            };
            (text.map(str::to_string), usage)
        }
        (Modality::Audio, ProviderKind::Openai) => {
            let endpoint = format!("{base}/audio/transcriptions");
            let file_name = format!("audio.{}", media.kind.extension);
            let reply = reply_json(base, attempts, || {
                let part = reqwest::multipart::Part::bytes(media.bytes.to_vec())
                    .file_name(file_name.clone())
                    .mime_str(media.kind.mime)
                    .unwrap_or_else(|_| reqwest::multipart::Part::bytes(media.bytes.to_vec()));
                let form = reqwest::multipart::Form::new()
                    .text("model", model.to_string())
                    .text("response_format", "json")
                    .part("file", part);
                let post = client.post(&endpoint).multipart(form);
                match &key {
                    Some(key) => post.bearer_auth(key),
                    None => post,
                }
            })
            .await?;
            let transcript = reply["text"].as_str().map(|t| {
                if question.trim().is_empty() {
                    format!("Transcript of {}:\n{t}", media.name)
                } else {
                    format!(
                        "Transcript of {} (answer \"{question}\" from it):\n{t}",
                        media.name
                    )
                }
            });
            (transcript, Usage::default())
        }
        (Modality::Audio, ProviderKind::Anthropic) => {
            return Err(format!(
                "provider `{provider_name}` (anthropic) has no transcription endpoint: bind an OpenAI-compatible provider (OpenAI, whisper.cpp's server) for analyze:audio"
            ));
        }
    };
    usage.latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    match answer {
        Some(text) => Ok(CompanionAnswer { text, usage }),
        None => Err(format!(
            "the companion {provider_name}/{model} answered without any text"
        )),
    }
}
