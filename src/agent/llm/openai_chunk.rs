//! One chunk of an OpenAI-compatible stream, read into borrowed fields. A provider sends a
//! chunk per token or so; reading each into a `serde_json::Value` cost a map and a copy of
//! every key and string in it, about fifteen allocations a chunk. Text without escapes is
//! borrowed from the chunk as received.
//!
//! As tolerant as the `Value` reader was: every field may be missing or `null`, and a text or
//! number field holding another type is read as absent while the rest of the chunk is still
//! read (Mistral's reasoning models stream `content` as an array of parts; some llama.cpp
//! servers send a call's `arguments` as an object). JSON that is not an object, or whose
//! objects hold another type where this reads one, is skipped ([`Chunk::parse`] gives
//! `Ok(None)`); only text that is not JSON is refused.

use super::Usage;
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

#[derive(Deserialize)]
pub(super) struct Chunk<'a> {
    /// What the endpoint reported instead of a completion.
    #[serde(default)]
    pub error: Option<Value>,
    #[serde(default)]
    usage: Option<WireUsage<'a>>,
    #[serde(default, borrow)]
    choices: Option<Vec<Choice<'a>>>,
}

#[derive(Deserialize)]
struct WireUsage<'a> {
    #[serde(default, borrow)]
    prompt_tokens: Option<Scalar<'a>>,
    #[serde(default, borrow)]
    completion_tokens: Option<Scalar<'a>>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
}

#[derive(Deserialize)]
pub(super) struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Scalar<'a>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<CallDelta<'a>>>,
}

/// A piece of a tool call: its name and arguments arrive split across chunks.
#[derive(Deserialize)]
pub(super) struct CallDelta<'a> {
    #[serde(default, borrow)]
    index: Option<Scalar<'a>>,
    #[serde(default, borrow)]
    id: Option<Scalar<'a>>,
    #[serde(default, borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    name: Option<Scalar<'a>>,
    #[serde(default, borrow)]
    arguments: Option<Scalar<'a>>,
}

/// A field read as text or a whole number when it is one, and as nothing else otherwise
/// (its value is skipped without being built).
pub(super) enum Scalar<'a> {
    Text(Cow<'a, str>),
    Whole(u64),
    Other,
}

impl Scalar<'_> {
    fn text(this: &Option<Self>) -> Option<&str> {
        match this {
            Some(Scalar::Text(text)) => Some(text),
            _ => None,
        }
    }

    fn whole(this: &Option<Self>) -> Option<u64> {
        match this {
            Some(Scalar::Whole(n)) => Some(*n),
            _ => None,
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Scalar<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ScalarVisitor(PhantomData))
    }
}

struct ScalarVisitor<'a>(PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for ScalarVisitor<'a> {
    type Value = Scalar<'a>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Scalar<'a>, E> {
        Ok(Scalar::Text(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar<'a>, E> {
        Ok(Scalar::Text(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Scalar<'a>, E> {
        Ok(Scalar::Text(Cow::Owned(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar<'a>, E> {
        Ok(Scalar::Whole(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar<'a>, E> {
        Ok(u64::try_from(v).map_or(Scalar::Other, Scalar::Whole))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Scalar<'a>, E> {
        Ok(Scalar::Other)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Scalar<'a>, E> {
        Ok(Scalar::Other)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Scalar<'a>, E> {
        Ok(Scalar::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar<'a>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar<'a>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }
}

impl<'a> Chunk<'a> {
    /// The chunk, `Ok(None)` for JSON of another shape (skipped, as before), or an error for
    /// text that is not JSON.
    pub fn parse(data: &'a str) -> Result<Option<Chunk<'a>>, serde_json::Error> {
        if !data.trim_start().starts_with('{') {
            // serde would read an array into the chunk's fields by position.
            return serde_json::from_str::<IgnoredAny>(data).map(|_| None);
        }
        match serde_json::from_str(data) {
            Ok(chunk) => Ok(Some(chunk)),
            Err(e) if e.is_data() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The tokens used, when this chunk says (a stream's last, when asked for).
    pub fn usage(&self) -> Option<Usage> {
        self.usage.as_ref().map(|usage| Usage {
            input_tokens: Scalar::whole(&usage.prompt_tokens).unwrap_or(0),
            output_tokens: Scalar::whole(&usage.completion_tokens).unwrap_or(0),
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
        Scalar::text(&self.content)
    }

    pub fn tool_calls(&self) -> &[CallDelta<'a>] {
        self.tool_calls.as_deref().unwrap_or_default()
    }
}

impl CallDelta<'_> {
    /// The call's place among the reply's calls (0 when missing, as before).
    pub fn index(&self) -> u64 {
        Scalar::whole(&self.index).unwrap_or(0)
    }

    pub fn id(&self) -> Option<&str> {
        Scalar::text(&self.id)
    }

    pub fn name(&self) -> Option<&str> {
        Scalar::text(&self.function.as_ref()?.name)
    }

    pub fn arguments(&self) -> Option<&str> {
        Scalar::text(&self.function.as_ref()?.arguments)
    }
}

#[cfg(test)]
mod tests;
