//! The agent runtime's errors, typed at its boundary: what went wrong setting a session up,
//! and why a run ended without an answer. Callers decide what to show from the kind (a chat
//! sees the gist; the log gets the message, which may hold endpoints and paths).

use crate::store::StoreError;

/// Why a session's agent could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("no agent `{0}`")]
    UnknownAgent(String),
    #[error("agent {agent}'s provider `{provider}` is not configured")]
    UnknownProvider { agent: String, provider: String },
    /// The model client could not be built (a bad base URL, TLS setup).
    #[error("the model client: {0}")]
    Provider(String),
    #[error("the store: {0}")]
    Store(#[from] StoreError),
}

/// Why a run ended without an answer.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(
        "the message is {bytes} bytes; the limit is {limit} — send a shorter one, or put the text in a file"
    )]
    MessageTooLong { bytes: usize, limit: usize },
    /// The model could not be reached, or answered with an error (the message has the details:
    /// the endpoint and the provider's answer).
    #[error("the model: {0}")]
    Model(String),
    #[error("the store: {0}")]
    Store(#[from] StoreError),
    /// The session could not be assembled for the run (a reminder's unattended run).
    #[error(transparent)]
    Setup(#[from] SetupError),
}

impl RunError {
    /// Whether the person who sent the message may see the error's text as it is: true only
    /// for errors about their own message, never for the service's internals.
    #[must_use]
    pub fn is_for_the_user(&self) -> bool {
        matches!(self, RunError::MessageTooLong { .. })
    }
}
