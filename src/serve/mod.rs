//! `tollgate serve`: the chat bridges at work. Telegram so far: updates are polled and handed
//! to the router (access, mention gating, rate limit) and to per-session workers that run one
//! turn at a time; approvals become durable cards whose buttons only the bridge's admins can
//! press. The bridge crate only translates and renders; who may do what is decided here.
//!
//! - [`shared`]: what every part shares (bot, config, approval records, awaited answers)
//! - [`inbound`]: a message's way in; [`commands`]: `/help` … `/allowlist`
//! - [`worker`]: a session's queue and runs; [`progress`]: typing and the progress message
//! - [`cards`]: prompts as cards; [`presses`]: what a press does; [`bulk`]: "Approve all N"
//! - [`attachments`], [`rate`]: files in, and the per-user rate limit
//! - [`recovery`]: what a start does with what the last process left

pub mod attachments;
pub mod bulk;
pub mod cards;
pub mod commands;
pub mod dials;
pub mod inbound;
pub mod presses;
pub mod progress;
pub mod rate;
pub mod recovery;
pub mod shared;
pub mod worker;

use crate::config::Config;
use crate::store::Store;
use shared::{Shared, lock};
use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tollgate_surface::ChatRef;
use tollgate_telegram::bot::TelegramBot;
use tollgate_telegram::updates::TelegramUpdate;
use worker::SessionWorker;

/// How long one `getUpdates` long-poll waits.
const POLL_WAIT: Duration = Duration::from_secs(25);

/// How often (at most) idle workers are let go and freed memory handed back.
const HOUSEKEEPING: Duration = Duration::from_secs(10);

/// Where a session's chat is remembered, to resume its run after a restart.
const SESSION_CHATS_TREE: &str = "bridge_sessions";

/// The running Telegram bridge.
pub struct Service {
    pub shared: Arc<Shared>,
    sessions: Mutex<HashMap<String, Arc<SessionWorker>>>,
    rate: Mutex<rate::RateLimiter>,
}

impl Service {
    #[must_use]
    pub fn new(shared: Arc<Shared>) -> Self {
        let rate = rate::RateLimiter::new(shared.telegram.rate_limit_per_minute);
        Service {
            shared,
            sessions: Mutex::default(),
            rate: Mutex::new(rate),
        }
    }

