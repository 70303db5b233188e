//! One chat session: its assembled agent, a capped queue of messages, and one run at a time.
//! `/stop` cancels the run (children killed, waiting cards withdrawn, dangling calls closed)
//! and drops the queue.

use super::cards::CardApprover;
use super::progress::{ProgressWatch, show_progress};
use super::shared::{Shared, lock};
use crate::agent::classifier::Surface;
use crate::agent::runs::RunRecord;
use crate::agent::setup::{Assembled, assemble_watched};
use crate::tools::cancel::{Canceller, cancellation};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tollgate_surface::ChatRef;

/// What a session works on next.
pub enum Work {
    /// A user's message (with the generation it was queued in: `/stop` drops older ones).
    Message {
        text: String,
        requester: (i64, String),
        generation: u64,
    },
    /// A run left open by the last process.
    Resume(RunRecord),
}

/// Whether a message got into the queue.
#[derive(Debug, PartialEq, Eq)]
pub enum Queued {
    Yes,
    /// The queue is full: the first drop is announced, later ones are silent.
    Full {
        announce: bool,
    },
}

/// A session and its worker task.
pub struct SessionWorker {
    pub key: String,
    pub chat: ChatRef,
    pub assembled: Assembled,
    pub approver: Arc<CardApprover>,
    queue: mpsc::Sender<Work>,
    generation: AtomicU64,
    running: Mutex<Option<Canceller>>,
    busy: AtomicBool,
    full_announced: AtomicBool,
    progress: Arc<ProgressWatch>,
}

impl SessionWorker {
    /// Assembles the agent for this session and starts its worker.
    pub fn start(shared: &Arc<Shared>, key: &str, chat: ChatRef) -> Result<Arc<Self>, String> {
        let approver = Arc::new(CardApprover {
            shared: shared.clone(),
            chat: chat.clone(),
            session: key.to_string(),
            requester: Mutex::new((0, String::new())),
            run: Mutex::new(String::new()),
        });
        let progress = Arc::new(ProgressWatch::default());
        let assembled = assemble_watched(
            &shared.config,
            &shared.agent,
            key,
            Surface::Bridge,
            shared.store.clone(),
            approver.clone(),
            Some(progress.clone()),
        )?;
        let (queue, receiver) = mpsc::channel(shared.telegram.queue_cap.max(1));
        let worker = Arc::new(SessionWorker {
            key: key.to_string(),
            chat,
            assembled,
            approver,
            queue,
            generation: AtomicU64::new(0),
            running: Mutex::new(None),
            busy: AtomicBool::new(false),
            full_announced: AtomicBool::new(false),
            progress,
        });
        tokio::spawn(work(shared.clone(), worker.clone(), receiver));
        Ok(worker)
    }

    /// Queues a message.
    pub fn enqueue(&self, text: String, requester: (i64, String)) -> Queued {
        let work = Work::Message {
            text,
            requester,
            generation: self.generation.load(Ordering::SeqCst),
        };
        match self.queue.try_send(work) {
            Ok(()) => Queued::Yes,
            Err(_) => Queued::Full {
                announce: !self.full_announced.swap(true, Ordering::SeqCst),
            },
        }
    }

    /// Queues a run to resume (after a restart).
    pub async fn resume(&self, run: RunRecord) {
        let _ = self.queue.send(Work::Resume(run)).await;
    }

    /// `/stop`: cancels the run and drops the queue; false if nothing was running.
    pub fn stop(&self) -> bool {
        self.generation.fetch_add(1, Ordering::SeqCst);
        match lock(&self.running).take() {
            Some(canceller) => {
                canceller.cancel();
                true
            }
            None => false,
        }
    }

    #[must_use]
    pub fn is_busy(&self) -> bool {
        self.busy.load(Ordering::SeqCst)
    }
}

async fn work(shared: Arc<Shared>, worker: Arc<SessionWorker>, mut queue: mpsc::Receiver<Work>) {
    let mut turn = 0u64;
    while let Some(work) = queue.recv().await {
        // A slot opened: the next full queue is announced again.
        worker.full_announced.store(false, Ordering::SeqCst);
        let (canceller, cancel) = cancellation();
        let session = worker.assembled.session.clone();
        let runner = &worker.assembled.runner;
        let started = match work {
            Work::Message {
                generation,
                text,
                requester,
            } => {
                if generation < worker.generation.load(Ordering::SeqCst) {
                    continue;
                }
                turn += 1;
                let run_id = format!(
                    "{}:{}:{turn}",
                    worker.key,
                    crate::clock::now_rfc3339_millis()
                );
                *lock(&worker.approver.requester) = requester;
                *lock(&worker.approver.run) = run_id.clone();
                *lock(&worker.running) = Some(canceller);
                worker.busy.store(true, Ordering::SeqCst);
                worker.progress.clear();
                let progress = spawn_progress(&shared, &worker);
                let outcome = runner.start(session, &run_id, &text, cancel).await;
                progress.abort();
                outcome
            }
            Work::Resume(run) => {
                *lock(&worker.approver.run) = run.id.clone();
                *lock(&worker.running) = Some(canceller);
                worker.busy.store(true, Ordering::SeqCst);
                let progress = spawn_progress(&shared, &worker);
                let outcome = runner.resume(session, run, cancel).await;
                progress.abort();
                outcome
            }
        };
        lock(&worker.running).take();
        worker.busy.store(false, Ordering::SeqCst);
        let _ = shared.store.flush();
        match started {
            Ok(done) => {
                let answer = shared.redactor.redact(&done.answer);
                if let Err(e) = shared.bot.send_answer(&worker.chat, &answer).await {
                    shared.log(&format!(
                        "sending an answer to chat {}: {e}",
                        worker.chat.id
                    ));
                }
            }
            Err(error) => {
                shared
                    .notice(&worker.chat, &format!("⚠ The run failed: {error}"))
                    .await;
            }
        }
    }
}

fn spawn_progress(
    shared: &Arc<Shared>,
    worker: &Arc<SessionWorker>,
) -> tokio::task::JoinHandle<()> {
    let (shared, worker) = (shared.clone(), worker.clone());
    tokio::spawn(async move { show_progress(&shared, &worker.chat, &worker.progress).await })
}
