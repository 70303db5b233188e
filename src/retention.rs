//! Retention: what the store keeps, and for how long (`[store] retain_days`). Settled
//! approvals, used "Approve all" rows, finished runs, stored tool results, audit events and
//! fired reminders older than the window are deleted; a session idle that long loses its
//! transcript, dials, todos, session memory, "always this tool" grants and the chat `serve` last
//! saw it in (its workspace too, with `prune_workspaces = true`). A session is dated when its
//! worker starts, so a chat that only ever sent commands goes too. Each kind is found through
//! its time-ordered index (`store::aged`), so a pass reads only what it deletes. Waiting
//! approvals, live rows and open runs are never pruned.

use crate::agent::runs::{PrunedSession, RunStore};
use crate::approvals::PendingApprovals;
use crate::config::Config;
use crate::store::{Store, StoreError};
use std::sync::Arc;

/// How often `serve` prunes.
pub const EVERY: std::time::Duration = std::time::Duration::from_secs(3600);

const DAY: u64 = 86_400;

/// What one pass deleted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PruneReport {
    pub approvals: usize,
    /// "Approve all N" rows used or replaced.
    pub rows: usize,
    pub runs: usize,
    pub results: usize,
    pub events: usize,
    pub reminders: usize,
    pub sessions: Vec<PrunedSession>,
    pub workspaces: usize,
}

impl PruneReport {
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == PruneReport::default()
    }
}

impl std::fmt::Display for PruneReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "pruned {} settled approval(s), {} approve-all row(s), {} finished run(s), {} stored result(s), {} audit event(s), {} fired reminder(s), {} idle session(s) and {} workspace(s)",
            self.approvals,
            self.rows,
            self.runs,
            self.results,
            self.events,
            self.reminders,
            self.sessions.len(),
            self.workspaces
        )
    }
}

/// The oldest time (seconds) the store keeps at `now`.
#[must_use]
pub fn cutoff(config: &Config, now: u64) -> u64 {
    now.saturating_sub(config.store.retain_days.saturating_mul(DAY))
}

/// Marks a store whose records predating their age indexes were dated.
const DATED_MARKER: &[u8] = b"retention-dated-v1";

/// Dates what a store written before the age indexes holds undated (settled approvals, used
/// rows, finished runs, stored results), once, at `now` (they carry no time of their own), so
/// retention deletes them `retain_days` after the upgrade instead of never. Run where the store
/// is opened. (Audit events are dated by their keys: `StoreEvents::move_into_time_order`.)
pub fn date_undated(store: &Arc<dyn Store>, now: u64) -> Result<(), StoreError> {
    crate::store::migrate::once(store.as_ref(), DATED_MARKER, || {
        RunStore::new(store.clone()).date_undated(now)?;
        let store = store.as_ref();
        PendingApprovals::date_undated(store, now)?;
        crate::approvals::BulkApprovals::date_undated(store, now)?;
        crate::tools::builtin::date_undated_results(store, now)?;
        Ok(())
    })?;
    crate::store::migrate::once(store.as_ref(), DATED_CHATS_MARKER, || {
        date_undated_chats(store, now)
    })
}

/// Marks a store whose remembered chats were dated.
const DATED_CHATS_MARKER: &[u8] = b"retention-dated-chats-v1";

/// Dates at `now` each session `serve` remembers the chat of but never dated (before sessions
/// were dated when their worker started, a chat that only sent commands left such an entry),
/// so retention forgets it `retain_days` after the upgrade instead of never. Its agent is not
/// known here: such a session's workspace is kept.
fn date_undated_chats(store: &Arc<dyn Store>, now: u64) -> Result<(), StoreError> {
    let runs = RunStore::new(store.clone());
    for (key, _) in store.scan_prefix(crate::serve::sessions::SESSION_CHATS_TREE, b"")? {
        let session = String::from_utf8_lossy(&key);
        if !runs.is_dated(&session)? {
            runs.note_activity(&session, "", now)?;
        }
    }
    Ok(())
}

/// One pass at `now` (seconds; injected, so tests move time instead of waiting).
pub fn prune(store: &Arc<dyn Store>, config: &Config, now: u64) -> Result<PruneReport, StoreError> {
    prune_beside_workers(store, config, now, &|_| Ok(false))
}

/// One pass beside a running `serve`: `remember_if_live` is called for each pruned session
/// right after its chat is forgotten, and dates the session again and remembers its chat if
/// it has a live worker (one that started while the pass ran: a run it starts resumes in that
/// chat after a restart); it says whether it had one, whose workspace is then kept.
pub fn prune_beside_workers(
    store: &Arc<dyn Store>,
    config: &Config,
    now: u64,
    remember_if_live: &dyn Fn(&str) -> Result<bool, StoreError>,
) -> Result<PruneReport, StoreError> {
    let before = cutoff(config, now);
    let runs = RunStore::new(store.clone());
    let mut report = PruneReport {
        approvals: PendingApprovals::new(store.clone()).prune_settled(before)?,
        rows: crate::approvals::BulkApprovals::prune_done(store.as_ref(), before)?,
        runs: runs.prune_finished(before)?,
        results: crate::tools::builtin::prune_results(store.as_ref(), before)?,
        events: crate::events::StoreEvents::prune(store.as_ref(), before)?,
        reminders: crate::reminders::Reminders::prune_fired(store.as_ref(), before)?,
        sessions: Vec::new(),
        workspaces: 0,
    };
    let allowlists = crate::store::Allowlists::new(store.clone());
    // A session's date may lag its last activity by up to an hour (it is not dated again
    // sooner): allowing for that hour keeps a session active within the window.
    let mut workspaces = 0;
    report.sessions = runs.prune_idle_sessions(
        before.saturating_sub(crate::agent::runs::REDATE_AFTER),
        |idle| {
            // Where `serve` last saw its chat; then written again if a worker is live. A
            // worker that started after the claim may have written it before this delete; one
            // not seen by `remember_if_live` writes it after (serve puts a worker in its map
            // before the worker remembers its chat). First, right after the transcript's
            // delete: a live worker forgets the transcript it kept even if a delete below
            // fails.
            store.delete(
                crate::serve::sessions::SESSION_CHATS_TREE,
                idle.session.as_bytes(),
            )?;
            let live = remember_if_live(&idle.session)?;
            store.delete(
                crate::executor::session::DIALS_TREE,
                idle.session.as_bytes(),
            )?;
            crate::tools::builtin::forget_session(store.as_ref(), &idle.session)?;
            allowlists.forget_session_tools(&idle.session)?;
            // Before the session's entry goes: a kill after this comes back to finish the
            // pass rather than leave a workspace retention promised to delete. A live worker's
            // workspace is kept: its calls work there (the session is active again).
            if config.store.prune_workspaces
                && !live
                && let Some(agent) = config.agents.get(&idle.agent)
            {
                // Not resolved: were the entry a link (planted by something unconfined), only
                // the link goes, never another session's directory it points to.
                let workspace = crate::gate::session_dir_entry(agent, &idle.session);
                match std::fs::symlink_metadata(&workspace) {
                    Ok(entry) if entry.file_type().is_symlink() => {
                        let _ = std::fs::remove_file(&workspace);
                    }
                    Ok(entry) if entry.is_dir() && std::fs::remove_dir_all(&workspace).is_ok() => {
                        workspaces += 1;
                    }
                    _ => {}
                }
            }
            Ok(())
        },
    )?;
    report.workspaces = workspaces;
    store.flush()?;
    Ok(report)
}
