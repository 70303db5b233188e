//! What a proposed call would touch, resolved before the gate sees it: the sandbox step judges
//! these, never the raw arguments.

use std::path::PathBuf;

/// One effect of a proposed call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Reads this fully resolved path (symlinks followed, `..` removed).
    Read(PathBuf),
    /// Writes, creates or removes this fully resolved path.
    Write(PathBuf),
    /// Talks to this host over the network.
    Network { url: String, host: String },
}
