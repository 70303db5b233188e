//! What every part of a running service shares: the config and the store, the bridges (by
//! platform), each agent's shared parts, the approval records, the answers being awaited, and
//! the leak guard every outgoing text passes. Nothing here names a platform: what leaves for a
//! chat goes through the bridge of that chat's platform.

use super::bulk::BulkRows;
use super::gateway::{BridgeHandle, Gateway};
use crate::agent::runs::RunStore;
use crate::agent::setup::AgentParts;
use crate::approvals::{BulkApprovals, PendingApproval, PendingApprovals};
use crate::config::Config;
use crate::events::{Event, EventKind, EventSink, StoreEvents};
use crate::executor::approval::Answer;
use crate::policy::env::configured_secret_names;
use crate::policy::redact::Redactor;
use crate::store::Store;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;
use tollgate_surface::{
    BridgeErrorKind, CardOutcome, CardRef, CardView, ChatRef, Platform, PressHandle,
};

/// A question card waiting for its requester.
pub struct WaitingQuestion {
    pub session: String,
    pub requester: i64,
    pub choices: Vec<String>,
    pub card: CardRef,
    pub view: CardView,
    pub answer: oneshot::Sender<String>,
}

/// The service's shared state.
pub struct Shared {
    pub config: Arc<Config>,
    pub gateway: Gateway,
    /// What each agent's sessions share (one model client, one set of MCP servers).
    agents: BTreeMap<String, AgentParts>,
    pub store: Arc<dyn Store>,
    pub approvals: PendingApprovals,
    pub bulks: BulkApprovals,
    pub runs: RunStore,
    pub redactor: Redactor,
    audit: StoreEvents,
    /// Answers awaited, by card token: a press delivers here.
    pub waiters: Mutex<HashMap<String, oneshot::Sender<Answer>>>,
    /// Question cards awaited, by their key.
    pub questions: Mutex<HashMap<String, WaitingQuestion>>,
    /// Questions whose card is being posted (not in `questions` yet): key → (requester,
    /// session).
    pub questions_posting: Mutex<HashMap<String, (i64, String)>>,
    /// Each chat's "all N" row, kept by that chat's own task.
    pub bulk_rows: BulkRows,
    /// Notified each time a card's, an "Approve all" row's or a question's record learns where
    /// it was posted (or that it never will be): a press read while its own `sendMessage` was
    /// still being answered waits for it.
    pub cards_posted: tokio::sync::Notify,
    /// How many refusals of untrusted senders are audited (see `refusals.rs`).
    refusals: Mutex<super::refusals::RefusalBudgets>,
}

