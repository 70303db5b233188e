//! What the executor calls out to and the runtime provides: the classifier, the write-ahead
//! journal, the conversation (`summarize_context`, `context_info`) and the subagent host.

use super::*;

pub type ClassifyFuture<'a> = Pin<Box<dyn Future<Output = ClassifierReport> + Send + 'a>>;

/// Places an unclassified command on a tier (the agent runtime brings the model-backed one).
pub trait Classifier: Send + Sync {
    fn classify<'a>(&'a self, command: &'a str) -> ClassifyFuture<'a>;
}

/// No classifier: unclassified commands ask a human.
pub struct NoClassifier;

impl Classifier for NoClassifier {
    fn classify<'a>(&'a self, _command: &'a str) -> ClassifyFuture<'a> {
        Box::pin(async { ClassifierReport::not_run("no classifier is configured here") })
    }
}

pub type JournalFuture<'a> = Pin<Box<dyn Future<Output = Result<(), JournalError>> + Send + 'a>>;

/// Where a call's progress is written ahead: pending before its card is shown, running before
/// it starts, done after. A failed write stops the call (nothing runs that was not recorded).
/// The future completes once the step is durable (its flush waited for without holding an
/// async worker).
pub trait CallJournal: Send + Sync {
    fn record<'a>(
        &'a self,
        session: &'a str,
        call_id: &'a str,
        status: JournalStatus,
    ) -> JournalFuture<'a>;
}

/// Why a call's step could not be written ahead (the call then does not run).
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("session {0} has no active run")]
    NoActiveRun(String),
    #[error("call {call} is not part of run {run}")]
    UnknownCall { call: String, run: String },
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// A step of one call, as the journal records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JournalStatus {
    Pending,
    Running,
    Done { output: String, is_error: bool },
}

/// Runs a subagent of `parent` to completion and returns its final answer (the agent runtime
/// implements it; a call's tool sees it bound to its session, as a [`SubagentSpawner`]).
pub trait SubagentHost: Send + Sync {
    fn run<'a>(
        &'a self,
        parent: &'a SessionPolicy,
        task: &'a str,
        tools: Option<Vec<String>>,
        // A child of the parent run's token: `/stop` reaches the subagent too.
        cancel: CancellationToken,
    ) -> HostFuture<'a>;
}

/// A subagent host bound to the session of one call.
pub(super) struct BoundSubagents {
    pub host: Arc<dyn SubagentHost>,
    /// The session's policy as of the call, bounded by the live session: what its subagents
    /// start from and are bounded by.
    pub parent: Arc<SessionPolicy>,
}

impl SubagentSpawner for BoundSubagents {
    fn spawn<'a>(
        &'a self,
        task: &'a str,
        tools: Option<Vec<String>>,
        cancel: CancellationToken,
    ) -> HostFuture<'a> {
        self.host.run(&self.parent, task, tools, cancel)
    }
}
