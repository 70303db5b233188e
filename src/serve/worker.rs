//! One chat session: its assembled agent, a capped queue of messages, and one run at a time.
//! `/stop` cancels the run (children killed, waiting cards withdrawn, dangling calls closed)
//! and drops the queue.
//!
//! The worker is the transcript's one owner: everything that rewrites it — a run, `/new`, a
//! reminder's run — is an item of its queue, taken one at a time. So `/new` during a run waits
//! for the cancelled run to close its calls and then clears, and no turn ever sends a tool
//! result without its call (which providers reject) or has its reset undone by a run writing
//! the old history back.

use super::cards::CardApprover;
use super::error::ServeError;
use super::progress::{ProgressWatch, show_progress};
use super::shared::{Shared, lock};
use crate::agent::classifier::Surface;
use crate::agent::error::{RunError, SetupError};
use crate::agent::runs::{RunRecord, RunStore};
use crate::agent::setup::{Assembled, assemble_with};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tollgate_surface::ChatRef;
use tracing::Instrument;

/// What a session works on next.
pub enum Work {
    /// A user's message (with the generation it was queued in: `/stop` drops older ones).
    Message {
        text: String,
        requester: (i64, String),
        generation: u64,
    },
    /// A run left open by the last process (boxed: a queue slot is sized by its largest item).
    Resume(Box<RunRecord>),
    /// `/new`: forget the conversation once the run before it has wound down.
    Reset,
    /// A reminder fired: an unattended run (nobody answers its prompts) with this text, under
    /// the reminder's own run id.
    Reminder {
        reminder: String,
        run: String,
        text: String,
    },
    /// The answer of a run the last process finished but may not have sent.
    Answer { run: String, answer: String },
}

/// Whether a message got into the queue.
#[derive(Debug, PartialEq, Eq)]
pub enum Queued {
    Yes,
    /// The queue is full: the first drop is announced, later ones are silent.
    Full {
        announce: bool,
    },
    /// The worker was evicted as idle: start a fresh one.
    Evicted,
}

/// A session and its worker task.
pub struct SessionWorker {
    pub key: String,
    pub chat: ChatRef,
    /// The agent that answers here (its bridge's).
    pub agent: String,
    pub assembled: Assembled,
    pub approver: Arc<CardApprover>,
    /// Waiting work (a plain deque: an idle session's empty queue allocates nothing).
    queue: Mutex<VecDeque<Work>>,
    queue_cap: usize,
    ready: Notify,
    generation: AtomicU64,
    /// The current run's token (a clone of the one it runs with); `Some` while a run works.
    running: Mutex<Option<CancellationToken>>,
    full_announced: AtomicBool,
    progress: Arc<ProgressWatch>,
    /// Messages queued or running, plus one while the worker's start is under way: a worker
    /// is evicted only at zero.
    pending: AtomicUsize,
    /// Closed when the worker is evicted: a message then goes to a fresh worker.
    open: Mutex<bool>,
    evicted: Notify,
    last_active: Mutex<Instant>,
    /// Idle this long, the worker is let go (its bridge's `idle_session_secs`).
    idle_after: Duration,
}

impl SessionWorker {
    /// Assembles the agent for this session and starts its worker.
    pub fn start(
        shared: &Arc<Shared>,
        key: &str,
        chat: ChatRef,
        agent: &str,
    ) -> Result<Arc<Self>, ServeError> {
        let settings = &shared
            .bridge(chat.platform)
            .ok_or(ServeError::BridgeNotRunning(chat.platform.as_str()))?
            .settings;
        let parts = shared
            .parts(agent)
            .ok_or_else(|| SetupError::UnknownAgent(agent.to_string()))?;
        let approver = Arc::new(CardApprover {
            shared: shared.clone(),
            chat: chat.clone(),
            session: key.to_string(),
            agent: agent.to_string(),
            requester: Mutex::new((0, String::new())),
            run: Mutex::new(String::new()),
        });
        let progress = Arc::new(ProgressWatch::default());
        let assembled = assemble_with(
            parts,
            &shared.config,
            agent,
            key,
            Surface::Bridge,
            shared.store.clone(),
            // While the worker lives, its runners write the session's transcript through
            // this store (retention, which deletes it, has the worker forget it): it keeps
            // the transcript, and its turns do not read it back.
            RunStore::keeping_transcript(shared.store.clone()),
            approver.clone(),
            Some(progress.clone()),
        )?;
        super::dials::restore(shared, &assembled.session);
        let worker = Arc::new(SessionWorker {
            key: key.to_string(),
            chat,
            agent: agent.to_string(),
            assembled,
            approver,
            queue: Mutex::new(VecDeque::new()),
            queue_cap: settings.queue_cap.max(1),
            ready: Notify::new(),
            generation: AtomicU64::new(0),
            running: Mutex::new(None),
            full_announced: AtomicBool::new(false),
            progress,
            // 1 while its start is under way (`Service::start` releases it): a worker in the
            // map but not yet handed its first message is not idle.
            pending: AtomicUsize::new(1),
            open: Mutex::new(true),
            evicted: Notify::new(),
            last_active: Mutex::new(Instant::now()),
            idle_after: Duration::from_secs(settings.idle_session_secs),
        });
        tokio::spawn(work(shared.clone(), worker.clone()));
        Ok(worker)
    }

