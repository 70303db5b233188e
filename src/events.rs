//! Events: what happened to each call and run, in order, for the audit log. They are stored per
//! session ([`StoreEvents`]); the executor and the runtime only emit them.

use serde::Serialize;
use serde_json::Value;
use std::sync::Mutex;

/// What an event records (design.md section 7). Stored as its snake_case name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A call as the model wrote it, before the gate.
    ToolProposed,
    /// The classifier's verdict on a command.
    Classified,
    /// A card was asked for: a person must answer.
    PermissionRequested,
    /// The call may run (the gate, a person).
    PermissionGranted,
    /// The call may not run (the gate, a person, the runtime).
    PermissionDenied,
    /// The execute half began.
    ToolStarted,
    /// It ended without an error.
    ToolCompleted,
    /// It ended with an error (or never reached the gate).
    ToolFailed,
    /// A user's message started a run.
    MessageReceived,
    /// A run began.
    RunStarted,
    /// A run ended with an answer.
    RunCompleted,
    /// A run ended without one.
    RunInterrupted,
    /// Tokens a model call used (the agent's, the classifier's, a companion's).
    LlmUsage,
    /// An MCP server failed to start or list its tools.
    McpProblem,
    /// A stranger's message, ignored.
    AccessDenied,
    /// A press that decided nothing (not an admin, a stale card…).
    PressRejected,
    /// How many refusals the refusal budget counted but did not write.
    RefusalsLeftOut,
}

impl EventKind {
    /// The name stored and shown by `tollgate audit`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::ToolProposed => "tool_proposed",
            EventKind::Classified => "classified",
            EventKind::PermissionRequested => "permission_requested",
            EventKind::PermissionGranted => "permission_granted",
            EventKind::PermissionDenied => "permission_denied",
            EventKind::ToolStarted => "tool_started",
            EventKind::ToolCompleted => "tool_completed",
            EventKind::ToolFailed => "tool_failed",
            EventKind::MessageReceived => "message_received",
            EventKind::RunStarted => "run_started",
            EventKind::RunCompleted => "run_completed",
            EventKind::RunInterrupted => "run_interrupted",
            EventKind::LlmUsage => "llm_usage",
            EventKind::McpProblem => "mcp_problem",
            EventKind::AccessDenied => "access_denied",
            EventKind::PressRejected => "press_rejected",
            EventKind::RefusalsLeftOut => "refusals_left_out",
        }
    }
}

impl Serialize for EventKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One event.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Event {
    #[serde(rename = "type")]
    pub kind: EventKind,
    pub session: String,
    /// The run it belongs to, when its emitter knows (the executor's events of a run's calls).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    pub call_id: String,
    pub tool: String,
    #[serde(flatten)]
    pub fields: Value,
}

/// Where events go.
///
/// Stored events (see [`StoreEvents`]) gain `ts` and `run` when recorded.
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

/// Every event to two sinks: the audit log, and a watcher (a chat's progress message).
pub struct TeeEvents {
    pub audit: std::sync::Arc<dyn EventSink>,
    pub watcher: std::sync::Arc<dyn EventSink>,
}

impl EventSink for TeeEvents {
    fn record(&self, event: Event) {
        self.watcher.record(event.clone());
        self.audit.record(event);
    }
}

/// Which run is active in a session, for events whose emitter does not know it (the run
/// engine implements it; the events module needs nothing else of it).
pub trait ActiveRuns: Send + Sync {
    fn active_run_id(&self, session: &str) -> Option<String>;
}

/// Events appended to the store, per session, in order: the audit log.
pub struct StoreEvents {
    store: std::sync::Arc<dyn crate::store::Store>,
    journal: Option<std::sync::Arc<dyn ActiveRuns>>,
    sequence: std::sync::atomic::AtomicU64,
}

/// The store tree of events.
pub const EVENTS_TREE: &str = "events";
/// Events by when they were recorded (`store::aged` keys), for retention.
const EVENTS_AGED_TREE: &str = "events_aged";