    /// The session's working directory (created on first use).
    #[must_use]
    pub fn workspace(&self, key: &str) -> PathBuf {
        match self.shared.config.agents.get(&self.shared.agent) {
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
    pub fn session(&self, key: &str, chat: &ChatRef) -> Result<Arc<SessionWorker>, String> {
        if let Some(worker) = lock(&self.sessions).get(key) {
            return Ok(worker.clone());
        }
        let _ = self.workspace(key);
        let worker = SessionWorker::start(&self.shared, key, chat.clone())?;
        if let Ok(bytes) = serde_json::to_vec(chat) {
            let _ = self
                .shared
                .store
                .insert(SESSION_CHATS_TREE, key.as_bytes(), &bytes);
        }
        Ok(lock(&self.sessions)
            .entry(key.to_string())
            .or_insert(worker)
            .clone())
    }

    /// Lets go of workers idle for longer than `idle_session_secs` (their state is stored).
    pub fn evict_idle(&self) -> usize {
        let idle = Duration::from_secs(self.shared.telegram.idle_session_secs);
        let mut sessions = lock(&self.sessions);
        let before = sessions.len();
        sessions.retain(|_, worker| !worker.evict_if_idle(idle));
        before - sessions.len()
    }

    /// Every live session rereads its allowlists from the store (after a change made over the
    /// control socket), so a revoke takes effect at once, not when the session is next started.
    pub fn reload_allowlists(&self) {
        let workers: Vec<Arc<SessionWorker>> = lock(&self.sessions).values().cloned().collect();
        for worker in workers {
            if let Err(e) = worker.assembled.session.reload_allowlists() {
                self.shared.log(&format!(
                    "session {}: rereading its allowlists: {e}",
                    worker.key
                ));
            }
        }
    }

    /// Forgets a worker that was evicted (the next message starts a fresh one).
    pub fn forget(&self, key: &str, worker: &Arc<SessionWorker>) {
        let mut sessions = lock(&self.sessions);
        if sessions.get(key).is_some_and(|w| Arc::ptr_eq(w, worker)) {
            sessions.remove(key);
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

/// Hands freed memory back to the system. glibc keeps freed blocks in its arenas, so without
/// this a burst of messages (each model request is built as JSON) or of sessions would hold
/// its peak RSS forever. It walks the free lists only: milliseconds, every few seconds.
fn release_freed_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only walks the allocator's own free lists; it takes no pointers.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Which agent answers on Telegram: the one named, or the only one.
pub fn telegram_agent(config: &Config) -> Result<String, String> {
    let telegram = config
        .telegram
        .as_ref()
        .ok_or("there is no [telegram] section")?;
    match &telegram.agent {
        Some(name) if config.agents.contains_key(name) => Ok(name.clone()),
        Some(name) => Err(format!("[telegram] agent `{name}` is not configured")),
        None if config.agents.len() == 1 => {
            Ok(config.agents.keys().next().cloned().unwrap_or_default())
        }
        None => Err("several agents are configured: set `agent` under [telegram]".into()),
    }
}

/// Runs the Telegram bridge until `shutdown` completes; `allowlists_changed` is notified when
/// the allowlists were changed from outside (the control socket).
pub async fn run_telegram(
    config: Arc<Config>,
    store: Arc<dyn Store>,
    bot: TelegramBot,
    allowlists_changed: Arc<tokio::sync::Notify>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), String> {
    let telegram = config
        .telegram
        .clone()
        .ok_or("there is no [telegram] section")?;
    let agent = telegram_agent(&config)?;
    let bot = Arc::new(bot);
    let shared = Arc::new(Shared::new(config, telegram, agent, store, bot.clone())?);
    if let Err(e) = bot.set_commands(&commands::COMMANDS).await {
        shared.log(&format!("registering the command menu: {e}"));
    }
    let service = Arc::new(Service::new(shared.clone()));
    recovery::recover(&service).await;
    tokio::spawn(recovery::expire_periodically(shared.clone()));
    {
        let service = service.clone();
        tokio::spawn(async move {
            loop {
                allowlists_changed.notified().await;
                service.reload_allowlists();
            }
        });
    }
    {
        let service = service.clone();
        tokio::spawn(async move {
            let idle = service.shared.telegram.idle_session_secs;
            let every = HOUSEKEEPING.min(Duration::from_secs(idle.max(1)));
            loop {
                tokio::time::sleep(every).await;
                let evicted = service.evict_idle();
                if evicted > 0 {
                    service.shared.log(&format!(
                        "let go of {evicted} session worker(s) idle for over {idle} s (their state is stored)"
                    ));
                }
                release_freed_memory();
            }
        });
    }
    let poller = {
        let service = service.clone();
        async move {
            let mut failures = 0u32;
            loop {
                match service.shared.bot.poll(POLL_WAIT).await {
                    Ok(updates) => {
                        failures = 0;
                        for update in updates {
                            let service = service.clone();
                            dispatch(service, update).await;
                        }
                    }
                    Err(e) => {
                        failures = failures.saturating_add(1);
                        service.shared.log(&format!("polling Telegram: {e}"));
                        let wait = e.retry_after_secs.unwrap_or(u64::from(failures.min(30)));
                        tokio::time::sleep(Duration::from_secs(wait)).await;
                    }
                }
            }
        }
    };
    tokio::select! {
        () = poller => {}
        () = shutdown => {}
    }
    Ok(())
}

/// Messages are handled in arrival order on the poller (they only queue work, so one chat's
/// messages keep their order); presses run at once on their own task.
async fn dispatch(service: Arc<Service>, update: TelegramUpdate) {
    match update {
        TelegramUpdate::Message(message) => inbound::handle_message(&service, message).await,
        TelegramUpdate::Press(press) => {
            tokio::spawn(async move { presses::handle_press(&service.shared, press).await });
        }
    }
}
