//! Reminders: stored with the session they came from, fired by a scheduler into that session
//! later — late (and marked so) after downtime, and never twice (claimed with a
//! compare-and-swap before they fire). A reminder's run is unattended: nobody answers its
//! prompts.
//!
//! The scheduler looks every half second, so it reads a time-ordered index of what has not
//! fired (`reminders_due`) up to now, never the whole tree; a fired reminder moves to a
//! second index (`reminders_fired`, by when it fired) that retention prunes from.
//!
//! A session's list reads a third index (`reminders_by_session`), of what has not fired by
//! session, so listing never decodes another session's reminders. A due entry's value names
//! its session, so that an entry left by a kill can be dropped with the other.
//!
//! A claimed reminder is also marked delivering (`reminders_delivering`) until its run is
//! over: a kill after the claim and before the run's record was durable would otherwise lose
//! it. Its run has a fixed id ([`Reminder::run_id`]), so after a restart a reminder whose run
//! was never recorded is delivered again, and one whose run was recorded is not.

use crate::store::{Store, StoreError, aged};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

pub const REMINDERS_TREE: &str = "reminders";
/// Unfired reminders by due time (`store::aged` keys).
const DUE_TREE: &str = "reminders_due";
/// Unfired reminders by session: `{session}\0{id}`, with an empty value.
const BY_SESSION_TREE: &str = "reminders_by_session";
/// Fired reminders by when they fired, for retention.
const FIRED_TREE: &str = "reminders_fired";
/// Claimed reminders whose run may not be over (by id).
const DELIVERING_TREE: &str = "reminders_delivering";
/// An index entry this much past its due time with no record is an orphan (a crash between
/// the two writes of `add`); a younger one may be an `add` still between them.
const ORPHAN_AFTER_SECS: u64 = 60;
/// Marks a store whose reminders (written before the indexes) were indexed.
const INDEXED_MARKER: &[u8] = b"reminders_indexed";
/// Marks a store whose unfired reminders (written before the session index) were indexed.
const INDEXED_BY_SESSION_MARKER: &[u8] = b"reminders_indexed_by_session";

/// The most reminders a session may have waiting (`add_reminder` refuses more): a chat cannot
/// make the store grow without bound.
pub const MAX_PENDING_PER_SESSION: usize = 100;

/// The furthest ahead a reminder may be set.
pub const MAX_AHEAD_SECS: u64 = 366 * 24 * 3600;

/// A stored reminder.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reminder {
    pub id: String,
    pub session: String,
    pub agent: String,
    pub message: String,
    /// Seconds since the Unix epoch.
    pub due: u64,
    pub created: String,
    pub fired: bool,
}

/// Whether `run` is the run that delivers a reminder of `session` ([`Reminder::run_id`]). A
/// message's run id has a time after the session key, a subagent's `:sub:`.
#[must_use]
pub fn is_reminder_run(run: &str, session: &str) -> bool {
    run.strip_prefix(session)
        .is_some_and(|rest| rest.starts_with(":reminder:"))
}

impl Reminder {
    /// The id of the run that delivers this reminder: one per reminder, so a restart can tell
    /// whether it was recorded.
    #[must_use]
    pub fn run_id(&self) -> String {
        format!("{}:reminder:{}", self.session, self.id)
    }

    /// What the session is told when it fires (`late_secs` after it was due).
    #[must_use]
    pub fn firing_text(&self, late_secs: u64) -> String {
        let late = if late_secs >= 60 {
            format!(
                ", delivered {} min late (tollgate was not running)",
                late_secs / 60
            )
        } else {
            String::new()
        };
        format!(
            "[reminder {} set at {}{late}] {}",
            self.id, self.created, self.message
        )
    }
}

/// Parses RFC 3339 (`2026-11-29T10:00:00Z`, fractions and `±HH:MM` offsets accepted) into
/// seconds since the epoch; `None` for anything that is not a real instant (`2026-02-31`, an
/// offset of `+99:99`, a year past 9999) or lies before 1970.
#[must_use]
pub fn parse_rfc3339(text: &str) -> Option<u64> {
    let instant = chrono::DateTime::parse_from_rfc3339(text.trim()).ok()?;
    u64::try_from(instant.timestamp()).ok()
}

/// Reminders in a store.
#[derive(Clone)]
pub struct Reminders {
    store: Arc<dyn Store>,
}

fn decode(bytes: &[u8]) -> Option<Reminder> {
    serde_json::from_slice(bytes).ok()
}

/// The start of session `session`'s keys in the session index: the separator keeps
/// `telegram:9` from listing `telegram:90`'s.
fn session_prefix(session: &[u8]) -> Vec<u8> {
    let mut prefix = session.to_vec();
    prefix.push(0);
    prefix
}

/// Drops the due entry `due_key` of reminder `id`, whose record is gone, and its session's
/// entry (`session` is the due entry's value; empty only for a reminder of a store written
/// before the session index that had no record at the upgrade, so no session entry): the due
/// entry last, as it is what brings the next pass back.
fn drop_entries(
    store: &dyn Store,
    due_key: &[u8],
    id: &[u8],
    session: &[u8],
) -> Result<(), StoreError> {
    if !session.is_empty() {
        store.delete(BY_SESSION_TREE, &session_key(session, id))?;
    }
    store.delete(DUE_TREE, due_key)
}

