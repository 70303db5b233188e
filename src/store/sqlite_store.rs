//! The SQLite backend: one file, `tollgate.sqlite3`, in the store's directory, and the
//! journal beside it (`tollgate.journal-*`).
//!
//! Two connections. Writes are accepted into memory ([`pending`]) and readers see them laid
//! over what the reading connection finds committed. [`Store::flush`] appends the writes made
//! since the last flush to the [`journal`] and syncs it: writes from concurrent sessions share
//! one append and one sync — the group commit — and the write-ahead rule is unchanged: a
//! flush returns once everything written before it is durable. Only the committer thread
//! (every [`COMMIT_EVERY`]), a writer past [`PENDING_BYTES_LIMIT`] and closing use the
//! writing connection, committing everything pending in one transaction (an apply). So a
//! session's write never waits for a commit in progress, a read waits only for the map of
//! pending writes (never for the disk, a commit or a checkpoint), and the database's B-tree
//! is written once for many turns' writes.
//!
//! Why syncing the log ourselves is enough: a committed transaction is in the `-wal` file
//! before `COMMIT` returns (written, not yet synced, under `synchronous = NORMAL`); an
//! `fdatasync` of that file afterwards makes it durable. What SQLite itself must sync it does
//! under `NORMAL`: the log before a checkpoint copies it, the database after, and the log's
//! new header when the next commit starts the log over — so a power cut can never replay old
//! frames over newer pages. Automatic checkpoints are off; ours runs from the flush.
//!
//! The checkpoint starts the log over from its beginning instead of truncating it: a log whose
//! length stays the same is synced without its inode (`fdatasync` writes only the data).
//!
//! Fail closed, and lose nothing accepted: a journal write or a commit that fails (a full
//! disk) leaves its writes pending — still read, journaled or committed by the next try that
//! succeeds — and every write is refused, saying why, until one does. A failed sync of the
//! journal or the log is final: Linux marks the pages clean after reporting the error once,
//! so the store cannot tell what is durable, and every later write and flush fails until a
//! restart.
//!
//! A second process is kept out by a lock on `tollgate.lock` beside the database, held while
//! the store is open (SQLite's own locks are let go between transactions).

mod commits;
mod journal;
mod open;
mod pending;
mod reader;

use super::{Result, Store, StoreError};
use commits::spawn_committer;
use journal::Journal;
use pending::Pending;
use reader::Reader;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The database file inside the store's directory.
pub const FILE_NAME: &str = "tollgate.sqlite3";

/// The file whose lock says a process has the store open.
const LOCK_FILE_NAME: &str = "tollgate.lock";

/// A log of more pages than this (8 MiB of 4 KiB pages) is folded into the database at the
/// next flush, bounding both the log's size and the time a restart spends reading it.
const CHECKPOINT_AT_PAGES: i64 = 2048;

/// What is pending is applied to the database this often (and journaled then if nobody
/// flushed it): writes reach the disk within about the time sled's own background flush gave
/// them, and what the database has not taken yet stays small.
const COMMIT_EVERY: Duration = Duration::from_millis(500);

/// Past this many bytes pending (or journaled since the last flush), a writer asks the
/// committer thread to apply at once; past twice as many it applies itself before going on:
/// a bulk copy (an upgrade's) cannot pile up in memory faster than the committer drains it,
/// and a burst of turns does not wait for an apply on an async worker.
const PENDING_BYTES_LIMIT: usize = 8 << 20;

/// The largest key and value together the store takes (SQLite's own limit is about 1 GB): a
/// write that could never be committed is refused when it is made, not at every flush.
const MAX_ENTRY_BYTES: usize = 256 << 20;

/// How often a scan reads the database again because a commit settled while it read, before
/// it reads holding the pending writes (keeping writers waiting for the read).
const SCAN_TRIES: usize = 3;

/// How long a connection retries when SQLite reports the database busy (the checkpoint
/// waits for a read in progress to end; reads are short).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

pub struct SqliteStore {
    shared: Arc<Shared>,
    /// The committer thread, stopped and joined when the store is dropped: the store is
    /// closed when `drop` returns, so the same process can open it again at once.
    committer: Option<std::thread::JoinHandle<()>>,
    /// Whether closing applies what is pending (tests close without it, as a kill would).
    apply_on_close: bool,
}

