//! What a tool may ask of the runtime it runs in, as the tools module defines it: a question
//! to the requester, a subagent for a task, the conversation. The runtime (the executor, the
//! agent, the bridges) implements these; tools never import the runtime, so the dependency
//! runs one way.

use std::future::Future;
use std::pin::Pin;

/// A host's answer: the text the tool returns, or why it failed (shown to the model).
pub type HostFuture<'a> = Pin<Box<dyn Future<Output = Result<String, HostError>> + Send + 'a>>;

/// Why a host could not do what a tool asked (the model sees the message).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HostError(pub String);

impl From<String> for HostError {
    fn from(message: String) -> Self {
        HostError(message)
    }
}

/// A question's answer; `None` when it was not answered.
pub type QuestionFuture<'a> = Pin<Box<dyn Future<Output = Option<String>> + Send + 'a>>;

/// Asks the requester a question (`ask_user_question`).
pub trait QuestionAsker: Send + Sync {
    /// Shows the question and waits for the answer; `None` where nobody can answer (a run, a
    /// subagent, a reminder): the tool then fails at once.
    fn ask_question(
        &self,
        _session: &str,
        _question: &str,
        _choices: &[String],
    ) -> Option<QuestionFuture<'_>> {
        None
    }
}

/// Starts a subagent for the calling session (`spawn_subagent`); the runtime binds it to that
/// session, so the tool only names the task and the tools.
pub trait SubagentSpawner: Send + Sync {
    /// `cancel` is a child of the calling run's token: `/stop` reaches the subagent too.
    fn spawn<'a>(
        &'a self,
        task: &'a str,
        tools: Option<Vec<String>>,
        cancel: tokio_util::sync::CancellationToken,
    ) -> HostFuture<'a>;
}

/// The conversation a call belongs to (`summarize_context`, `context_info`).
pub trait ContextHost: Send + Sync {
    /// Replaces the earlier conversation with a summary; the current turn stays.
    fn summarize<'a>(&'a self, session: &'a str, focus: Option<&'a str>) -> HostFuture<'a>;
    /// How much of the conversation there is.
    fn describe(&self, session: &str) -> String;
}

/// A media file read from the workspace, for a companion model.
#[derive(Clone, Debug)]
pub struct MediaFile {
    /// As named in the workspace (for the log and a transcription endpoint's file name).
    pub name: String,
    pub bytes: Vec<u8>,
}

/// A companion picked on a card, and the kind of media it was picked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chosen {
    pub role: String,
    pub companion: String,
}

/// The agent's companion models (`analyze_media`).
pub trait CompanionHost: Send + Sync {
    /// The largest file the agent sends (`media_max_mb`): the tool reads no more than this.
    fn max_bytes(&self) -> u64;

    /// Sends `file` to the companion bound for its kind (or to `chosen`, picked on a card from
    /// the agent's choices), with `question`; the answer, or why nothing was sent (nothing
    /// bound: the message names the fix).
    fn analyze<'a>(
        &'a self,
        session: &'a str,
        file: MediaFile,
        question: &'a str,
        chosen: Option<Chosen>,
    ) -> HostFuture<'a>;
}
