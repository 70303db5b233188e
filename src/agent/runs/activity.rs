//! When each session was last active, for retention: a session's date (and its time index)
//! written at most once an hour, remembered in one slot per `RunStore`, and the idle
//! sessions' pruning.

use super::{RunStore, TRANSCRIPT_TREE};
use crate::store::StoreError;

/// Each session's last activity: session → seconds (8 bytes, big-endian) then the agent (the
/// time read back with `store::aged::time_of`).
pub(super) const SESSION_ACTIVITY_TREE: &str = "session_activity";
/// The same by time (`store::aged` keys: seconds, session): retention reads only the sessions
/// idle past its cutoff.
pub(super) const SESSION_IDLE_TREE: &str = "session_activity_aged";
/// How old a session's activity date must be before a new turn dates it again (seconds).
pub const REDATE_AFTER: u64 = 3_600;
/// Marks a store whose session activity (written before its time index) was indexed.
pub(super) const ACTIVITY_INDEXED_MARKER: &[u8] = b"session-activity-indexed-v1";

/// A session's activity date as last read or written here.
pub(super) struct Dated {
    session: String,
    agent: String,
    at: u64,
}

/// A session idle past the retention window, pruned: its workspace is the caller's to keep or
/// delete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrunedSession {
    pub session: String,
    pub agent: String,
}

impl RunStore {
    /// The slot of [`RunStore::note_activity`] (a poisoned lock still holds a whole value).
    fn dated(&self) -> std::sync::MutexGuard<'_, Option<Dated>> {
        self.dated.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes that `session` (of `agent`) was active at `now`: retention prunes a session only
    /// once it has been idle for `retain_days`. Written with the caller's next flush.
    ///
    /// A session dated less than [`REDATE_AFTER`] ago keeps its date, so a call costs one
    /// read instead of a remove and two inserts — and none when this store dated it last;
    /// the retention pass allows for the lag (a session goes up to that much after
    /// `retain_days` of idleness, never before). Returns the date the session carries.
    pub fn note_activity(&self, session: &str, agent: &str, now: u64) -> Result<u64, StoreError> {
        // Dated here within the hour: the store holds that date or, written by another, a
        // later one; retention takes neither (it allows the hour), so the read would only
        // return early.
        if let Some(dated) = self.dated().as_ref()
            && dated.session == session
            && dated.agent == agent
            && now.saturating_sub(dated.at) < REDATE_AFTER
        {
            return Ok(dated.at);
        }
        let at = self.date_in_store(session, agent, now)?;
        *self.dated() = Some(Dated {
            session: session.to_string(),
            agent: agent.to_string(),
            at,
        });
        Ok(at)
    }

    /// Whether `session` carries an activity date (retention will find it once idle).
    pub fn is_dated(&self, session: &str) -> Result<bool, StoreError> {
        Ok(self
            .store
            .get(SESSION_ACTIVITY_TREE, session.as_bytes())?
            .is_some())
    }

    /// [`RunStore::note_activity`] through the store: the date the session carries after.
    fn date_in_store(&self, session: &str, agent: &str, now: u64) -> Result<u64, StoreError> {
        let store = self.store.as_ref();
        let current = store.get(SESSION_ACTIVITY_TREE, session.as_bytes())?;
        let dated = current.as_deref().and_then(crate::store::aged::time_of);
        let same_agent = current
            .as_deref()
            .and_then(|a| a.get(8..))
            .is_some_and(|a| a == agent.as_bytes());
        if same_agent && let Some(at) = dated.filter(|&at| now.saturating_sub(at) < REDATE_AFTER) {
            return Ok(at);
        }
        // The new date's entry first and the old one's last: a kill can keep any prefix of
        // these writes, and retention finds an idle session only through an entry matching its
        // activity. A stale entry is only dropped. The entry names the agent too: a pass a kill
        // cut short after its claim (the activity gone) still knows whose workspace it is.
        store.put(
            SESSION_IDLE_TREE,
            &crate::store::aged::key(now, session.as_bytes()),
            agent.as_bytes(),
        )?;
        let mut activity = now.to_be_bytes().to_vec();
        activity.extend_from_slice(agent.as_bytes());
        store.put(SESSION_ACTIVITY_TREE, session.as_bytes(), &activity)?;
        if let Some(at) = dated.filter(|&at| at != now) {
            store.delete(
                SESSION_IDLE_TREE,
                &crate::store::aged::key(at, session.as_bytes()),
            )?;
        }
        Ok(now)
    }

    /// Forgets the transcripts of sessions idle since before `before` (seconds) and with no
    /// open run, and calls `forget` for each (what else the session kept is the caller's);
    /// returns them.
    pub fn prune_idle_sessions(
        &self,
        before: u64,
        mut forget: impl FnMut(&PrunedSession) -> Result<(), StoreError>,
    ) -> Result<Vec<PrunedSession>, StoreError> {
        let store = self.store.as_ref();
        let idle = crate::store::aged::older_than(store, SESSION_IDLE_TREE, before)?;
        if idle.is_empty() {
            return Ok(Vec::new());
        }
        let busy: std::collections::BTreeSet<String> =
            self.open_runs()?.into_iter().map(|r| r.session).collect();
        let mut pruned = Vec::new();
        for (index_key, session) in idle {
            let activity = store.get(SESSION_ACTIVITY_TREE, &session)?;
            let dated = activity.as_deref().and_then(crate::store::aged::time_of);
            // An entry its session outgrew (active again since) is only dropped. An entry
            // whose session has no activity at all is a pass a kill cut short after its
            // claim (or a first dating cut short before it): it is finished.
            if activity.is_some() && dated != crate::store::aged::time_of(&index_key) {
                store.delete(SESSION_IDLE_TREE, &index_key)?;
                continue;
            }
            let session_name = String::from_utf8_lossy(&session).into_owned();
            if busy.contains(&session_name) {
                continue;
            }
            // Claimed by swapping its activity out (or, for a pass finished after a kill, by
            // finding it still absent): a session active again since it was read (a run
            // started, a dial set) keeps everything.
            if store
                .compare_and_swap(SESSION_ACTIVITY_TREE, &session, activity.as_deref(), None)?
                .is_err()
            {
                continue;
            }
            let agent = match &activity {
                Some(activity) => activity.get(8..).map(<[u8]>::to_vec),
                // The entry's own record of it (empty in entries written before it was kept:
                // then the workspace is kept).
                None => store.get(SESSION_IDLE_TREE, &index_key)?,
            };
            let idle = PrunedSession {
                session: session_name,
                agent: agent
                    .map(|a| String::from_utf8_lossy(&a).into_owned())
                    .unwrap_or_default(),
            };
            // Everything the session kept before its entry: a kill can keep any prefix of
            // these writes, and the entry is what brings the next pass back to finish them.
            store.delete(TRANSCRIPT_TREE, &session)?;
            forget(&idle)?;
            store.delete(SESSION_IDLE_TREE, &index_key)?;
            pruned.push(idle);
        }
        Ok(pruned)
    }
}