struct Shared {
    /// What was accepted and not yet committed, and whether writes are accepted.
    accepting: Mutex<Accepting>,
    /// Reads what is committed. Declared before `writer`: closed first, so the writer, last
    /// to close, folds the log into the database and removes it.
    reader: Mutex<Reader>,
    /// Commits, checkpoints: only an apply (or closing) holds it.
    writer: Mutex<Connection>,
    /// Where a flush makes writes durable; held across its write and sync.
    journal: Mutex<Journal>,
    /// Calls to the committer thread.
    committer: commits::CommitterCalls,
    /// Held (locked) while the store is open.
    _lock: File,
    dir: PathBuf,
    /// The write-ahead log (it exists from the first commit, made at open).
    wal: File,
    /// Held across a sync of the log and the check for losses before it. Linux reports a
    /// write-back error once per open file: of two syncs at once on `wal` (a flush and the
    /// committer's), the second would succeed without the data being on disk. It waits, and
    /// then sees the loss the first one recorded.
    syncing: Mutex<()>,
    /// Pages in the log, as SQLite reports after each commit.
    wal_pages: Arc<AtomicI64>,
    /// Tests make syncing the log fail through this.
    #[cfg(test)]
    sync_fault: Mutex<Option<SyncFault>>,
    /// Tests make writing the journal fail through this.
    #[cfg(test)]
    journal_write_fault: Mutex<Option<SyncFault>>,
}

#[cfg(test)]
type SyncFault = Box<dyn FnMut() -> std::io::Result<()> + Send>;

struct Accepting {
    pending: Pending,
    /// Why the last journal write failed: writes are refused until one succeeds.
    journal_failed: Option<String>,
    /// Why the last commit failed: writes are refused until a commit succeeds.
    commit_failed: Option<String>,
    /// Why writes the store accepted may be lost: every later write and flush fails with it.
    lost: Option<String>,
}

impl Accepting {
    fn refuse_if_lost(&self, dir: &Path) -> Result<()> {
        match &self.lost {
            Some(why) => Err(StoreError {
                context: format!("store {}", dir.display()),
                message: format!(
                    "writes the store had accepted were lost ({why}); restart tollgate once \
                     the cause is fixed (e.g. free disk space)"
                ),
            }),
            None => Ok(()),
        }
    }

    /// Whether a write may be accepted.
    fn refuse_writes(&self, dir: &Path) -> Result<()> {
        self.refuse_if_lost(dir)?;
        match self.journal_failed.as_ref().or(self.commit_failed.as_ref()) {
            Some(why) => Err(StoreError {
                context: format!("store {}", dir.display()),
                message: format!(
                    "the store cannot commit ({why}), so it takes no more writes until it can \
                     (e.g. free disk space); what it accepted is kept and committed then"
                ),
            }),
            None => Ok(()),
        }
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        self.shared.committer.stop();
        if let Some(committer) = self.committer.take() {
            let _ = committer.join();
        }
        if !self.apply_on_close {
            return;
        }
        if let Err(e) = self.shared.fold_in() {
            tracing::warn!("closing the store: {e}");
        }
    }
}

/// Takes a lock whose data a panic elsewhere cannot leave half-changed (SQLite's own state,
/// or a map changed by single inserts and removes).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn accepting(&self) -> MutexGuard<'_, Accepting> {
        lock(&self.accepting)
    }

    fn error(&self, doing: &str, e: impl std::fmt::Display) -> StoreError {
        StoreError {
            context: format!("store {} ({doing})", self.dir.display()),
            message: e.to_string(),
        }
    }
}