    /// Queues a message.
    pub fn enqueue(&self, text: String, requester: (i64, String)) -> Queued {
        let work = Work::Message {
            text,
            requester,
            generation: self.generation.load(Ordering::SeqCst),
        };
        self.push(work)
    }

    /// [`Queued::Full`] if a message queued now would be dropped for a full queue: checked
    /// before a message's files are fetched and transcribed, so a dropped message costs no
    /// download, disk or transcription. (The queue may fill meanwhile; `enqueue` checks again.)
    pub fn full_now(&self) -> Option<Queued> {
        (lock(&self.queue).len() >= self.queue_cap).then(|| Queued::Full {
            announce: !self.full_announced.swap(true, Ordering::SeqCst),
        })
    }

    fn push(&self, work: Work) -> Queued {
        let open = lock(&self.open);
        if !*open {
            return Queued::Evicted;
        }
        // Counted before it can be taken, so the count never goes below zero.
        self.pending.fetch_add(1, Ordering::SeqCst);
        let mut queue = lock(&self.queue);
        if queue.len() >= self.queue_cap {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            return Queued::Full {
                announce: !self.full_announced.swap(true, Ordering::SeqCst),
            };
        }
        queue.push_back(work);
        // A permit is stored if the worker is not waiting yet: nothing is missed.
        self.ready.notify_one();
        Queued::Yes
    }

    /// Queues a run to resume (after a restart: the queue is empty then).
    pub fn resume(&self, run: RunRecord) -> Queued {
        // Never dropped for a full queue: the run's user is waiting for it.
        self.push_always(Work::Resume(Box::new(run)))
    }

    /// `/new`: stops the run and drops what was queued before, then clears the transcript once
    /// that run has wound down (messages sent after it are answered in the new conversation).
    /// Not counted against the queue cap: a reset is never dropped.
    pub fn reset(&self) -> Queued {
        self.stop();
        self.push_always(Work::Reset)
    }

    /// The answer of a finished run the last process may not have sent (never dropped).
    pub fn send_answer(&self, run: String, answer: String) -> Queued {
        self.push_always(Work::Answer { run, answer })
    }

    /// A fired reminder (already claimed in the store: it is never dropped for a full queue).
    pub fn remind(&self, reminder: &crate::reminders::Reminder, text: String) -> Queued {
        self.push_always(Work::Reminder {
            reminder: reminder.id.clone(),
            run: reminder.run_id(),
            text,
        })
    }

    fn push_always(&self, work: Work) -> Queued {
        let open = lock(&self.open);
        if !*open {
            return Queued::Evicted;
        }
        self.pending.fetch_add(1, Ordering::SeqCst);
        lock(&self.queue).push_back(work);
        self.ready.notify_one();
        Queued::Yes
    }

    /// Ends the worker if nothing is queued or running and it has been idle long enough; its
    /// state is in the store, and its next message starts a fresh worker.
    pub fn evict_if_idle(&self) -> bool {
        self.evict_if_idle_for(self.idle_after)
    }

    /// [`SessionWorker::evict_if_idle`], for a worker idle at least `idle`.
    pub fn evict_if_idle_for(&self, idle: Duration) -> bool {
        let mut open = lock(&self.open);
        if !*open
            || self.pending.load(Ordering::SeqCst) > 0
            || lock(&self.last_active).elapsed() < idle
        {
            return false;
        }
        *open = false;
        self.evicted.notify_one();
        true
    }

    /// Its start is over (see `pending`): from now on it is idle whenever nothing is queued
    /// or running.
    pub fn started(&self) {
        self.pending.fetch_sub(1, Ordering::SeqCst);
    }

    /// When the worker last finished something (or started), if nothing is queued or running.
    pub fn idle_since(&self) -> Option<Instant> {
        (self.pending.load(Ordering::SeqCst) == 0).then(|| *lock(&self.last_active))
    }

    /// Ends the task of a worker that was never used (another message started the session's
    /// worker first).
    pub fn close_unused(&self) {
        *lock(&self.open) = false;
        self.evicted.notify_one();
    }

    async fn next_work(&self) -> Work {
        loop {
            if let Some(work) = lock(&self.queue).pop_front() {
                return work;
            }
            self.ready.notified().await;
        }
    }

