//! The executor's journal over durable runs: each step of a call of a session's active run
//! (pending, running, done) is written under the call's own key and flushed before it matters,
//! without rewriting the run record or holding its lock across the write.

use super::runs::{CallState, RunRecord, RunStore};
use crate::executor::{CallJournal, JournalError, JournalStatus};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The executor's journal: each step of a call of a session's active run is saved before it
/// matters. (A session runs one run at a time.)
pub struct RunJournal {
    pub runs: RunStore,
    active: Mutex<HashMap<String, Arc<Mutex<RunRecord>>>>,
}

impl RunJournal {
    #[must_use]
    pub fn new(runs: RunStore) -> Self {
        RunJournal {
            runs,
            active: Mutex::new(HashMap::new()),
        }
    }

    /// Makes `run` the session's active run.
    pub fn activate(&self, run: Arc<Mutex<RunRecord>>) {
        let session = run
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .session
            .clone();
        self.active
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(session, run);
    }

    pub fn deactivate(&self, session: &str) {
        self.active
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(session);
    }
}

impl CallJournal for RunJournal {
    fn record<'a>(
        &'a self,
        session: &'a str,
        call_id: &'a str,
        status: JournalStatus,
    ) -> crate::executor::JournalFuture<'a> {
        Box::pin(async move {
            let (run_id, state) = self.step(session, call_id, status)?;
            Ok(self.runs.save_call_soon(&run_id, call_id, &state).await?)
        })
    }
}

impl RunJournal {
    /// Applies a call's step to the active run in memory: the run and the step to write.
    fn step(
        &self,
        session: &str,
        call_id: &str,
        status: JournalStatus,
    ) -> Result<(String, CallState), JournalError> {
        let run = self
            .active
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(session)
            .cloned()
            .ok_or_else(|| JournalError::NoActiveRun(session.to_string()))?;
        let state = match status {
            JournalStatus::Pending => CallState::Pending,
            JournalStatus::Running => CallState::Running,
            JournalStatus::Done { output, is_error } => CallState::Done { output, is_error },
        };
        // The lock covers the in-memory step only; the write runs without it.
        let run_id = {
            let mut run = run.lock().unwrap_or_else(|p| p.into_inner());
            let run_id = run.id.clone();
            let Some(record) = run.calls.iter_mut().find(|c| c.call.id == call_id) else {
                return Err(JournalError::UnknownCall {
                    call: call_id.to_string(),
                    run: run_id,
                });
            };
            record.state = state.clone();
            run_id
        };
        Ok((run_id, state))
    }
}

impl crate::events::ActiveRuns for RunJournal {
    /// The id of the session's active run, if one is running.
    fn active_run_id(&self, session: &str) -> Option<String> {
        let active = self.active.lock().unwrap_or_else(|p| p.into_inner());
        let run = active.get(session)?;
        let id = run.lock().unwrap_or_else(|p| p.into_inner()).id.clone();
        Some(id)
    }
}