/// A stored event: the event's fields plus when and in which run.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, Serialize)]
pub struct StoredEvent {
    pub ts: String,
    pub session: String,
    #[serde(default)]
    pub run: Option<String>,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub call_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool: String,
    #[serde(flatten)]
    pub fields: serde_json::Map<String, Value>,
}

impl StoreEvents {
    /// `journal` tells which run is active in a session, to label its events.
    #[must_use]
    pub fn new(
        store: std::sync::Arc<dyn crate::store::Store>,
        journal: Option<std::sync::Arc<dyn ActiveRuns>>,
    ) -> Self {
        StoreEvents {
            store,
            journal,
            sequence: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Deletes the events recorded before `before` (seconds); how many.
    pub fn prune(
        store: &dyn crate::store::Store,
        before: u64,
    ) -> Result<usize, crate::store::StoreError> {
        crate::store::aged::prune(store, EVENTS_AGED_TREE, EVENTS_TREE, before)
    }

    /// Dates the events of a store written before they were dated, each at its own `ts` (at
    /// `now` if that cannot be read).
    pub fn date_undated(
        store: &dyn crate::store::Store,
        now: u64,
    ) -> Result<usize, crate::store::StoreError> {
        let events = store
            .scan_prefix(EVENTS_TREE, b"")?
            .into_iter()
            .map(|(k, v)| {
                let at = serde_json::from_slice::<StoredEvent>(&v)
                    .ok()
                    .and_then(|e| crate::reminders::parse_rfc3339(&e.ts));
                (k, at)
            });
        crate::store::aged::date_undated(store, EVENTS_AGED_TREE, events, now)
    }

    /// Every stored event, of one session or all, optionally since a time (RFC 3339, UTC).
    pub fn read(
        store: &dyn crate::store::Store,
        session: Option<&str>,
        since: Option<&str>,
    ) -> Result<Vec<StoredEvent>, crate::store::StoreError> {
        let prefix = session
            .map(|s| format!("{s}\0").into_bytes())
            .unwrap_or_default();
        let mut out = Vec::new();
        for (_, bytes) in store.scan_prefix(EVENTS_TREE, &prefix)? {
            let Ok(event) = serde_json::from_slice::<StoredEvent>(&bytes) else {
                continue;
            };
            if since.is_some_and(|since| event.ts.as_str() < since) {
                continue;
            }
            out.push(event);
        }
        out.sort_by(|a, b| a.ts.cmp(&b.ts));
        Ok(out)
    }
}

impl EventSink for StoreEvents {
    fn record(&self, event: Event) {
        let ts = crate::clock::now_rfc3339_millis();
        let sequence = self
            .sequence
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut run = event.run.clone();
        let mut fields = match event.fields {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            other => {
                let mut map = serde_json::Map::new();
                map.insert("value".into(), other);
                map
            }
        };
        // The record's own keys win over same-named fields (which would not read back).
        for reserved in ["ts", "session", "type", "call_id", "tool"] {
            fields.remove(reserved);
        }
        if let Some(Value::String(id)) = fields.remove("run") {
            run = Some(id);
        }
        // Events whose emitter does not know the run (the classifier's usage) are labelled
        // with the session's active run, if any.
        if run.is_none() {
            run = self
                .journal
                .as_ref()
                .and_then(|j| j.active_run_id(&event.session));
        }
        let stored = StoredEvent {
            ts: ts.clone(),
            session: event.session.clone(),
            run,
            kind: event.kind.to_string(),
            call_id: event.call_id,
            tool: event.tool,
            fields,
        };
        let key = format!("{}\0{ts}\0{sequence:012}", event.session);
        if let Ok(bytes) = serde_json::to_vec(&stored) {
            let dated = crate::store::aged::key(crate::clock::now_secs(), key.as_bytes());
            // An audit write that fails is logged, never fatal to the call it describes.
            let written = self
                .store
                .put(EVENTS_AGED_TREE, &dated, b"")
                .and_then(|()| self.store.put(EVENTS_TREE, key.as_bytes(), &bytes));
            if let Err(e) = written {
                tracing::warn!("recording an event failed: {e}");
            }
        }
    }
}
