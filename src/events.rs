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
    /// Whether events of `kind` are of any use to this sink: a sink that records some kinds
    /// only says so, and [`TeeEvents`] copies it no other.
    fn wants(&self, _kind: EventKind) -> bool {
        true
    }
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
        // A copy for the watcher only when it wants the kind: a run's start, usage and end
        // reach the audit log alone, without their fields copied at every turn.
        if self.watcher.wants(event.kind) {
            self.watcher.record(event.clone());
        }
        self.audit.record(event);
    }

    fn wants(&self, kind: EventKind) -> bool {
        self.audit.wants(kind) || self.watcher.wants(kind)
    }
}

/// Which run is active in a session, for events whose emitter does not know it (the run
/// engine implements it; the events module needs nothing else of it).
pub trait ActiveRuns: Send + Sync {
    fn active_run_id(&self, session: &str) -> Option<String>;
}

/// Events appended to the store, in order: the audit log.
pub struct StoreEvents {
    store: std::sync::Arc<dyn crate::store::Store>,
    journal: Option<std::sync::Arc<dyn ActiveRuns>>,
}

/// Orders the events of one millisecond, and keeps two of one session in one millisecond
/// under different keys: one count for the process, whichever [`StoreEvents`] records (serve
/// makes several: its own, each session worker's, each reminder's).
static SEQUENCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The store tree of events, in the order they were recorded: a key is the second it was
/// recorded at (`store::aged` layout) and then `session \0 ts \0 sequence`. One write an
/// event, and the events of sessions recording at once land together at the tree's end (keyed
/// by session first, each session's events had pages of their own, and a date index beside
/// them took a second write). Retention deletes the tree's head; a read since a time starts
/// there.
pub const EVENTS_TREE: &str = "events_by_time";
/// Where an older tollgate kept events (by session), and their date index: moved into
/// [`EVENTS_TREE`] when the store is opened.
const SESSION_EVENTS_TREE: &str = "events";
const SESSION_EVENTS_AGED_TREE: &str = "events_aged";
/// How much earlier than asked a read since a time starts: a key's second is read just after
/// its event's `ts`, and a clock stepped back between the two would date the key earlier.
const SINCE_MARGIN_SECS: u64 = 60;

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
        StoreEvents { store, journal }
    }

    /// Deletes the events recorded before `before` (seconds); how many.
    pub fn prune(
        store: &dyn crate::store::Store,
        before: u64,
    ) -> Result<usize, crate::store::StoreError> {
        let old = store.scan_before(EVENTS_TREE, &before.to_be_bytes())?;
        for (key, _) in &old {
            store.delete(EVENTS_TREE, key)?;
        }
        Ok(old.len())
    }

    /// Moves the events an older tollgate stored by session into [`EVENTS_TREE`], each at
    /// its own `ts` (at `now` if that cannot be read), and drops their date index; how many.
    /// Run at every opening (no marker): events an older binary wrote after a downgrade are
    /// moved too, and a store with none costs one empty read. An event moved again after an
    /// interruption lands under the same key, unless its `ts` cannot be read (then it is
    /// dated `now` again, and may be kept twice).
    pub fn move_into_time_order(
        store: &dyn crate::store::Store,
        now: u64,
    ) -> Result<usize, crate::store::StoreError> {
        let old = store.scan_prefix(SESSION_EVENTS_TREE, b"")?;
        for (key, bytes) in &old {
            let at = serde_json::from_slice::<StoredEvent>(bytes)
                .ok()
                .and_then(|e| crate::reminders::parse_rfc3339(&e.ts))
                .unwrap_or(now);
            store.put(EVENTS_TREE, &crate::store::aged::key(at, key), bytes)?;
            store.delete(SESSION_EVENTS_TREE, key)?;
        }
        for (key, _) in store.scan_prefix(SESSION_EVENTS_AGED_TREE, b"")? {
            store.delete(SESSION_EVENTS_AGED_TREE, &key)?;
        }
        if !old.is_empty() {
            store.flush()?;
        }
        Ok(old.len())
    }

    /// Every stored event, of one session or all, optionally at or after a time (RFC 3339),
    /// in time order. A read since a time starts at that point of the tree; of one session,
    /// only its events are decoded (picked by key), though the log is read through.
    pub fn read(
        store: &dyn crate::store::Store,
        session: Option<&str>,
        since: Option<&str>,
    ) -> Result<Vec<StoredEvent>, crate::store::StoreError> {
        let since = since.and_then(millis_of);
        let rows = match since {
            Some(at) => {
                let secs = u64::try_from(at.div_euclid(1_000)).unwrap_or(0);
                let start = secs.saturating_sub(SINCE_MARGIN_SECS).to_be_bytes();
                store.scan_from(EVENTS_TREE, &start)?
            }
            None => store.scan_prefix(EVENTS_TREE, b"")?,
        };
        let owner = session.map(|s| format!("{s}\0").into_bytes());
        let mut out = Vec::new();
        for (key, bytes) in rows {
            if let Some(owner) = &owner
                && !key.get(8..).is_some_and(|k| k.starts_with(owner))
            {
                continue;
            }
            let Ok(event) = serde_json::from_slice::<StoredEvent>(&bytes) else {
                continue;
            };
            // By time, not text: `…00.123Z` is after `…00Z`. An event whose time cannot
            // be read is shown rather than hidden.
            if let (Some(since), Some(at)) = (since, millis_of(&event.ts))
                && at < since
            {
                continue;
            }
            // Events of one millisecond are in the order recorded: the key ends with the
            // process's sequence number.
            let sequence = key.rsplit(|b| *b == 0).next().unwrap_or_default().to_vec();
            out.push((event, sequence));
        }
        out.sort_by(|(a, a_seq), (b, b_seq)| a.ts.cmp(&b.ts).then_with(|| a_seq.cmp(b_seq)));
        Ok(out.into_iter().map(|(event, _)| event).collect())
    }
}

