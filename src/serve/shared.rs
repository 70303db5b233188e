//! What every part of a running Telegram bridge shares: the bot, the config, the store's
//! approval records, the answers being awaited, and the leak guard every outgoing text passes.

use crate::agent::runs::RunStore;
use crate::agent::setup::AgentParts;
use crate::approvals::{BulkApprovals, PendingApproval, PendingApprovals};
use crate::config::{AccessId, Config, TelegramConfig};
use crate::events::{Event, EventSink, StoreEvents};
use crate::executor::approval::Answer;
use crate::policy::redact::Redactor;
use crate::store::Store;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;
use tollgate_surface::{CardOutcome, CardRef, ChatRef};
use tollgate_telegram::bot::TelegramBot;
use tollgate_telegram::card::resolved_html;

/// A question card waiting for its requester.
pub struct WaitingQuestion {
    pub session: String,
    pub requester: i64,
    pub choices: Vec<String>,
    pub card: Option<CardRef>,
    pub html: String,
    pub answer: oneshot::Sender<String>,
}

/// The bridge's shared state.
pub struct Shared {
    pub config: Arc<Config>,
    pub telegram: TelegramConfig,
    pub agent: String,
    /// What the agent's sessions share (one model client for all of them).
    pub parts: AgentParts,
    pub store: Arc<dyn Store>,
    pub bot: Arc<TelegramBot>,
    pub approvals: PendingApprovals,
    pub bulks: BulkApprovals,
    pub runs: RunStore,
    pub redactor: Redactor,
    audit: StoreEvents,
    /// Answers awaited, by card token: a press delivers here.
    pub waiters: Mutex<HashMap<String, oneshot::Sender<Answer>>>,
    /// Question cards awaited, by their token.
    pub questions: Mutex<HashMap<String, WaitingQuestion>>,
    /// Per chat: the "all N" row shown now (its token and where it is).
    pub bulk_rows: tokio::sync::Mutex<HashMap<i64, (String, CardRef)>>,
}

pub fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every critical section here is a single map operation: a poisoned map is still whole.
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    pub fn new(
        config: Arc<Config>,
        telegram: TelegramConfig,
        agent: String,
        store: Arc<dyn Store>,
        bot: Arc<TelegramBot>,
    ) -> Result<Self, String> {
        Ok(Shared {
            parts: AgentParts::new(&config, &agent)?,
            redactor: Redactor::from_config(&config),
            approvals: PendingApprovals::new(store.clone()),
            bulks: BulkApprovals::new(store.clone()),
            runs: RunStore::new(store.clone()),
            audit: StoreEvents::new(store.clone(), None),
            config,
            telegram,
            agent,
            store,
            bot,
            waiters: Mutex::default(),
            questions: Mutex::default(),
            bulk_rows: tokio::sync::Mutex::default(),
        })
    }

    /// One of this bridge's `admins` (tollgate's list, not the chat's administrators).
    #[must_use]
    pub fn is_admin(&self, user: i64) -> bool {
        self.telegram.admins.contains(&AccessId::Id(user))
    }

    /// The admins' user ids (a private chat's id is its user's id).
    #[must_use]
    pub fn admin_ids(&self) -> Vec<i64> {
        self.telegram
            .admins
            .iter()
            .filter_map(|a| match a {
                AccessId::Id(id) => Some(*id),
                AccessId::Anyone => None,
            })
            .collect()
    }

    /// A log line on stderr, with secrets taken out.
    pub fn log(&self, line: &str) {
        eprintln!("tollgate serve: {}", self.redactor.redact(line));
    }

    /// An audit entry that belongs to no tool call (a stranger, a rejected press).
    pub fn audit(&self, kind: &'static str, session: &str, fields: Value) {
        self.audit.record(Event {
            kind,
            session: session.to_string(),
            call_id: String::new(),
            tool: String::new(),
            fields,
        });
    }

    /// A short notice to a chat (secrets taken out); failures are logged, not fatal.
    pub async fn notice(&self, chat: &ChatRef, text: &str) {
        if let Err(e) = self
            .bot
            .send_notice(chat, &self.redactor.redact(text))
            .await
        {
            self.log(&format!("sending a notice to chat {}: {e}", chat.id));
        }
    }

    /// Edits every copy of a card to show how it ended, buttons removed.
    pub async fn show_outcome(&self, record: &PendingApproval, outcome: &CardOutcome) {
        let Some(card) = &record.card else { return };
        let html = resolved_html(&tollgate_telegram::card::render_card(card).html, outcome);
        for posted in &record.posted_to {
            if let Err(e) = self
                .bot
                .edit_card(posted.chat.id, posted.message_id, &html, &[])
                .await
            {
                self.log(&format!("editing card {}: {e}", posted.message_id));
            }
        }
    }

    /// Hands an answer to the call waiting for it, if it is still waiting in this process.
    pub fn deliver(&self, token: &str, answer: Answer) {
        if let Some(waiter) = lock(&self.waiters).remove(token) {
            let _ = waiter.send(answer);
        }
    }
}
