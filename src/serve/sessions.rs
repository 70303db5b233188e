//! The live sessions of a running service: each chat session's worker, started on its first
//! message with the agent of its platform's bridge, let go when idle (its state is stored), and
//! the chat each session was last seen in (to resume its run after a restart).

use super::shared::{Shared, lock};
use super::worker::SessionWorker;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tollgate_surface::ChatRef;

/// Where a session's chat is remembered, to resume its run after a restart (retention forgets
/// it with the rest of an idle session).
pub const SESSION_CHATS_TREE: &str = "bridge_sessions";

/// Idle workers kept at most. Past this (by an eighth, so that the sort is paid once per
/// many starts) the longest idle are let go before their `idle_session_secs`: a burst of new
/// chats would otherwise keep every worker it started that long, a few KiB each, and the
/// heap they leave behind when let go grows with the burst.
pub const IDLE_WORKERS_KEPT: usize = 1024;

/// How long a worker must have been idle before the cap lets it go: one just started is in the
/// map before its first message is queued (its start still dates the session and reads its
/// transcript), and one that just answered may be written to again at once.
pub const IDLE_BEFORE_LET_GO: std::time::Duration = std::time::Duration::from_secs(1);

/// Notes a worker started (`+1`) or let go (`-1`) in the `/metrics` gauge of its platform.
fn live_sessions(worker: &SessionWorker, change: i64) {
    crate::metrics::METRICS
        .live_sessions
        .get_or_create(&crate::metrics::labels([(
            "platform",
            worker.chat.platform.as_str(),
        )]))
        .inc_by(change);
}

/// The running service: what is shared, and the live session workers.
pub struct Service {
    pub shared: Arc<Shared>,
    workers: Mutex<HashMap<String, Arc<SessionWorker>>>,
    /// [`Service::reload_allowlists`] calls so far. A worker reads its allowlists before it is
    /// in the map; if a reload began meanwhile, that reload may have looked at the map without
    /// it, so the worker rereads them once it is in.
    allowlist_reloads: AtomicU64,
    /// Live workers past which a start lets the longest idle go: an eighth above the count
    /// the last such pass (or eviction) left, so that the map is not scanned at every start
    /// while many workers are busy.
    let_go_above: std::sync::atomic::AtomicUsize,
}

/// A worker's start under way; its end (however the start ends) makes the worker idle.
struct StartUnderWay(Arc<SessionWorker>);

impl Drop for StartUnderWay {
    fn drop(&mut self) {
        self.0.started();
    }
}

/// [`Service::let_go_above`] once `live` workers are left.
fn let_go_above(live: usize) -> usize {
    live.max(IDLE_WORKERS_KEPT) + IDLE_WORKERS_KEPT / 8
}

impl Service {
    /// The service, with each agent's workspace root made: a session's own directory is
    /// made only when something first needs it (a tool call, a file sent in the chat), and
    /// its path, under an existing root, resolves the same before and after.
    #[must_use]
    pub fn new(shared: Arc<Shared>) -> Self {
        for agent in shared.gateway.agents() {
            if let Some(agent) = shared.config.agents.get(agent) {
                let _ = std::fs::create_dir_all(crate::gate::workspace_for(agent, None));
            }
        }
        Service {
            shared,
            workers: Mutex::default(),
            allowlist_reloads: AtomicU64::new(0),
            let_go_above: let_go_above(0).into(),
        }
    }

    /// The working directory of session `key` of `agent` (created on first use).
    #[must_use]
    pub fn workspace(&self, agent: &str, key: &str) -> PathBuf {
        match self.shared.config.agents.get(agent) {
            Some(agent) => {
                let dir = crate::gate::workspace_for(agent, Some(key));
                let _ = std::fs::create_dir_all(&dir);
                // Asked again now that it exists: only an existing path resolves canonically.
                crate::gate::workspace_for(agent, Some(key))
            }
            None => PathBuf::from("."),
        }
    }

