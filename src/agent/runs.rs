//! Durable runs: a run (the work for one user message) is stored as it advances — model reply
//! received, tool calls proposed, each call pending / running / done, next model call, final
//! answer — with the session's transcript. Every write is flushed before anything that depends
//! on it happens, so a restart loses nothing and never runs a call twice.

pub use super::journal::RunJournal;
use super::llm::{ChatMessage, ToolCall};
use crate::store::{Store, StoreError};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

mod activity;
mod kept;

use activity::{ACTIVITY_INDEXED_MARKER, Dated, SESSION_ACTIVITY_TREE, SESSION_IDLE_TREE};
pub use activity::{PrunedSession, REDATE_AFTER};
pub use kept::KEPT_TRANSCRIPT_MAX;

const RUNS_TREE: &str = "runs";
const TRANSCRIPT_TREE: &str = "transcripts";

/// Where one tool call stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "status")]
pub enum CallState {
    /// Proposed; nothing has run.
    Proposed,
    /// Waiting for a person; nothing has run.
    Pending,
    /// Started: after a crash its outcome is unknown, and it is never run again.
    Running,
    Done {
        output: String,
        is_error: bool,
    },
}

impl CallState {
    /// How far a call has got: a state never goes back, so of two records of one call the
    /// further one is the newer.
    fn progress(&self) -> u8 {
        match self {
            CallState::Proposed => 0,
            CallState::Pending => 1,
            CallState::Running => 2,
            CallState::Done { .. } => 3,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallRecord {
    pub call: ToolCall,
    pub state: CallState,
}

/// Where a run stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "phase")]
pub enum RunPhase {
    /// Next: ask the model.
    AskingModel,
    /// The model's tool calls are being decided and run.
    RunningTools,
    Finished {
        answer: String,
    },
    Failed {
        error: String,
    },
}

/// A stored run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: String,
    pub session: String,
    pub agent: String,
    /// Model calls made so far.
    pub round: u32,
    pub phase: RunPhase,
    pub calls: Vec<CallRecord>,
    /// The conversation's model usage so far (the classifier's is kept apart).
    #[serde(default)]
    pub usage: super::llm::Usage,
    /// How long the session's transcript was when this step was written (at a run's start,
    /// counting its `message`, which the transcript gets with the first answer). The
    /// transcript is a separate write, so a kill can keep a model reply whose step was lost:
    /// what lies past this length is that reply (`None` in records written before it was
    /// kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_len: Option<usize>,
    /// The user's message, until the run's first model call is answered: the session's
    /// transcript is written with that answer, not also at the run's start (once a turn
    /// instead of twice), so a run resumed before it finds its message here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Who asked, as a chat names them (the platform's user id, and the line cards show):
    /// cards of a run resumed after a restart name them too, and a question it asks can be
    /// answered by them (`None` for runs nobody in a chat asked for, and in records written
    /// before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requester: Option<(i64, String)>,
}

impl RunRecord {
    #[must_use]
    pub fn is_open(&self) -> bool {
        matches!(self.phase, RunPhase::AskingModel | RunPhase::RunningTools)
    }
}

/// Runs and transcripts in the store.
#[derive(Clone)]
pub struct RunStore {
    store: Arc<dyn Store>,
    /// The last session this store dated: its key, agent and the date its activity carries.
    /// A session worker has a store of its own, so its turns' datings within the hour skip
    /// their read (one slot: it costs nothing per session).
    dated: Arc<std::sync::Mutex<Option<Dated>>>,
    /// The transcript last read or written here, in a session runner's store only
    /// ([`RunStore::keeping_transcript`]).
    kept: Option<kept::SharedSlot>,
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(value).map_err(|e| StoreError {
        context: "encoding a run".into(),
        message: e.to_string(),
    })
}

fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError {
        context: "reading a stored run".into(),
        message: e.to_string(),
    })
}

/// The open runs' ids → empty: `open_runs` reads these records only, never every run ever
/// made. An entry is written before its open record and removed after the finished record is
/// durable, so the index is a superset of the open runs (a stale entry is removed when read).
const OPEN_RUNS_TREE: &str = "runs_open";
/// Finished runs by when they finished (`store::aged` keys), for retention.
const FINISHED_RUNS_TREE: &str = "runs_finished";
/// Finished runs of chat sessions whose answer may not have reached the chat: run id → empty.
/// Written with the finished record, removed once the answer is sent or refused for good
/// (durable with a later flush), so a kill between the two — or a network failure — leaves
/// the answer to be sent after the restart, never lost (sent twice, at worst, if the kill came
/// after the send and before that removal was durable).
const UNANSWERED_TREE: &str = "runs_unanswered";

