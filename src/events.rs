//! Events: what happened to each call, in order, for the audit log. The runtime issue stores them
//! per session in the store; the executor only emits them.

use serde::Serialize;
use serde_json::Value;
use std::sync::Mutex;

/// One event (design.md section 7 names the types).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Event {
    /// `tool_proposed`, `classified`, `permission_requested`, `permission_granted`,
    /// `permission_denied`, `tool_started`, `tool_completed`, `tool_failed`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub session: String,
    pub call_id: String,
    pub tool: String,
    #[serde(flatten)]
    pub fields: Value,
}

/// Where events go.
pub trait EventSink: Send + Sync {
    fn record(&self, event: Event);
}

/// Events kept in memory (tests, `explain`-like tools).
#[derive(Default)]
pub struct MemoryEvents {
    events: Mutex<Vec<Event>>,
}

impl MemoryEvents {
    /// Everything recorded so far.
    #[must_use]
    pub fn all(&self) -> Vec<Event> {
        // A poisoned lock still holds a consistent Vec (each push is one operation).
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl EventSink for MemoryEvents {
    fn record(&self, event: Event) {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(event);
    }
}
