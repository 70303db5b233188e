//! The service's errors at its boundary: a bridge section that cannot be served, a session that
//! cannot start. The chat never sees their text (it may hold paths); the log and the exit
//! message do.

use crate::agent::error::SetupError;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A bridge's config section is missing or names what does not exist.
    #[error("{0}")]
    Settings(String),
    #[error("two bridges for {0}")]
    TwoBridges(&'static str),
    #[error("no bridge to serve")]
    NoBridge,
    #[error("no {0} bridge is running")]
    BridgeNotRunning(&'static str),
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("the store: {0}")]
    Store(#[from] StoreError),
    #[error("encoding a record: {0}")]
    Encoding(#[from] serde_json::Error),
}