/// Reminder `id`'s entry in the session index.
fn session_key(session: &[u8], id: &[u8]) -> Vec<u8> {
    let mut key = session_prefix(session);
    key.extend_from_slice(id);
    key
}

impl Reminders {
    #[must_use]
    pub fn new(store: Arc<dyn Store>) -> Self {
        Reminders { store }
    }

    pub fn add(&self, reminder: &Reminder) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(reminder).map_err(|e| StoreError {
            context: "encoding a reminder".into(),
            message: e.to_string(),
        })?;
        // The index entries first: a kill between the writes leaves entries without their
        // record, which the scheduler drops (the due entry, naming its session, with the
        // session's); never a record the scheduler or a list cannot find.
        let id = reminder.id.as_bytes();
        self.store.insert(
            DUE_TREE,
            &aged::key(reminder.due, id),
            reminder.session.as_bytes(),
        )?;
        self.store.insert(
            BY_SESSION_TREE,
            &session_key(reminder.session.as_bytes(), id),
            b"",
        )?;
        self.store.insert(REMINDERS_TREE, id, &bytes)?;
        self.store.flush()
    }

    /// The session's reminders that have not fired, soonest first: read through the session
    /// index, so only the session's own records are read.
    pub fn pending(&self, session: &str) -> Result<Vec<Reminder>, StoreError> {
        let prefix = session_prefix(session.as_bytes());
        let mut list = Vec::new();
        for (key, _) in self.store.scan_prefix(BY_SESSION_TREE, &prefix)? {
            let Some(id) = key.get(prefix.len()..) else {
                continue;
            };
            // An entry without a pending record (an add under way, a kill's leftover) is not
            // listed; the scheduler drops a leftover with its due entry.
            if let Some(reminder) = self.store.get(REMINDERS_TREE, id)?.and_then(|b| decode(&b))
                && reminder.session == session
                && !reminder.fired
            {
                list.push(reminder);
            }
        }
        list.sort_by_key(|r| r.due);
        Ok(list)
    }

    /// Cancels one of the session's pending reminders; whether it was there.
    pub fn cancel(&self, session: &str, id: &str) -> Result<bool, StoreError> {
        let Some(bytes) = self.store.get(REMINDERS_TREE, id.as_bytes())? else {
            return Ok(false);
        };
        match decode(&bytes) {
            Some(r) if r.session == session && !r.fired => {
                // Only if it has not fired meanwhile: the scheduler claims by the same swap.
                if self
                    .store
                    .compare_and_swap(REMINDERS_TREE, id.as_bytes(), Some(&bytes), None)?
                    .is_err()
                {
                    return Ok(false);
                }
                // The due entry last: while it stays, the scheduler drops the session's entry
                // with it (a kill between these writes leaves no entry it cannot find).
                self.store.remove(
                    BY_SESSION_TREE,
                    &session_key(session.as_bytes(), id.as_bytes()),
                )?;
                self.store
                    .remove(DUE_TREE, &aged::key(r.due, id.as_bytes()))?;
                self.store.flush()?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Claims every reminder due by `now` (for the sessions `accept` takes): each is marked
    /// fired atomically before it is returned, so no reminder fires twice.
    pub fn take_due(
        &self,
        now: u64,
        accept: impl Fn(&Reminder) -> bool,
    ) -> Result<Vec<Reminder>, StoreError> {
        let mut claimed = Vec::new();
        for (index_key, key, session) in
            aged::older_than_with_values(self.store.as_ref(), DUE_TREE, now.saturating_add(1))?
        {
            let key = key.as_slice();
            let record = self.store.get(REMINDERS_TREE, key)?;
            let Some((bytes, reminder)) = record.and_then(|b| decode(&b).map(|r| (b, r))) else {
                // No record: cancelled, or an orphan of a kill between `add`'s writes (or
                // `cancel`'s) — or an `add` between them right now, whose entries must stay.
                let due = aged::time_of(&index_key).unwrap_or(0);
                if due.saturating_add(ORPHAN_AFTER_SECS) < now {
                    drop_entries(self.store.as_ref(), &index_key, key, &session)?;
                }
                continue;
            };
            if reminder.fired {
                // Claimed before a crash that came before its index moved: finish the move.
                self.move_to_fired(&index_key, &reminder, now)?;
                continue;
            }
            if !accept(&reminder) {
                // Another process's session (its bridge is not here): left for it.
                continue;
            }
            // Marked delivering before it is claimed: a kill can keep any prefix of these
            // writes, and a claimed reminder without its mark would be lost. A mark whose
            // reminder is not claimed stays until the claim that marks it again.
            self.store.put(DELIVERING_TREE, key, b"")?;
            let mut fired = reminder.clone();
            fired.fired = true;
            let new = serde_json::to_vec(&fired).map_err(|e| StoreError {
                context: "encoding a reminder".into(),
                message: e.to_string(),
            })?;
            if self
                .store
                .compare_and_swap(REMINDERS_TREE, key, Some(&bytes), Some(&new))?
                .is_ok()
            {
                self.move_to_fired(&index_key, &reminder, now)?;
                claimed.push(reminder);
            }
        }
        if !claimed.is_empty() {
            self.store.flush()?;
        }
        Ok(claimed)
    }

    /// Notes that reminder `id`'s run is over (durable with the next flush).
    pub fn delivered(&self, id: &str) -> Result<(), StoreError> {
        self.store.delete(DELIVERING_TREE, id.as_bytes())
    }

    /// After a restart: the claimed reminders (of the sessions `accept` takes) whose run was
    /// never recorded (`recorded` says whether a run id is in the store), to be delivered
    /// again. A mark whose reminder is gone, or whose run was recorded (it is resumed or
    /// answered as any run is), is dropped; one whose reminder is not claimed yet stays (the
    /// claim that marked it may be under way).
    pub fn undelivered(
        &self,
        accept: impl Fn(&Reminder) -> bool,
        recorded: impl Fn(&str) -> Result<bool, StoreError>,
    ) -> Result<Vec<Reminder>, StoreError> {
        let mut undelivered = Vec::new();
        for (key, _) in self.store.scan_prefix(DELIVERING_TREE, b"")? {
            match self
                .store
                .get(REMINDERS_TREE, &key)?
                .and_then(|b| decode(&b))
            {
                None => self.store.delete(DELIVERING_TREE, &key)?,
                Some(reminder) if !reminder.fired || !accept(&reminder) => {}
                Some(reminder) if recorded(&reminder.run_id())? => {
                    self.store.delete(DELIVERING_TREE, &key)?;
                }
                Some(reminder) => undelivered.push(reminder),
            }
        }
        undelivered.sort_by_key(|r| r.due);
        Ok(undelivered)
    }

    /// Moves a claimed reminder's index entry from the due index to the fired one (dated `now`),
    /// and takes it off its session's list: the fired entry first and the due entry last, as a
    /// kill can keep any prefix of the writes and a fired reminder with neither entry would
    /// never be pruned (one still under its due entry is moved by the next sweep).
    fn move_to_fired(
        &self,
        due_key: &[u8],
        reminder: &Reminder,
        now: u64,
    ) -> Result<(), StoreError> {
        let id = reminder.id.as_bytes();
        self.store.put(FIRED_TREE, &aged::key(now, id), b"")?;
        self.store.delete(
            BY_SESSION_TREE,
            &session_key(reminder.session.as_bytes(), id),
        )?;
        self.store.delete(DUE_TREE, due_key)
    }

    /// Deletes the reminders that fired before `before` (seconds), and those due before it
    /// that never fired (no process here could deliver them: a subagent's, a console's, a
    /// bridge's that is no longer configured — the scheduler would otherwise read them on
    /// every pass forever); how many.
    pub fn prune_fired(store: &dyn Store, before: u64) -> Result<usize, StoreError> {
        // Their marks first: a reminder whose run retention pruned must not look undelivered.
        for (_, key) in aged::older_than(store, FIRED_TREE, before)? {
            store.delete(DELIVERING_TREE, &key)?;
        }
        let mut pruned = aged::prune(store, FIRED_TREE, REMINDERS_TREE, before)?;
        for (due_key, id, session) in aged::older_than_with_values(store, DUE_TREE, before)? {
            // The record first and the due entry last: while the due entry stays, the next
            // pass (or the scheduler) finds the session's entry through it.
            let session = match store.get(REMINDERS_TREE, &id)? {
                Some(bytes) => {
                    store.delete(REMINDERS_TREE, &id)?;
                    pruned += 1;
                    decode(&bytes).map_or(session, |r| r.session.into_bytes())
                }
                None => session,
            };
            drop_entries(store, &due_key, &id, &session)?;
        }
        Ok(pruned)
    }

    /// Indexes the reminders of a store written before the indexes existed (once): unfired
    /// ones by due time, fired ones as fired when they were due.
    pub fn index_existing(store: &dyn Store) -> Result<(), StoreError> {
        crate::store::migrate::once(store, INDEXED_MARKER, || {
            for (key, bytes) in store.scan_prefix(REMINDERS_TREE, b"")? {
                let Some(reminder) = decode(&bytes) else {
                    continue;
                };
                let index = if reminder.fired { FIRED_TREE } else { DUE_TREE };
                store.insert(index, &aged::key(reminder.due, &key), b"")?;
            }
            Ok(())
        })?;
        // The due entry is written again naming its session (an older one's value is empty),
        // so that a kill leaving a session entry without its record can be cleaned like any.
        crate::store::migrate::once(store, INDEXED_BY_SESSION_MARKER, || {
            for (key, bytes) in store.scan_prefix(REMINDERS_TREE, b"")? {
                if let Some(reminder) = decode(&bytes).filter(|r| !r.fired) {
                    let session = reminder.session.as_bytes();
                    store.put(DUE_TREE, &aged::key(reminder.due, &key), session)?;
                    store.insert(BY_SESSION_TREE, &session_key(session, &key), b"")?;
                }
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests;