/// Whether a session's answers go to a chat (a bridge's session, not a subagent's, the
/// console's or a one-off `run`'s: those are printed by the process that ran them).
fn answered_in_a_chat(session: &str) -> bool {
    use tollgate_surface::Platform;
    [Platform::Telegram, Platform::Discord].iter().any(|p| {
        session
            .strip_prefix(p.as_str())
            .is_some_and(|rest| rest.starts_with(':'))
    }) && !session.contains(":sub:")
}
/// Each call's latest step, under its own key (`run \0 call` → state): the journal writes one
/// call's step without rewriting the run or holding its lock across the write, so concurrent
/// calls of one run share a group commit instead of queueing behind each other's flush.
const RUN_CALLS_TREE: &str = "run_calls";

fn call_key(run: &str, call: &str) -> Vec<u8> {
    format!("{run}\0{call}").into_bytes()
}

const RUNS_INDEXED_MARKER: &[u8] = b"runs-indexed-v1";

impl RunStore {
    #[must_use]
    pub fn new(store: Arc<dyn Store>) -> Self {
        RunStore {
            store,
            dated: Arc::default(),
            kept: None,
        }
    }

    /// Indexes the open runs of a store written before the index existed (once; a marker
    /// records it). Run where the store is opened.
    pub fn index_existing(&self) -> Result<(), StoreError> {
        let store = self.store.as_ref();
        crate::store::migrate::once(store, RUNS_INDEXED_MARKER, || {
            for (key, bytes) in store.scan_prefix(RUNS_TREE, b"")? {
                if decode::<RunRecord>(&bytes).is_ok_and(|run| run.is_open()) {
                    store.put(OPEN_RUNS_TREE, &key, b"")?;
                }
            }
            Ok(())
        })?;
        crate::store::migrate::once(store, ACTIVITY_INDEXED_MARKER, || {
            for (session, activity) in store.scan_prefix(SESSION_ACTIVITY_TREE, b"")? {
                if let Some(at) = crate::store::aged::time_of(&activity) {
                    store.put(
                        SESSION_IDLE_TREE,
                        &crate::store::aged::key(at, &session),
                        activity.get(8..).unwrap_or_default(),
                    )?;
                }
            }
            Ok(())
        })
    }

    /// Saves a run, durably.
    pub fn save(&self, run: &RunRecord) -> Result<(), StoreError> {
        self.write(run)?;
        self.store.flush()?;
        self.after_durable(run)
    }

    /// [`RunStore::save`] from async code: the flush is waited for without holding an async
    /// worker (the store's flusher thread answers).
    pub async fn save_soon(&self, run: &RunRecord) -> Result<(), StoreError> {
        self.write(run)?;
        self.store.flush_soon().await?;
        self.after_durable(run)
    }

    /// Writes a run that has not started anything yet, without flushing: durable with the
    /// caller's next flush (a new run's record, whose model call waits on nothing but it).
    pub fn stage(&self, run: &RunRecord) -> Result<(), StoreError> {
        self.write(run)
    }

    /// Makes every write so far durable, without holding an async worker.
    pub async fn flush_soon(&self) -> Result<(), StoreError> {
        self.store.flush_soon().await
    }

    /// A save's writes before its flush.
    fn write(&self, run: &RunRecord) -> Result<(), StoreError> {
        let open = run.is_open();
        // Every index entry before the record: another session's commit can land between any
        // two of these writes, and a kill after it keeps only those before. A finished record
        // without its "unanswered" mark would be neither resumed (not open) nor answered after
        // a restart, and one without its retention date never pruned. An entry without the
        // record is harmless: `unanswered` drops a mark whose run is still open, retention
        // skips an open run, and the still-open run is resumed.
        if open {
            self.store.put(OPEN_RUNS_TREE, run.id.as_bytes(), b"")?;
        }
        // A failed run's chat is owed word of the failure as a finished run's is its answer.
        if matches!(
            run.phase,
            RunPhase::Finished { .. } | RunPhase::Failed { .. }
        ) && answered_in_a_chat(&run.session)
        {
            self.store.put(UNANSWERED_TREE, run.id.as_bytes(), b"")?;
        }
        if !open {
            let now = crate::clock::now_secs();
            // A session's activity is dated when a run ends (once a turn, not at every step):
            // a session with an open run is never idle, whatever its date says.
            self.note_activity(&run.session, &run.agent, now)?;
            // Dated before the flush: a save dropped after its flush (a cancelled task) still
            // leaves a finished run retention can find.
            self.store.put(
                FINISHED_RUNS_TREE,
                &crate::store::aged::key(now, run.id.as_bytes()),
                b"",
            )?;
        }
        self.store
            .put(RUNS_TREE, run.id.as_bytes(), &encode(run)?)?;
        Ok(())
    }