    /// The session's worker, started on its first message.
    pub fn session(
        &self,
        key: &str,
        chat: &ChatRef,
    ) -> Result<Arc<SessionWorker>, super::error::ServeError> {
        if let Some(worker) = lock(&self.workers).get(key) {
            return Ok(worker.clone());
        }
        let agent = self
            .shared
            .bridge(chat.platform)
            .map(|h| h.settings.agent.clone())
            .ok_or(super::error::ServeError::BridgeNotRunning(
                chat.platform.as_str(),
            ))?;
        // A start reads the session's grants, dials and date: stepped aside from the async
        // worker once for all of them, instead of at each read.
        crate::step_aside::step_aside(|| self.start(key, chat, &agent))
    }

    /// Starts session `key`'s worker (or finds the one another message started meanwhile).
    fn start(
        &self,
        key: &str,
        chat: &ChatRef,
        agent: &str,
    ) -> Result<Arc<SessionWorker>, super::error::ServeError> {
        let reloads = self.allowlist_reloads.load(Ordering::SeqCst);
        let worker = SessionWorker::start(&self.shared, key, chat.clone(), agent)?;
        let _under_way = StartUnderWay(worker.clone());
        // In the map before the session is dated and its chat remembered: a retention pass
        // that claimed the session meanwhile and deletes the chat after this worker wrote it
        // then finds the worker and writes the chat back (`Service::remember_if_live`).
        {
            let mut workers = lock(&self.workers);
            if let Some(live) = workers.get(key).cloned() {
                // Started by another message meanwhile: this one's task is ended, or it would
                // wait for work forever outside the map that lets idle workers go.
                drop(workers);
                worker.close_unused();
                return Ok(live);
            }
            workers.insert(key.to_string(), worker.clone());
            live_sessions(&worker, 1);
            if workers.len() > self.let_go_above.load(Ordering::SeqCst) {
                let_go_longest_idle(&mut workers);
                self.let_go_above
                    .store(let_go_above(workers.len()), Ordering::SeqCst);
            }
        }
        // A reload that began after this worker read its allowlists (a revoke over the control
        // socket) may have missed it: it counted itself before looking at the map, and this
        // worker is in the map now, so one of the two rereads them.
        if self.allowlist_reloads.load(Ordering::SeqCst) != reloads {
            self.reload_allowlists_of(&worker);
        }
        // Dated through the store the worker's runner dates through: the turn this message
        // starts finds the date in that store's slot instead of reading it again.
        if let Err(e) = self.date_and_remember(&worker.assembled.runner.runs, &worker) {
            self.shared
                .log(&format!("session {key}: its chat is not remembered: {e}"));
        }
        // The first turn's transcript, read while this start is off the async worker anyway:
        // the runner keeps it, and the turn does not step aside a second time to read it. A
        // failed read is not kept; the turn reads again and reports it.
        let _ = worker.assembled.runner.runs.transcript(key);
        Ok(worker)
    }

    /// Dates `worker`'s session through `runs`, then remembers its chat: dated first, so a
    /// chat that only ever sends commands is pruned like one that talked (a kill can keep any
    /// prefix of these writes, and an undated entry would never go).
    fn date_and_remember(
        &self,
        runs: &crate::agent::runs::RunStore,
        worker: &SessionWorker,
    ) -> Result<(), crate::store::StoreError> {
        runs.note_activity(&worker.key, &worker.agent, crate::clock::now_secs())?;
        match serde_json::to_vec(&worker.chat) {
            Ok(bytes) => self
                .shared
                .store
                .put(SESSION_CHATS_TREE, worker.key.as_bytes(), &bytes),
            Err(e) => {
                self.shared
                    .log(&format!("session {}: its chat: {e}", worker.key));
                Ok(())
            }
        }
    }

