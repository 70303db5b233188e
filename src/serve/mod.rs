//! `tollgate serve`: the chat bridges at work, behind one seam. Each bridge (a crate under
//! `bridges/`, implementing `tollgate_surface::Bridge`) hands its events into one bounded
//! channel; the runtime routes them — messages to their session's inbox (one session stays in
//! order, sessions run side by side), presses to bounded tasks — and everything that leaves for a
//! chat goes back through the bridge of that chat's platform. No file here names a platform.
//!
//! - [`shared`]: what every part shares; [`gateway`] and [`settings`]: the bridges and their
//!   config, read one way for every platform
//! - [`dispatch`]: events to inboxes and tasks; [`inbound`]: a message's way in;
//!   [`commands`]: `/help` … `/allowlist`
//! - [`sessions`] and [`worker`]: a session's queue and runs; [`progress`]: typing and progress
//! - [`cards`]: prompts as cards; [`presses`]: what a press does; [`bulk`]: "Approve all N"
//! - [`attachments`], [`rate`]: files in, and the per-user rate limit
//! - [`recovery`]: what a start does with what the last process left

pub mod attachments;
pub mod bulk;
pub mod cards;
pub mod commands;
pub mod dials;
pub mod dispatch;
pub mod error;
pub mod gateway;
pub mod guard;
pub mod inbound;
pub mod press_lanes;
pub mod presses;
pub mod progress;
pub mod rate;
pub mod recovery;
pub mod refusals;
pub mod reminders;
pub mod requester;
pub mod sessions;
pub mod settings;
pub mod shared;
pub mod worker;

use crate::config::Config;
use crate::store::Store;
use dispatch::Dispatcher;
use gateway::Gateway;
use sessions::Service;
use shared::Shared;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, mpsc};
use tollgate_surface::{Bridge, BridgeEvent, EventSender, Platform};

/// Events the bridges may hand in before one waits for the runtime (back-pressure: a bridge
/// waits, nothing is dropped). Routing takes microseconds, so this only fills in a burst.
const EVENT_QUEUE: usize = 1024;

/// How often (at most) idle workers are let go and freed memory handed back.
const HOUSEKEEPING: Duration = Duration::from_secs(10);

/// Hands memory glibc's malloc freed back to the system: it keeps freed blocks in its arenas,
/// so without this a burst would hold its peak RSS forever. The binary's Rust allocations go
/// through jemalloc, whose own thread gives pages back (`src/main.rs`); glibc still serves C
/// code, SQLite's page cache and statements among it. It walks the free lists only:
/// milliseconds, every few seconds.
fn release_freed_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only walks the allocator's own free lists; it takes no pointers.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Runs `bridges` (at most one per platform, each with its config section) until `shutdown`
/// completes or every bridge has stopped; `allowlists_changed` is notified when the allowlists
/// were changed from outside (the control socket).
pub async fn run(
    config: Arc<Config>,
    store: Arc<dyn Store>,
    bridges: Vec<Arc<dyn Bridge>>,
    allowlists_changed: Arc<Notify>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), error::ServeError> {
    let gateway = Gateway::new(&config, bridges)?;
    let shared = Arc::new(Shared::new(config, gateway, store)?);
    for handle in shared.gateway.iter() {
        if let Err(e) = handle.bridge.register_commands(&commands::COMMANDS).await {
            shared.log(&format!(
                "registering the command menu on {}: {e}",
                handle.settings.platform.as_str()
            ));
        }
    }
    let service = Arc::new(Service::new(shared.clone()));
    recovery::recover(&service).await;
    let mut background = tokio::task::JoinSet::new();
    background.spawn(recovery::expire_periodically(shared.clone()));
    {
        let service = service.clone();
        background.spawn(async move {
            loop {
                allowlists_changed.notified().await;
                service.reload_allowlists();
            }
        });
    }
    background.spawn(housekeeping(service.clone()));
    background.spawn(prune_periodically(service.clone()));
    {
        let log_to = shared.clone();
        background.spawn(crate::agent::scheduler::run(
            crate::reminders::Reminders::new(shared.store.clone()),
            Arc::new(reminders::ServeReminders {
                service: service.clone(),
            }),
            crate::clock::now_secs,
            crate::agent::scheduler::POLL,
            move |line| log_to.log(line),
        ));
    }
    let (events, mut inbox) = mpsc::channel::<(Platform, BridgeEvent)>(EVENT_QUEUE);
    for handle in shared.gateway.iter() {
        let (bridge, shared) = (handle.bridge.clone(), shared.clone());
        let sender = EventSender::new(bridge.platform(), events.clone());
        background.spawn(async move {
            let platform = bridge.platform().as_str();
            match bridge.listen(sender).await {
                Ok(()) => shared.log(&format!("the {platform} bridge stopped listening")),
                Err(e) => shared.log(&format!("the {platform} bridge stopped: {e}")),
            }
        });
    }
    // Only the listeners hold senders now: when they all end, routing ends.
    drop(events);
    let dispatcher = Dispatcher::new(service.clone());
    let routing = async {
        while let Some((from, event)) = inbox.recv().await {
            // A bridge speaks for its own platform only: an event naming another (whose admins
            // it would be judged by) is refused.
            if event_platform(&event) != from {
                shared.log(&format!(
                    "the {} bridge handed in an event of another platform: dropped",
                    from.as_str()
                ));
                continue;
            }
            dispatcher.route(event);
        }
    };
    tokio::select! {
        () = routing => {}
        () = shutdown => {}
    }
    background.abort_all();
    for parts in shared.all_parts() {
        if let Some(mcp) = &parts.mcp {
            mcp.shutdown().await;
        }
    }
    Ok(())
}

/// The platform an event says it comes from.
fn event_platform(event: &BridgeEvent) -> Platform {
    match event {
        BridgeEvent::Message(m) => m.chat.platform,
        BridgeEvent::Press(p) => p.chat.platform,
        BridgeEvent::Command(c) => c.chat.platform,
    }
}

/// Lets idle workers go and hands freed memory back, every few seconds.
/// Retention (`[store] retain_days`): a pass at start, then every hour, on the blocking pool
/// (it deletes through the store).
async fn prune_periodically(service: Arc<Service>) {
    let shared = service.shared.clone();
    loop {
        let beside = service.clone();
        let pruned = tokio::task::spawn_blocking(move || {
            let pass = &beside.shared;
            crate::retention::prune_beside_workers(
                &pass.store,
                &pass.config,
                crate::clock::now_secs(),
                &|session| beside.remember_if_live(session),
            )
        })
        .await;
        match pruned {
            Ok(Ok(report)) if !report.is_empty() => shared.log(&report.to_string()),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => shared.log(&format!("pruning the store: {e}")),
            Err(e) => shared.log(&format!("pruning the store stopped: {e}")),
        }
        tokio::time::sleep(crate::retention::EVERY).await;
    }
}

async fn housekeeping(service: Arc<Service>) {
    let shortest = service
        .shared
        .gateway
        .iter()
        .map(|h| h.settings.idle_session_secs)
        .min()
        .unwrap_or(HOUSEKEEPING.as_secs());
    let every = HOUSEKEEPING.min(Duration::from_secs(shortest.max(1)));
    loop {
        tokio::time::sleep(every).await;
        let evicted = service.evict_idle();
        for handle in service.shared.gateway.iter() {
            shared::lock(&handle.rate).forget_quiet(std::time::Instant::now());
        }
        if evicted > 0 {
            service.shared.log(&format!(
                "let go of {evicted} session worker(s) idle past idle_session_secs (their state is stored)"
            ));
        }
        release_freed_memory();
    }
}