/// The smallest key greater than every key starting with `prefix` (`None`: no such key, the
/// prefix is all `0xff`).
fn after_prefix(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

type Rows = Vec<(Vec<u8>, Vec<u8>)>;

const BEGIN: &str = "BEGIN IMMEDIATE";
const COMMIT: &str = "COMMIT";
const READ_ONE: &str = "SELECT v FROM kv WHERE tree = ?1 AND k = ?2";
const WRITE_ONE: &str = "INSERT OR REPLACE INTO kv (tree, k, v) VALUES (?1, ?2, ?3)";
const REMOVE_ONE: &str = "DELETE FROM kv WHERE tree = ?1 AND k = ?2";
const SET_APPLIED: &str = "UPDATE journal_applied SET generation = ?1 WHERE id = 0";

// The scans. `CAST(?1 AS TEXT)` rather than `?1`: SQLite (built with STAT4, as rusqlite
// bundles it) marks a parameter compared by `=` in a query with `ORDER BY` as one whose value
// may change the plan, and recompiles the statement whenever a value is bound to it or the
// bindings are cleared — rusqlite binds at every use and its statement cache clears after.
// Compiled again at every scan, the two took 4.9% of serve's CPU in the Telegram benchmark;
// the plan is the same primary-key range search.
const SCAN_RANGE: &str =
    "SELECT k, v FROM kv WHERE tree = CAST(?1 AS TEXT) AND k >= ?2 AND k < ?3 ORDER BY k";
const SCAN_FROM: &str = "SELECT k, v FROM kv WHERE tree = CAST(?1 AS TEXT) AND k >= ?2 ORDER BY k";

impl SqliteStore {
    /// The committed value of `key`, read on a snapshot holding every apply settled by the
    /// time `settles` had been (see [`Reader`]).
    fn read_committed(&self, tree: &str, key: &[u8], settles: u64) -> Result<Option<Vec<u8>>> {
        let read = self.with_reader(settles, |reader| {
            reader
                .prepare_cached(READ_ONE)
                .and_then(|mut s| s.query_row(params![tree, key], |r| r.get(0)).optional())
        });
        read.map_err(|e| self.shared.error(&format!("reading tree `{tree}`"), e))
    }

    /// Runs `read` on the reader connection, on a snapshot holding every apply settled by
    /// the time `settles` had been, stepping aside from an async worker (a read can wait for
    /// another read or for the disk; the worker's other tasks go on meanwhile). No write or
    /// commit holds this lock (a checkpoint takes it only to end the held transaction). Most
    /// of what this first cost in memory was the blocking threads an idle serve kept; serve's
    /// runtime lets them go after a second (`cli::serve::runtime`, docs/benchmarks.md).
    fn with_reader<T>(
        &self,
        settles: u64,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        crate::step_aside::step_aside(|| lock(&self.shared.reader).read(settles, read))
    }

    /// The latest value of `key`, and the lock to write after it under (a read-then-write
    /// sees no other write between). The database is read with the lock let go, so other
    /// store calls do not wait behind the read; as a scan does, the read is kept only if no
    /// commit to `tree` settled meanwhile (its writes are pending until then).
    fn latest_then_lock(
        &self,
        tree: &str,
        key: &[u8],
    ) -> Result<(MutexGuard<'_, Accepting>, Option<Vec<u8>>)> {
        for _ in 0..SCAN_TRIES {
            let (settled, settles) = {
                let accepting = self.shared.accepting();
                if let Some(pending) = accepting.pending.get(tree, key) {
                    let latest = pending.map(<[u8]>::to_vec);
                    return Ok((accepting, latest));
                }
                (accepting.pending.settled(tree), accepting.pending.settles())
            };
            let committed = self.read_committed(tree, key, settles)?;
            let accepting = self.shared.accepting();
            if let Some(pending) = accepting.pending.get(tree, key) {
                let latest = pending.map(<[u8]>::to_vec);
                return Ok((accepting, latest));
            }
            if accepting.pending.settled(tree) == settled {
                return Ok((accepting, committed));
            }
        }
        let accepting = self.shared.accepting();
        let latest = self.read_latest(&accepting, tree, key)?;
        Ok((accepting, latest))
    }

    /// The value of `key`, pending or committed; the caller holds `accepting`, so nothing
    /// settles or is written meanwhile.
    fn read_latest(
        &self,
        accepting: &Accepting,
        tree: &str,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        match accepting.pending.get(tree, key) {
            Some(pending) => Ok(pending.map(<[u8]>::to_vec)),
            None => self.read_committed(tree, key, accepting.pending.settles()),
        }
    }

    fn write(&self, tree: &str, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        let accepting = self.shared.accepting();
        accepting.refuse_writes(&self.shared.dir)?;
        self.accept(accepting, tree, key, value)
    }

    /// Takes a write the caller checked may be made, letting go of `accepting`; past
    /// [`PENDING_BYTES_LIMIT`] commits what is pending before returning.
    fn accept(
        &self,
        mut accepting: MutexGuard<'_, Accepting>,
        tree: &str,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Result<()> {
        let bytes = key.len() + value.map_or(0, <[u8]>::len);
        if bytes > MAX_ENTRY_BYTES {
            return Err(self.shared.error(
                &format!("writing tree `{tree}`"),
                format!(
                    "an entry of {bytes} bytes is more than the store takes ({MAX_ENTRY_BYTES})"
                ),
            ));
        }
        accepting.pending.write(tree, key, value);
        let held = accepting
            .pending
            .bytes()
            .max(accepting.pending.tail_bytes());
        drop(accepting);
        if held > PENDING_BYTES_LIMIT {
            self.shared.committer.apply_now();
        }
        if held > 2 * PENDING_BYTES_LIMIT {
            // The write is taken either way: a failed commit keeps it pending, and the
            // writes after it are refused, saying why, until a commit succeeds. Stepping aside:
            // called from a task, the worker's other tasks go on meanwhile.
            let committed = crate::step_aside::step_aside(|| self.shared.apply());
            if let Err(e) = committed {
                tracing::warn!("committing a large batch of writes: {e}");
            }
        }
        Ok(())
    }

    /// The committed rows of `tree` from `from` (and before `before`), read on a snapshot
    /// holding every apply settled by the time `settles` had been.
    fn scan_committed(
        &self,
        tree: &str,
        from: &[u8],
        before: Option<&[u8]>,
        settles: u64,
    ) -> Result<Rows> {
        let rows = self.with_reader(settles, |reader| match before {
            Some(end) => reader.prepare_cached(SCAN_RANGE).and_then(|mut s| {
                s.query_map(params![tree, from, end], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            }),
            None => reader.prepare_cached(SCAN_FROM).and_then(|mut s| {
                s.query_map(params![tree, from], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            }),
        });
        rows.map_err(|e| self.shared.error(&format!("scanning tree `{tree}`"), e))
    }

    fn scan(&self, tree: &str, from: &[u8], before: Option<&[u8]>) -> Result<Rows> {
        // The rows read and the pending writes laid over them must be one moment's. A
        // commit's writes stay pending until it is settled, so if no commit settled while
        // the database was read, what it read plus what is pending now is the store now.
        for _ in 0..SCAN_TRIES {
            let (settled, settles) = {
                let accepting = self.shared.accepting();
                (accepting.pending.settled(tree), accepting.pending.settles())
            };
            let committed = self.scan_committed(tree, from, before, settles)?;
            let accepting = self.shared.accepting();
            if accepting.pending.settled(tree) == settled {
                return Ok(accepting.pending.lay_over(tree, from, before, committed));
            }
        }
        let accepting = self.shared.accepting();
        let committed = self.scan_committed(tree, from, before, accepting.pending.settles())?;
        Ok(accepting.pending.lay_over(tree, from, before, committed))
    }

    /// Every tree's name (for copying a store).
    pub fn tree_names(&self) -> Result<Vec<String>> {
        let accepting = self.shared.accepting();
        let names: rusqlite::Result<Vec<String>> =
            lock(&self.shared.reader).read(accepting.pending.settles(), |reader| {
                reader
                    .prepare_cached("SELECT DISTINCT tree FROM kv ORDER BY tree")
                    .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            });
        let mut names = names.map_err(|e| self.shared.error("listing trees", e))?;
        names.extend(accepting.pending.trees().map(str::to_string));
        names.sort();
        names.dedup();
        Ok(names)
    }
}

impl Store for SqliteStore {
    fn get(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let settles = {
            let accepting = self.shared.accepting();
            if let Some(pending) = accepting.pending.get(tree, key) {
                return Ok(pending.map(<[u8]>::to_vec));
            }
            accepting.pending.settles()
        };
        // Not pending when looked at: the database held its latest value then, and can
        // only have been given a newer one since.
        self.read_committed(tree, key, settles)
    }

    fn insert(&self, tree: &str, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        let (accepting, previous) = self.latest_then_lock(tree, key)?;
        accepting.refuse_writes(&self.shared.dir)?;
        self.accept(accepting, tree, key, Some(value))?;
        Ok(previous)
    }

    fn put(&self, tree: &str, key: &[u8], value: &[u8]) -> Result<()> {
        self.write(tree, key, Some(value))
    }

    fn remove(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let (accepting, previous) = self.latest_then_lock(tree, key)?;
        accepting.refuse_writes(&self.shared.dir)?;
        if previous.is_some() {
            self.accept(accepting, tree, key, None)?;
        }
        Ok(previous)
    }

    fn delete(&self, tree: &str, key: &[u8]) -> Result<()> {
        self.write(tree, key, None)
    }

    fn scan_prefix(&self, tree: &str, prefix: &[u8]) -> Result<Rows> {
        self.scan(tree, prefix, after_prefix(prefix).as_deref())
    }

    fn scan_before(&self, tree: &str, end: &[u8]) -> Result<Rows> {
        self.scan(tree, b"", Some(end))
    }

    fn scan_from(&self, tree: &str, start: &[u8]) -> Result<Rows> {
        self.scan(tree, start, None)
    }

    fn compare_and_swap(
        &self,
        tree: &str,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<std::result::Result<(), Option<Vec<u8>>>> {
        // One lock from the read (or from seeing it still holds) to the write: no other
        // write comes between.
        let (accepting, current) = self.latest_then_lock(tree, key)?;
        accepting.refuse_writes(&self.shared.dir)?;
        if current.as_deref() != expected {
            return Ok(Err(current));
        }
        if current.is_some() || new.is_some() {
            self.accept(accepting, tree, key, new)?;
        }
        Ok(Ok(()))
    }

    fn flush(&self) -> Result<()> {
        self.shared.flush()
    }

    fn flush_for_stop(&self) -> Result<()> {
        self.shared.fold_in()
    }
}

#[cfg(test)]
mod tests;