    /// A save's writes once the run is durable.
    fn after_durable(&self, run: &RunRecord) -> Result<(), StoreError> {
        if !run.is_open() {
            // Durable with the next flush; until then a stale entry is only read and dropped.
            self.store.delete(OPEN_RUNS_TREE, run.id.as_bytes())?;
            // A run whose first reply was its answer never had a call, so it has no steps to
            // look for (a finished run clears its calls: its round tells).
            if run.round > 1 || !run.calls.is_empty() {
                self.forget_open(&run.id)?;
            }
        }
        Ok(())
    }

    /// Drops what only an open run needs: its open-runs entry and its calls' own steps.
    fn forget_open(&self, id: &str) -> Result<(), StoreError> {
        self.store.delete(OPEN_RUNS_TREE, id.as_bytes())?;
        let steps = format!("{id}\0");
        for (key, _) in self.store.scan_prefix(RUN_CALLS_TREE, steps.as_bytes())? {
            self.store.delete(RUN_CALLS_TREE, &key)?;
        }
        Ok(())
    }

    /// Notes that run `id`'s answer reached its chat (durable with the next flush).
    pub fn answered(&self, id: &str) -> Result<(), StoreError> {
        self.store.delete(UNANSWERED_TREE, id.as_bytes())
    }

    /// The finished runs whose answer may not have reached their chat (after a restart: a kill
    /// came between the finished record and the answer).
    pub fn unanswered(&self) -> Result<Vec<RunRecord>, StoreError> {
        let mut unanswered = Vec::new();
        for (id, _) in self.store.scan_prefix(UNANSWERED_TREE, b"")? {
            match self
                .store
                .get(RUNS_TREE, &id)?
                .map(|b| decode::<RunRecord>(&b))
            {
                Some(Ok(run))
                    if matches!(
                        run.phase,
                        RunPhase::Finished { .. } | RunPhase::Failed { .. }
                    ) =>
                {
                    unanswered.push(run);
                }
                _ => {
                    self.store.delete(UNANSWERED_TREE, &id)?;
                }
            }
        }
        Ok(unanswered)
    }

    /// Dates at `now` the finished runs of a store written before they were dated.
    pub fn date_undated(&self, now: u64) -> Result<usize, StoreError> {
        let store = self.store.as_ref();
        let finished = store
            .scan_prefix(RUNS_TREE, b"")?
            .into_iter()
            .filter_map(|(id, bytes)| {
                decode::<RunRecord>(&bytes)
                    .is_ok_and(|run| !run.is_open())
                    .then_some((id, None))
            });
        crate::store::aged::date_undated(store, FINISHED_RUNS_TREE, finished, now)
    }

    /// Deletes the runs that finished before `before` (seconds); how many.
    pub fn prune_finished(&self, before: u64) -> Result<usize, StoreError> {
        let store = self.store.as_ref();
        let mut pruned = 0;
        for (index_key, id) in crate::store::aged::older_than(store, FINISHED_RUNS_TREE, before)? {
            // Judged by the record itself: a save cut off after its flush may have left the
            // open-runs entry and call steps behind, and they go with it.
            let finished = store
                .get(RUNS_TREE, &id)?
                .is_some_and(|b| decode::<RunRecord>(&b).is_ok_and(|run| !run.is_open()));
            if finished {
                self.forget_open(&String::from_utf8_lossy(&id))?;
                store.delete(UNANSWERED_TREE, &id)?;
                store.delete(RUNS_TREE, &id)?;
                pruned += 1;
            }
            store.delete(FINISHED_RUNS_TREE, &index_key)?;
        }
        Ok(pruned)
    }