/// Milliseconds since the epoch of an RFC 3339 time.
#[must_use]
pub fn millis_of(text: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(text.trim())
        .ok()
        .map(|t| t.timestamp_millis())
}

impl EventSink for StoreEvents {
    fn record(&self, event: Event) {
        let ts = crate::clock::now_rfc3339_millis();
        let sequence = SEQUENCE.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
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
        let what = format!("{}\0{ts}\0{sequence:012}", event.session);
        if let Ok(bytes) = serde_json::to_vec(&stored) {
            let key = crate::store::aged::key(crate::clock::now_secs(), what.as_bytes());
            // An audit write that fails is logged, never fatal to the call it describes.
            if let Err(e) = self.store.put(EVENTS_TREE, &key, &bytes) {
                tracing::warn!("recording an event failed: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A watcher that wants tool starts only.
    #[derive(Default)]
    struct ToolStarts(MemoryEvents);

    impl EventSink for ToolStarts {
        fn record(&self, event: Event) {
            self.0.record(event);
        }

        fn wants(&self, kind: EventKind) -> bool {
            kind == EventKind::ToolStarted
        }
    }

    fn event(kind: EventKind) -> Event {
        Event {
            kind,
            session: "s".into(),
            run: None,
            call_id: String::new(),
            tool: "shell".into(),
            fields: Value::Null,
        }
    }

    fn kinds(events: Vec<Event>) -> Vec<EventKind> {
        events.into_iter().map(|e| e.kind).collect()
    }

    #[test]
    fn a_tee_gives_the_watcher_only_the_kinds_it_wants_and_the_audit_log_all() {
        let audit = Arc::new(MemoryEvents::default());
        let watcher = Arc::new(ToolStarts::default());
        let tee = TeeEvents {
            audit: audit.clone(),
            watcher: watcher.clone(),
        };
        let all = [
            EventKind::RunStarted,
            EventKind::ToolStarted,
            EventKind::LlmUsage,
        ];
        for kind in all {
            tee.record(event(kind));
        }
        assert_eq!(kinds(audit.all()), all);
        assert_eq!(kinds(watcher.0.all()), [EventKind::ToolStarted]);
        assert!(tee.wants(EventKind::RunStarted), "the audit log wants it");
    }
}