pub fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every critical section here is a single map operation: a poisoned map is still whole.
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    pub fn new(
        config: Arc<Config>,
        gateway: Gateway,
        store: Arc<dyn Store>,
    ) -> Result<Self, super::error::ServeError> {
        let mut agents = BTreeMap::new();
        for agent in gateway.agents() {
            if !agents.contains_key(agent) {
                agents.insert(agent.to_string(), AgentParts::new(&config, agent)?);
            }
        }
        Ok(Shared {
            redactor: Redactor::from_env_names(configured_secret_names(&config)),
            approvals: PendingApprovals::new(store.clone()),
            bulks: BulkApprovals::new(store.clone()),
            runs: RunStore::new(store.clone()),
            audit: StoreEvents::new(store.clone(), None),
            agents,
            config,
            gateway,
            store,
            waiters: Mutex::default(),
            questions: Mutex::default(),
            questions_posting: Mutex::default(),
            bulk_rows: BulkRows::default(),
            cards_posted: tokio::sync::Notify::new(),
            refusals: Mutex::default(),
        })
    }

    /// The shared parts of `agent` (one of the bridges' agents).
    #[must_use]
    pub fn parts(&self, agent: &str) -> Option<&AgentParts> {
        self.agents.get(agent)
    }

    /// Every agent's shared parts.
    pub fn all_parts(&self) -> impl Iterator<Item = &AgentParts> {
        self.agents.values()
    }

    /// The bridge of `platform`, if this service runs one.
    #[must_use]
    pub fn bridge(&self, platform: Platform) -> Option<&BridgeHandle> {
        self.gateway.get(platform)
    }

    /// A log line on stderr, with secrets taken out and control characters shown escaped (a
    /// command's ESC sequence must not repaint the operator's terminal).
    pub fn log(&self, line: &str) {
        let line =
            super::guard::guard_text(&self.redactor, line, tollgate_surface::text::Layout::Lines);
        // Inside a run, the line carries the run's span (its session and run ids).
        tracing::warn!(target: "tollgate::serve", "{line}");
    }

    /// An audit entry that belongs to no tool call (a stranger, a rejected press).
    pub fn audit(&self, kind: EventKind, session: &str, fields: Value) {
        self.audit.record(Event {
            kind,
            session: session.to_string(),
            run: None,
            call_id: String::new(),
            tool: String::new(),
            fields,
        });
    }

    /// An audit entry for a refused stranger or press, within the refusal budget: a flood
    /// writes a bounded number of entries, the rest counted (`refusals.rs`).
    pub fn audit_refusal(&self, kind: EventKind, session: &str, mut fields: Value) {
        use super::refusals::Refused;
        let refused = if kind == EventKind::PressRejected {
            Refused::Press
        } else {
            Refused::Stranger
        };
        let verdict = lock(&self.refusals).admit(refused, std::time::Instant::now());
        if verdict.left_out_before > 0 {
            self.audit(
                EventKind::RefusalsLeftOut,
                "",
                serde_json::json!({
                    "count": verdict.left_out_before,
                    "of": kind.as_str(),
                    "window_secs": super::refusals::WINDOW.as_secs(),
                }),
            );
        }
        if !verdict.write {
            return;
        }
        if verdict.last_in_window
            && let Value::Object(map) = &mut fields
        {
            map.insert(
                "note".into(),
                Value::from(
                    "refusal budget reached: further refusals this minute are counted, not written",
                ),
            );
        }
        self.audit(kind, session, fields);
    }

    /// A short notice to a chat (guarded by the bridge's wrapper, `guard.rs`); failures are
    /// logged, not fatal.
    pub async fn notice(&self, chat: &ChatRef, text: &str) {
        let Some(handle) = self.bridge(chat.platform) else {
            return;
        };
        if let Err(e) = handle.bridge.send_notice(chat, text).await {
            self.log(&format!("sending a notice to chat {}: {e}", chat.id));
        }
    }

    /// Sends a run's answer to its chat (guarded by the bridge's wrapper); whether that is
    /// settled — sent, or refused in a way sending again would not change (the chat is gone,
    /// the platform calls the message wrong). A network or platform failure is not: the answer
    /// is worth sending again after a restart.
    pub async fn answer(&self, chat: &ChatRef, markdown: &str) -> bool {
        let Some(handle) = self.bridge(chat.platform) else {
            return false;
        };
        match handle.bridge.send_answer(chat, markdown).await {
            Ok(()) => true,
            Err(e) => {
                self.log(&format!("sending an answer to chat {}: {e}", chat.id));
                !matches!(
                    e.kind,
                    tollgate_surface::BridgeErrorKind::Transient
                        | tollgate_surface::BridgeErrorKind::RateLimited { .. }
                )
            }
        }
    }

    /// Answers a press through its platform (guarded by the bridge's wrapper).
    pub async fn reply(&self, platform: Platform, handle: &PressHandle, text: &str, private: bool) {
        let Some(bridge) = self.bridge(platform) else {
            return;
        };
        if let Err(e) = bridge.bridge.answer_press(handle, text, private).await {
            self.log(&format!("answering a press: {e}"));
        }
    }

    /// Shows a card's outcome wherever it was posted, each copy through its own platform.
    pub async fn settle_view(&self, view: &CardView, at: &[CardRef], outcome: &CardOutcome) {
        for posted in at {
            let Some(handle) = self.bridge(posted.chat.platform) else {
                self.log(&format!(
                    "card {} is on {}, which this service does not run: left as it is",
                    posted.message_id,
                    posted.chat.platform.as_str()
                ));
                continue;
            };
            match handle.bridge.settle_card(posted, view, outcome).await {
                // Already showing this (an edit raced another): nothing to do.
                Err(e) if e.kind == BridgeErrorKind::NotModified => {}
                Err(e) => self.log(&format!("editing card {}: {e}", posted.message_id)),
                Ok(()) => {}
            }
        }
    }

    /// Shows how an approval ended on every copy of its card.
    pub async fn show_outcome(&self, record: &PendingApproval, outcome: &CardOutcome) {
        let Some(card) = &record.card else { return };
        self.settle_view(
            &CardView::Approval(card.clone()),
            &record.posted_to,
            outcome,
        )
        .await;
    }

    /// Hands an answer to the call waiting for it, if it is still waiting in this process.
    pub fn deliver(&self, token: &str, answer: Answer) {
        if let Some(waiter) = lock(&self.waiters).remove(token) {
            let _ = waiter.send(answer);
        }
    }
}