    /// Whether run `id` is recorded (in any phase).
    pub fn exists(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.store.get(RUNS_TREE, id.as_bytes())?.is_some())
    }

    pub fn load(&self, id: &str) -> Result<Option<RunRecord>, StoreError> {
        self.store
            .get(RUNS_TREE, id.as_bytes())?
            .map(|b| decode(&b).and_then(|run| self.with_call_steps(run)))
            .transpose()
    }

    /// Saves one call's step, durably (the journal's write), waiting for the flush without
    /// holding an async worker.
    pub async fn save_call_soon(
        &self,
        run: &str,
        call: &str,
        state: &CallState,
    ) -> Result<(), StoreError> {
        self.store
            .put(RUN_CALLS_TREE, &call_key(run, call), &encode(state)?)?;
        self.store.flush_soon().await
    }

    /// The run with each call's own record applied where it got further than the run's copy
    /// (the run record is rewritten only between batches of calls).
    fn with_call_steps(&self, mut run: RunRecord) -> Result<RunRecord, StoreError> {
        let prefix = format!("{}\0", run.id);
        for (key, bytes) in self.store.scan_prefix(RUN_CALLS_TREE, prefix.as_bytes())? {
            let call = String::from_utf8_lossy(&key[prefix.len()..]).into_owned();
            let Ok(step) = decode::<CallState>(&bytes) else {
                continue;
            };
            if let Some(record) = run.calls.iter_mut().find(|c| c.call.id == call)
                && step.progress() >= record.state.progress()
            {
                record.state = step;
            }
        }
        Ok(run)
    }

    /// Runs that have not finished (to resume after a restart).
    pub fn open_runs(&self) -> Result<Vec<RunRecord>, StoreError> {
        let mut open = Vec::new();
        for (id, _) in self.store.scan_prefix(OPEN_RUNS_TREE, b"")? {
            let run = self
                .store
                .get(RUNS_TREE, &id)?
                .map(|bytes| decode::<RunRecord>(&bytes).and_then(|run| self.with_call_steps(run)))
                .transpose()?
                .filter(RunRecord::is_open);
            match run {
                Some(run) => open.push(run),
                None => {
                    self.store.delete(OPEN_RUNS_TREE, &id)?;
                }
            }
        }
        Ok(open)
    }

    /// Ends as failed every open run nobody resumes after a restart — a subagent's (its
    /// parent's call was interrupted with it; the parent's model asks again if it needs to)
    /// and a one-off `tollgate run`'s (its process is gone) — so that retention prunes them
    /// instead of every start reading them forever; how many. For where the store is opened
    /// after a restart (the store's lock keeps every other process out, so no such run is
    /// live).
    pub fn close_orphaned(&self) -> Result<usize, StoreError> {
        let orphaned: Vec<RunRecord> = self
            .open_runs()?
            .into_iter()
            .filter(|run| run.session.contains(":sub:") || run.session.starts_with("run:"))
            .map(|mut run| {
                run.phase = RunPhase::Failed {
                    error: "interrupted: the process running it stopped".into(),
                };
                run
            })
            .collect();
        if orphaned.is_empty() {
            return Ok(0);
        }
        for run in &orphaned {
            self.write(run)?;
        }
        self.store.flush()?;
        for run in &orphaned {
            self.after_durable(run)?;
        }
        Ok(orphaned.len())
    }

    /// Marks every call recorded as running as interrupted (on SIGTERM: the process is about to
    /// kill them). Calls waiting for approval stay pending. Returns how many were marked.
    pub fn interrupt_running(&self, note: &str) -> Result<usize, StoreError> {
        let mut marked = 0;
        for mut run in self.open_runs()? {
            let mut changed = false;
            for record in &mut run.calls {
                if record.state == CallState::Running {
                    record.state = CallState::Done {
                        output: note.to_string(),
                        is_error: true,
                    };
                    changed = true;
                    marked += 1;
                }
            }
            if changed {
                self.save(&run)?;
            }
        }
        Ok(marked)
    }

    pub fn transcript(&self, session: &str) -> Result<Vec<ChatMessage>, StoreError> {
        let changes = match self.kept_transcript(session) {
            kept::Lookup::Kept(transcript) => return transcript,
            kept::Lookup::Read { changes } => changes,
        };
        let bytes = self.store.get(TRANSCRIPT_TREE, session.as_bytes())?;
        let transcript = bytes
            .as_deref()
            .map(decode)
            .transpose()?
            .unwrap_or_default();
        self.keep_transcript_if_unchanged(session, bytes.as_deref(), changes);
        Ok(transcript)
    }

    /// Writes a transcript without flushing: for a write followed at once by a flushed
    /// [`RunStore::save`]. The store recovers a prefix of its writes (SQLite: whole commits,
    /// in order), so once that save is durable, so is this write; one flush instead of two on
    /// every turn.
    pub fn stage_transcript(
        &self,
        session: &str,
        transcript: &[ChatMessage],
    ) -> Result<(), StoreError> {
        let bytes = encode(&transcript)?;
        let changes = self.kept_changes();
        match self.store.put(TRANSCRIPT_TREE, session.as_bytes(), &bytes) {
            Ok(()) => {
                self.keep_transcript_if_unchanged(session, Some(&bytes), changes);
                Ok(())
            }
            Err(e) => {
                self.forget_kept_transcript();
                Err(e)
            }
        }
    }

    /// Saves a transcript, durably.
    pub fn save_transcript(
        &self,
        session: &str,
        transcript: &[ChatMessage],
    ) -> Result<(), StoreError> {
        self.stage_transcript(session, transcript)?;
        self.store.flush()
    }
}