    /// `/stop`: cancels the run and drops the queue; false if nothing was running.
    pub fn stop(&self) -> bool {
        self.generation.fetch_add(1, Ordering::SeqCst);
        // The token stays until the run has wound down: the session is busy until then.
        match lock(&self.running).as_ref() {
            Some(cancel) => {
                cancel.cancel();
                true
            }
            None => false,
        }
    }

    #[must_use]
    pub fn is_busy(&self) -> bool {
        lock(&self.running).is_some()
    }
}

async fn work(shared: Arc<Shared>, worker: Arc<SessionWorker>) {
    let mut turn = 0u64;
    loop {
        let work = tokio::select! {
            work = worker.next_work() => Some(work),
            () = worker.evicted.notified() => None,
        };
        let Some(work) = work else { break };
        // A slot opened: the next full queue is announced again.
        worker.full_announced.store(false, Ordering::SeqCst);
        // Boxed: an idle worker's task then holds a small future, not a whole run's.
        Box::pin(process(&shared, &worker, work, &mut turn)).await;
        *lock(&worker.last_active) = Instant::now();
        worker.pending.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Sends run `run`'s answer to the session's chat and, once that is settled, notes it (so a
/// restart does not send it again). An answer that failed for a reason that may pass stays
/// noted as unanswered: the next start sends it.
async fn deliver(shared: &Shared, worker: &SessionWorker, run: &str, answer: &str) {
    if !shared.answer(&worker.chat, answer).await {
        return;
    }
    if let Err(e) = shared.runs.answered(run) {
        shared.log(&format!(
            "session {}: noting run {run} answered: {e}",
            worker.key
        ));
    }
}

/// Runs one queued item and sends its answer.
async fn process(shared: &Arc<Shared>, worker: &Arc<SessionWorker>, work: Work, turn: &mut u64) {
    let cancel = CancellationToken::new();
    let session = worker.assembled.session.clone();
    let runner = &worker.assembled.runner;
    let mut reminder_over = None;
    // The run this item started or resumed, for its failure's notice.
    let this_run: Option<String>;
    let outcome = match work {
        Work::Message {
            generation,
            text,
            requester,
        } => {
            if generation < worker.generation.load(Ordering::SeqCst) {
                return;
            }
            *turn += 1;
            let run_id = format!(
                "{}:{}:{turn}",
                worker.key,
                crate::clock::now_rfc3339_millis()
            );
            *lock(&worker.approver.requester) = requester.clone();
            *lock(&worker.approver.run) = run_id.clone();
            this_run = Some(run_id.clone());
            *lock(&worker.running) = Some(cancel.clone());
            worker.progress.clear();
            let progress = spawn_progress(shared, worker);
            // Every log line of the run carries its session and run ids. A `warn`-level span,
            // so the default filter (`warn`) keeps it.
            let span = tracing::warn_span!("run", session = %worker.key, run = %run_id);
            let outcome = runner
                .start_asked_by(session, &run_id, &text, Some(requester), cancel)
                .instrument(span)
                .await;
            if let Some(progress) = progress {
                progress.abort();
            }
            outcome
        }
        // A reminder's run stays unattended after a restart too: nobody answers its prompts,
        // and it shows no progress, as when it first fired.
        Work::Resume(run) if crate::reminders::is_reminder_run(&run.id, &worker.key) => {
            this_run = Some(run.id.clone());
            *lock(&worker.running) = Some(cancel.clone());
            let span = tracing::warn_span!("run", session = %worker.key, run = %run.id);
            match unattended(shared, worker) {
                Ok(unattended) => {
                    let session = unattended.session.clone();
                    unattended
                        .runner
                        .resume(session, *run, cancel)
                        .instrument(span)
                        .await
                }
                Err(e) => Err(e.into()),
            }
        }
        Work::Resume(run) => {
            *lock(&worker.approver.run) = run.id.clone();
            // Who asked, as the run's record kept it: its cards name them again, and they
            // can answer its questions.
            *lock(&worker.approver.requester) = run.requester.clone().unwrap_or_default();
            this_run = Some(run.id.clone());
            *lock(&worker.running) = Some(cancel.clone());
            let progress = spawn_progress(shared, worker);
            let span = tracing::warn_span!("run", session = %worker.key, run = %run.id);
            let outcome = runner.resume(session, *run, cancel).instrument(span).await;
            if let Some(progress) = progress {
                progress.abort();
            }
            outcome
        }
        Work::Reset => {
            // Through the runner's store, which keeps the transcript its turns read.
            if let Err(e) = runner.runs.save_transcript(&worker.key, &[]) {
                shared.log(&format!(
                    "session {}: clearing the transcript: {e}",
                    worker.key
                ));
                shared
                    .notice(
                        &worker.chat,
                        "⚠ The conversation could not be reset; try /new again.",
                    )
                    .await;
            }
            return;
        }
        Work::Answer { run, answer } => {
            deliver(shared, worker, &run, &answer).await;
            return;
        }
        Work::Reminder {
            reminder,
            run: run_id,
            text,
        } => {
            *turn += 1;
            reminder_over = Some((reminder, run_id.clone()));
            this_run = Some(run_id.clone());
            *lock(&worker.running) = Some(cancel.clone());
            match unattended(shared, worker) {
                Ok(unattended) => {
                    unattended
                        .runner
                        .start(unattended.session.clone(), &run_id, &text, cancel)
                        .await
                }
                Err(e) => Err(e.into()),
            }
        }
    };
    lock(&worker.running).take();
    match outcome {
        Ok(done) => deliver(shared, worker, &done.run_id, &done.answer).await,
        Err(error) => {
            // The chat is untrusted: a provider's error carries its endpoint and response
            // body, a store error a path. The chat gets the gist; the log gets the rest.
            shared.log(&format!("session {}: the run failed: {error}", worker.key));
            shared.notice(&worker.chat, &failure_for_chat(&error)).await;
            // Told: a failed run's record is marked unanswered until now, so that a kill
            // before the notice has it told after the restart.
            if let Some(run) = &this_run
                && let Err(e) = shared.runs.answered(run)
            {
                shared.log(&format!(
                    "session {}: noting run {run} answered: {e}",
                    worker.key
                ));
            }
        }
    }
    // Its run is over. Recorded, it is not delivered again (a restart would resume or answer
    // it); never recorded (it could not start: logged above), it keeps its mark and fires
    // again at the next start.
    if let Some((reminder, run)) = reminder_over
        && matches!(shared.runs.exists(&run), Ok(true))
        && let Err(e) = crate::reminders::Reminders::new(shared.store.clone()).delivered(&reminder)
    {
        shared.log(&format!(
            "session {}: noting reminder {reminder} delivered: {e}",
            worker.key
        ));
    }
}

/// What a chat is told of a failed run: which kind of failure, never its details (a model
/// error holds its endpoint and the provider's answer, a store error a path).
fn failure_for_chat(error: &RunError) -> String {
    match error {
        error if error.is_for_the_user() => format!("⚠ {error}"),
        RunError::Model(_) => "⚠ The run failed: the model could not be reached or sent a reply that could not be read. The operator's log has the details; try again in a moment.".into(),
        _ => "⚠ The run failed. The operator's log has the details.".into(),
    }
}

/// The session assembled for an unattended run: the same agent and transcript, with nobody to
/// answer its prompts (a reminder's calls that need a human are refused, with the fix named).
/// Its mode is the stricter of the chat's live `/mode` and the agent's configured one (nobody
/// watches it: an admin's `/mode high-risk` for a chat they attend does not carry over, and a
/// stricter `/mode` reaches it while it runs), and it is never wider than the chat's live
/// session: an admin's `/sandbox read-only` or revoke reaches it too.
fn unattended(shared: &Arc<Shared>, worker: &SessionWorker) -> Result<Assembled, SetupError> {
    // A reminder's run cannot add reminders (it would feed itself).
    let parts = shared
        .parts(&worker.agent)
        .ok_or_else(|| SetupError::UnknownAgent(worker.agent.clone()))?
        .for_reminders();
    let assembled = assemble_with(
        &parts,
        &shared.config,
        &worker.agent,
        &worker.key,
        Surface::Unattended,
        shared.store.clone(),
        // The worker's: the transcript it keeps sees what this run writes.
        worker.assembled.runner.runs.clone(),
        Arc::new(crate::executor::approval::NobodyApproves),
        None,
    )?;
    let chat = &worker.assembled.session;
    // The stricter mode as it starts too: should the binding ever be refused (a session is
    // bound once), the run still starts no wider than its chat.
    let configured = assembled.session.snapshot().dials.mode;
    assembled
        .session
        .set_mode(chat.snapshot().dials.mode.min(configured));
    if !assembled.session.bind_with_mode_to(chat.bound()) {
        tracing::warn!(
            "session {}: a reminder's run was already bound; it keeps its chat's mode as it started",
            worker.key
        );
    }
    Ok(assembled)
}

/// The task that shows a run's typing and progress, while the run lasts; none when the
/// bridge shows neither (a task spawned for nothing costs each turn a spawn and a wake).
fn spawn_progress(
    shared: &Arc<Shared>,
    worker: &Arc<SessionWorker>,
) -> Option<tokio::task::JoinHandle<()>> {
    let settings = &shared.bridge(worker.chat.platform)?.settings;
    if !settings.typing && settings.progress_interval_secs == 0 {
        return None;
    }
    let (shared, worker) = (shared.clone(), worker.clone());
    Some(tokio::spawn(async move {
        show_progress(&shared, &worker.chat, &worker.progress).await
    }))
}
