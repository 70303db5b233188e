//! One chunk of an OpenAI-compatible stream, read into borrowed fields. A provider sends a
//! chunk per token or so; reading each into a `serde_json::Value` cost a map and a copy of
//! every key and string in it, about fifteen allocations a chunk. Text without escapes is
//! borrowed from the chunk as received.
//!
//! Every field may be missing or `null`; one of another type makes the chunk unreadable,
//! and the stream is refused as not a chat completion.

use super::Usage;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;

/// A string, borrowed from the chunk when it has no escapes (an `Option<Cow<str>>` field
/// never borrows: serde borrows only a `Cow` it reads directly).
#[derive(Deserialize)]
#[serde(transparent)]
pub(super) struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

impl Text<'_> {
    fn as_str(&self) -> &str {
        &self.0
    }
}

#[derive(Deserialize)]
pub(super) struct Chunk<'a> {
    /// What the endpoint reported instead of a completion.
    #[serde(default)]
    pub error: Option<Value>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default, borrow)]
    choices: Option<Vec<Choice<'a>>>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
}

#[derive(Deserialize)]
pub(super) struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Text<'a>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<CallDelta<'a>>>,
}

/// A piece of a tool call: its name and arguments arrive split across chunks.
#[derive(Deserialize)]
pub(super) struct CallDelta<'a> {
    #[serde(default)]
    pub index: Option<u64>,
    #[serde(default, borrow)]
    id: Option<Text<'a>>,
    #[serde(default, borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    name: Option<Text<'a>>,
    #[serde(default, borrow)]
    arguments: Option<Text<'a>>,
}

impl<'a> Chunk<'a> {
    pub fn parse(data: &'a str) -> Option<Chunk<'a>> {
        serde_json::from_str(data).ok()
    }

    /// The tokens used, when this chunk says (a stream's last, when asked for).
    pub fn usage(&self) -> Option<Usage> {
        self.usage.as_ref().map(|usage| Usage {
            input_tokens: usage.prompt_tokens.unwrap_or(0),
            output_tokens: usage.completion_tokens.unwrap_or(0),
            latency_ms: 0,
        })
    }

    /// The first choice's delta: what this chunk adds to the reply.
    pub fn delta(&self) -> Option<&Delta<'a>> {
        self.choices.as_ref()?.first()?.delta.as_ref()
    }
}

impl<'a> Delta<'a> {
    pub fn content(&self) -> Option<&str> {
        self.content.as_ref().map(Text::as_str)
    }

    pub fn tool_calls(&self) -> &[CallDelta<'a>] {
        self.tool_calls.as_deref().unwrap_or_default()
    }
}

impl CallDelta<'_> {
    pub fn id(&self) -> Option<&str> {
        self.id.as_ref().map(Text::as_str)
    }

    pub fn name(&self) -> Option<&str> {
        self.function.as_ref()?.name.as_ref().map(Text::as_str)
    }

    pub fn arguments(&self) -> Option<&str> {
        self.function.as_ref()?.arguments.as_ref().map(Text::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_is_read_with_its_text_borrowed_and_missing_or_null_fields_absent() {
        let data = r#"{"id":"x","object":"chat.completion.chunk","usage":null,"choices":[{"index":0,"delta":{"role":"assistant","content":"hi ","tool_calls":[{"index":1,"id":"c","type":"function","function":{"name":"read_file","arguments":"{\"p\""}}]},"finish_reason":null}]}"#;
        let chunk = Chunk::parse(data).unwrap();
        assert!(chunk.error.is_none() && chunk.usage().is_none());
        let delta = chunk.delta().unwrap();
        assert!(matches!(&delta.content, Some(Text(Cow::Borrowed("hi ")))));
        let call = &delta.tool_calls()[0];
        assert_eq!((call.index, call.id()), (Some(1), Some("c")));
        // Text with escapes is read into a string of its own.
        assert!(matches!(
            &call.function.as_ref().unwrap().arguments,
            Some(Text(Cow::Owned(_)))
        ));
        assert_eq!(
            (call.name(), call.arguments()),
            (Some("read_file"), Some("{\"p\""))
        );

        let last = Chunk::parse(r#"{"choices":[],"usage":{"prompt_tokens":11}}"#).unwrap();
        assert!(last.delta().is_none());
        let usage = last.usage().unwrap();
        assert_eq!((usage.input_tokens, usage.output_tokens), (11, 0));
        let nulls = Chunk::parse(r#"{"choices":[{"delta":{"content":null,"tool_calls":null}}]}"#);
        let nulls = nulls.unwrap();
        let delta = nulls.delta().unwrap();
        assert!(delta.content().is_none() && delta.tool_calls().is_empty());
        assert!(
            Chunk::parse(r#"{"error":{"message":"overloaded"}}"#)
                .unwrap()
                .error
                .is_some()
        );
        // A field of another type, or not an object at all: not a chunk.
        assert!(Chunk::parse(r#"{"choices":"none"}"#).is_none());
        assert!(Chunk::parse(r#""text""#).is_none());
    }
}