    /// If session `key` has a live worker, forgets the transcript it kept, dates the session and
    /// remembers its chat (where a run it starts would resume): retention calls this for each
    /// session it prunes, right after deleting the session's transcript and chat (a turn reading
    /// its kept transcript between the two deletes and this still writes it back). Dated through
    /// the store, not the worker's dating slot, which may still hold the date the pass took (the
    /// worker's later turns keep the new date within the hour, as they would the old one). Says
    /// whether it had a live worker: retention keeps that session's workspace.
    pub fn remember_if_live(&self, key: &str) -> Result<bool, crate::store::StoreError> {
        let Some(worker) = lock(&self.workers).get(key).cloned() else {
            return Ok(false);
        };
        // The pass deleted the transcript: the worker's next turn starts a new one, as it
        // would have after a restart.
        worker.assembled.runner.runs.forget_kept_transcript();
        self.date_and_remember(
            &crate::agent::runs::RunStore::new(self.shared.store.clone()),
            &worker,
        )?;
        Ok(true)
    }

    /// How many workers are live.
    #[must_use]
    pub fn live(&self) -> usize {
        lock(&self.workers).len()
    }

    /// Lets go of workers idle for longer than their bridge's `idle_session_secs`.
    pub fn evict_idle(&self) -> usize {
        let mut workers = lock(&self.workers);
        let before = workers.len();
        workers.retain(|_, worker| {
            let evicted = worker.evict_if_idle();
            if evicted {
                live_sessions(worker, -1);
            }
            !evicted
        });
        self.let_go_above
            .store(let_go_above(workers.len()), Ordering::SeqCst);
        // Give back the room of the workers let go (after a burst of new chats the map would
        // otherwise keep its peak size).
        if workers.capacity() > 2 * workers.len() + 64 {
            workers.shrink_to_fit();
        }
        before - workers.len()
    }

    /// Every live session rereads its allowlists from the store (after a change made over the
    /// control socket), so a revoke takes effect at once, not when the session is next started.
    pub fn reload_allowlists(&self) {
        // Counted before the map is read: a worker starting meanwhile sees the count move.
        self.allowlist_reloads.fetch_add(1, Ordering::SeqCst);
        let workers: Vec<Arc<SessionWorker>> = lock(&self.workers).values().cloned().collect();
        for worker in workers {
            self.reload_allowlists_of(&worker);
        }
    }

    fn reload_allowlists_of(&self, worker: &SessionWorker) {
        if let Err(e) = worker.assembled.session.reload_allowlists() {
            self.shared.log(&format!(
                "session {}: rereading its allowlists: {e}",
                worker.key
            ));
        }
    }

    /// Forgets a worker that was evicted (the next message starts a fresh one).
    pub fn forget(&self, key: &str, worker: &Arc<SessionWorker>) {
        let mut workers = lock(&self.workers);
        if workers.get(key).is_some_and(|w| Arc::ptr_eq(w, worker)) {
            workers.remove(key);
            live_sessions(worker, -1);
        }
    }

    /// The chat a session was last seen in.
    pub fn remembered_chat(&self, key: &str) -> Option<ChatRef> {
        self.shared
            .store
            .get(SESSION_CHATS_TREE, key.as_bytes())
            .ok()
            .flatten()
            .and_then(|b| serde_json::from_slice(&b).ok())
    }
}

/// Lets go of the longest idle workers until at most [`IDLE_WORKERS_KEPT`] idle ones are live
/// (or none idle for [`IDLE_BEFORE_LET_GO`] is left); busy workers do not count.
fn let_go_longest_idle(workers: &mut HashMap<String, Arc<SessionWorker>>) {
    let idle: Vec<(std::time::Instant, String)> = workers
        .iter()
        .filter_map(|(key, worker)| worker.idle_since().map(|at| (at, key.clone())))
        .collect();
    let excess = idle.len().saturating_sub(IDLE_WORKERS_KEPT);
    let mut idle: Vec<_> = idle
        .into_iter()
        .filter(|(at, _)| at.elapsed() >= IDLE_BEFORE_LET_GO)
        .collect();
    idle.sort_unstable();
    for (_, key) in idle.into_iter().take(excess) {
        // Still idle now (a message queued since is kept): let go at once.
        if let Some(worker) = workers.get(&key)
            && worker.evict_if_idle_for(IDLE_BEFORE_LET_GO)
        {
            live_sessions(worker, -1);
            workers.remove(&key);
        }
    }
}
