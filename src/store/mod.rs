//! Durable storage behind a small trait, so the engine stays replaceable (SQLite now; sled,
//! unmaintained since 2021, only to read a store an older tollgate wrote).
//! Calls are synchronous. The SQLite backend takes writes into memory and reads through its
//! own connection, so neither waits for a commit or a sync (but for the write that finds 8
//! MiB pending, which commits them, stepping aside from its async worker); a flush does wait,
//! so async code flushes with [`Store::flush_soon`], and runs long work over many records with
//! [`blocking`].

pub mod aged;
mod allowlist;
mod group_commit;
mod memory;
pub mod migrate;
mod open;
mod sled_store;
mod sqlite_store;

pub use allowlist::{Allowlists, CommandEntry, ToolEntry};
#[cfg(feature = "test-support")]
pub use group_commit::ABORT_AT_FLUSH_ENV;
pub use group_commit::GroupCommit;
pub use memory::MemoryStore;
pub use open::open_dir;
pub use sled_store::SledStore;
pub use sqlite_store::SqliteStore;

use std::fmt;
use std::sync::Arc;

/// A storage failure, with what was being done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError {
    pub context: String,
    pub message: String,
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.context, self.message)
    }
}

impl std::error::Error for StoreError {}

pub type Result<T> = std::result::Result<T, StoreError>;

/// Ordered key-value trees with atomic compare-and-swap and an explicit flush.
pub trait Store: Send + Sync {
    fn get(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Inserts, returning the previous value.
    fn insert(&self, tree: &str, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Inserts where the previous value is not wanted: a backend that must read it back to
    /// return it (SQLite) skips the read — a transcript or run record is not copied out only
    /// to be dropped.
    fn put(&self, tree: &str, key: &[u8], value: &[u8]) -> Result<()> {
        self.insert(tree, key, value).map(|_| ())
    }
    /// Removes, returning the previous value.
    fn remove(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Removes where the previous value is not wanted ([`Store::put`]'s counterpart): no read
    /// of a value only to drop it.
    fn delete(&self, tree: &str, key: &[u8]) -> Result<()> {
        self.remove(tree, key).map(|_| ())
    }
    /// Every entry whose key starts with `prefix`, in key order.
    fn scan_prefix(&self, tree: &str, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>>;
    /// Every entry whose key is before `end`, in key order (the head of an ordered index: what
    /// is due, what is old), without reading the rest of the tree.
    fn scan_before(&self, tree: &str, end: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>>;
    /// Every entry whose key is at or after `start`, in key order (the tail of an ordered
    /// tree: what happened since), without reading the rest of the tree.
    fn scan_from(&self, tree: &str, start: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>>;
    /// Sets `key` to `new` only if it currently holds `expected` (`None` = absent). On a
    /// mismatch returns `Ok(Err(current))`: the first of two racing writers wins.
    fn compare_and_swap(
        &self,
        tree: &str,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<std::result::Result<(), Option<Vec<u8>>>>;
    /// Makes every write so far durable: called before anything that depends on a write
    /// leaves the process.
    fn flush(&self) -> Result<()>;
    /// [`Store::flush`] for a stop: a backend that keeps a journal beside its database also
    /// folds it in, so that the stopped store's database holds everything on its own.
    fn flush_for_stop(&self) -> Result<()> {
        self.flush()
    }
    /// [`Store::flush`] for async callers: completes once every write made before the call is
    /// durable, without holding an async worker while the disk works (a store with a flusher
    /// thread answers through it; any other flushes at once).
    fn flush_soon(&self) -> FlushFuture {
        let flushed = self.flush();
        Box::pin(std::future::ready(flushed))
    }
}

/// What [`Store::flush_soon`] returns.
pub type FlushFuture = std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>> + Send>>;

/// Runs a blocking store call on tokio's blocking pool.
pub async fn blocking<T, F>(store: Arc<dyn Store>, call: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce(&dyn Store) -> Result<T> + Send + 'static,
{
    tokio::task::spawn_blocking(move || call(store.as_ref()))
        .await
        .map_err(|e| StoreError {
            context: "store task".into(),
            message: e.to_string(),
        })?
}

#[cfg(test)]
mod contract;
