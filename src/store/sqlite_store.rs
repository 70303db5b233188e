//! The SQLite backend: one file, `tollgate.sqlite3`, in the store's directory.
//!
//! Writes go into one open transaction, so readers (which share the one connection) see them
//! at once and a turn's many small writes reach the log together. [`Store::flush`] commits it
//! and then syncs the write-ahead log itself, *after* the lock is released: writers carry on
//! while a flush waits for the disk, as they did with sled.
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
//! Fail closed: if writes a caller was told had succeeded are lost — SQLite rolled the open
//! transaction back (a full disk does), or syncing the log failed — the store cannot tell
//! whose they were, so every later write and flush fails, saying why, until a restart.

use super::{Result, Store, StoreError};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::time::Duration;

/// The database file inside the store's directory.
pub const FILE_NAME: &str = "tollgate.sqlite3";

/// A log of more pages than this (8 MiB of 4 KiB pages) is folded into the database at the
/// next flush, bounding both the log's size and the time a restart spends reading it.
const CHECKPOINT_AT_PAGES: i64 = 2048;

/// Writes nobody flushed are committed this often, so they reach the disk within about the
/// time sled's own background flush gave them.
const COMMIT_EVERY: Duration = Duration::from_millis(500);

pub struct SqliteStore {
    shared: Arc<Shared>,
    /// Dropped to stop the committer thread, which is then joined: the store is closed when
    /// `drop` returns, so the same process can open it again at once.
    stop_committer: Option<mpsc::Sender<()>>,
    committer: Option<std::thread::JoinHandle<()>>,
}

struct Shared {
    conn: Mutex<Open>,
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
}

#[cfg(test)]
type SyncFault = Box<dyn FnMut() -> std::io::Result<()> + Send>;

/// The connection, inside a transaction whenever something was written, and whether that
/// transaction holds writes callers were told had succeeded.
struct Open {
    conn: Connection,
    dirty: bool,
    /// Why accepted writes were lost: every later write and flush fails with it.
    lost: Option<String>,
}

impl Open {
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

    /// After any failed statement: SQLite may have rolled the whole transaction back.
    fn after_failure(&mut self, why: &rusqlite::Error) {
        if self.dirty && self.conn.is_autocommit() {
            self.lost.get_or_insert_with(|| why.to_string());
            self.dirty = false;
        }
    }

    /// Opens the transaction writes are batched in, unless it is open.
    fn in_transaction(&mut self) -> rusqlite::Result<()> {
        if self.conn.is_autocommit() {
            // Cached, like every statement here: not parsed again at every transaction.
            self.conn.prepare_cached(BEGIN)?.execute([])?;
        }
        Ok(())
    }

    /// Commits the open transaction, if any.
    fn commit(&mut self) -> rusqlite::Result<()> {
        if self.conn.is_autocommit() {
            return Ok(());
        }
        let committed = self
            .conn
            .prepare_cached(COMMIT)
            .and_then(|mut s| s.execute([]))
            .map(|_| ());
        match &committed {
            Ok(()) => self.dirty = false,
            Err(e) => self.after_failure(e),
        }
        committed
    }
}

impl SqliteStore {
    /// Opens (or creates) the store in directory `dir`, with a page cache of `cache_mb`
    /// megabytes. A second process gets an error saying the store is held.
    pub fn open(dir: &Path, cache_mb: u64) -> Result<Self> {
        let failed = |message: String| StoreError {
            context: format!("opening the store at {}", dir.display()),
            message,
        };
        // Any step can be the one that meets another process's lock.
        let sqlite_failed = |e: rusqlite::Error| match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
                failed(format!(
                    "{e}: another tollgate process (is `tollgate serve` running?) holds this store"
                ))
            }
            _ => failed(e.to_string()),
        };
        std::fs::create_dir_all(dir).map_err(|e| failed(e.to_string()))?;
        let mut conn = Connection::open_with_flags(
            dir.join(FILE_NAME),
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sqlite_failed)?;
        let cache_kib = i64::try_from(cache_mb.saturating_mul(1024)).unwrap_or(i64::MAX);
        // Exclusive locking before WAL: the log's index lives in this process's memory (no
        // shared-memory file), and the lock taken at the first transaction is never let go,
        // so a second process cannot open the store underneath this one.
        conn.execute_batch("PRAGMA locking_mode = EXCLUSIVE")
            .map_err(sqlite_failed)?;
        let journal: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(sqlite_failed)?;
        if !journal.eq_ignore_ascii_case("wal") {
            // Without the log, syncing it would make nothing durable.
            return Err(failed(format!(
                "SQLite refused the write-ahead log (journal mode `{journal}`)"
            )));
        }
        conn.execute_batch(&format!(
            "PRAGMA synchronous = NORMAL;
             PRAGMA wal_autocheckpoint = 0;
             PRAGMA cache_size = -{cache_kib};"
        ))
        .map_err(sqlite_failed)?;
        let wal_pages = Arc::new(AtomicI64::new(0));
        let counted = wal_pages.clone();
        // After the pragmas: setting `wal_autocheckpoint` replaces this hook.
        conn.wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages| {
            counted.store(i64::from(pages), Ordering::Relaxed);
            Ok(())
        }))
        .map_err(sqlite_failed)?;
        // Take the lock now, so a second process fails here with a clear message; the
        // table's creation (or a no-op on an existing store) makes the first commit, which
        // creates the log.
        conn.execute_batch(
            "BEGIN IMMEDIATE;
             CREATE TABLE IF NOT EXISTS kv (
                 tree TEXT NOT NULL,
                 k BLOB NOT NULL,
                 v BLOB NOT NULL,
                 PRIMARY KEY (tree, k)
             ) WITHOUT ROWID;
             PRAGMA user_version = 1;
             COMMIT;",
        )
        .map_err(sqlite_failed)?;
        let wal = File::open(dir.join(format!("{FILE_NAME}-wal")))
            .map_err(|e| failed(format!("opening the write-ahead log: {e}")))?;
        let shared = Arc::new(Shared {
            conn: Mutex::new(Open {
                conn,
                dirty: false,
                lost: None,
            }),
            dir: dir.to_path_buf(),
            wal,
            syncing: Mutex::new(()),
            wal_pages,
            #[cfg(test)]
            sync_fault: Mutex::new(None),
        });
        // The table (on a first open) is durable, and the log's file is in its directory.
        shared.sync_wal()?;
        shared.sync_dir()?;
        let (stop_committer, stop) = mpsc::channel();
        let committer = spawn_committer(shared.clone(), stop);
        Ok(SqliteStore {
            shared,
            stop_committer: Some(stop_committer),
            committer,
        })
    }
}

/// Commits what nobody flushed every [`COMMIT_EVERY`], until told to stop.
fn spawn_committer(
    shared: Arc<Shared>,
    stop: mpsc::Receiver<()>,
) -> Option<std::thread::JoinHandle<()>> {
    let spawned = std::thread::Builder::new()
        .name("tollgate-committer".into())
        .spawn(move || {
            while let Err(mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(COMMIT_EVERY) {
                if shared.lock().dirty
                    && let Err(e) = shared.flush()
                {
                    tracing::warn!("committing the store in the background: {e}");
                }
            }
        });
    match spawned {
        Ok(handle) => Some(handle),
        Err(e) => {
            tracing::warn!("no background commit thread (writes wait for the next flush): {e}");
            None
        }
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        self.stop_committer.take();
        if let Some(committer) = self.committer.take() {
            let _ = committer.join();
        }
        // Commit what is open (closing would roll it back) and fold the log in; SQLite's
        // own checkpoint at close then finds nothing left and removes the log.
        if let Err(e) = self.shared.flush().and_then(|()| self.shared.checkpoint()) {
            tracing::warn!("closing the store: {e}");
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Open> {
        // The connection's state is SQLite's own: a panic elsewhere leaves it whole.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn error(&self, doing: &str, e: impl std::fmt::Display) -> StoreError {
        StoreError {
            context: format!("store {} ({doing})", self.dir.display()),
            message: e.to_string(),
        }
    }

    /// Commits the open transaction and syncs the log (outside the lock).
    fn flush(&self) -> Result<()> {
        let checkpoint = {
            let mut open = self.lock();
            open.refuse_if_lost(&self.dir)?;
            open.commit().map_err(|e| self.error("commit", e))?;
            self.wal_pages.load(Ordering::Relaxed) > CHECKPOINT_AT_PAGES
        };
        self.sync_wal()?;
        if checkpoint {
            self.checkpoint()?;
        }
        Ok(())
    }

    /// Syncs the log. A failed sync is final: Linux reports a write-back error once and
    /// marks the pages clean, so a second sync would succeed without making them durable.
    fn sync_wal(&self) -> Result<()> {
        let _one_at_a_time = self.syncing.lock().unwrap_or_else(|p| p.into_inner());
        self.lock().refuse_if_lost(&self.dir)?;
        self.sync_data().map_err(|e| {
            let mut open = self.lock();
            open.lost
                .get_or_insert_with(|| format!("syncing the write-ahead log failed: {e}"));
            self.error("syncing the log", e)
        })
    }

    fn sync_data(&self) -> std::io::Result<()> {
        #[cfg(test)]
        if let Some(fault) = self
            .sync_fault
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
        {
            return fault();
        }
        self.wal.sync_data()
    }

    fn sync_dir(&self) -> Result<()> {
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| self.error("syncing the directory", e))
    }

    /// Folds the log into the database (SQLite syncs the log before copying and the
    /// database after); the next commit writes the log from its start. Store calls wait
    /// meanwhile: it runs once per 8 MiB of log.
    fn checkpoint(&self) -> Result<()> {
        let mut open = self.lock();
        open.refuse_if_lost(&self.dir)?;
        open.commit().map_err(|e| self.error("checkpoint", e))?;
        open.conn
            .execute_batch("PRAGMA wal_checkpoint(RESTART)")
            .map_err(|e| self.error("checkpoint", e))?;
        self.wal_pages.store(0, Ordering::Relaxed);
        Ok(())
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
    fn read_one(&self, open: &mut Open, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let read = open
            .conn
            .prepare_cached(READ_ONE)
            .and_then(|mut s| s.query_row(params![tree, key], |r| r.get(0)).optional());
        read.map_err(|e| {
            // A read can spill the cache and fail on a full disk, rolling back like a write.
            open.after_failure(&e);
            self.shared.error(&format!("reading tree `{tree}`"), e)
        })
    }

    fn write_one(
        &self,
        open: &mut Open,
        tree: &str,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Result<()> {
        open.refuse_if_lost(&self.shared.dir)?;
        let written = open.in_transaction().and_then(|()| match value {
            Some(value) => open
                .conn
                .prepare_cached(WRITE_ONE)
                .and_then(|mut s| s.execute(params![tree, key, value])),
            None => open
                .conn
                .prepare_cached(REMOVE_ONE)
                .and_then(|mut s| s.execute(params![tree, key])),
        });
        if let Err(e) = written {
            open.after_failure(&e);
            return Err(self.shared.error(&format!("writing tree `{tree}`"), e));
        }
        open.dirty = true;
        Ok(())
    }

    fn scan(&self, tree: &str, from: &[u8], before: Option<&[u8]>) -> Result<Rows> {
        let mut open = self.shared.lock();
        let rows = match before {
            Some(end) => open.conn.prepare_cached(SCAN_RANGE).and_then(|mut s| {
                s.query_map(params![tree, from, end], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            }),
            None => open.conn.prepare_cached(SCAN_FROM).and_then(|mut s| {
                s.query_map(params![tree, from], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            }),
        };
        rows.map_err(|e| {
            open.after_failure(&e);
            self.shared.error(&format!("scanning tree `{tree}`"), e)
        })
    }

    /// Every tree's name (for copying a store).
    pub fn tree_names(&self) -> Result<Vec<String>> {
        let mut open = self.shared.lock();
        let names = open
            .conn
            .prepare_cached("SELECT DISTINCT tree FROM kv ORDER BY tree")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect());
        names.map_err(|e| {
            open.after_failure(&e);
            self.shared.error("listing trees", e)
        })
    }
}

impl Store for SqliteStore {
    fn get(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut open = self.shared.lock();
        self.read_one(&mut open, tree, key)
    }

    fn insert(&self, tree: &str, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut open = self.shared.lock();
        let previous = self.read_one(&mut open, tree, key)?;
        self.write_one(&mut open, tree, key, Some(value))?;
        Ok(previous)
    }

    fn put(&self, tree: &str, key: &[u8], value: &[u8]) -> Result<()> {
        let mut open = self.shared.lock();
        self.write_one(&mut open, tree, key, Some(value))
    }

    fn remove(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut open = self.shared.lock();
        // Even where nothing is written: what it read may be a rolled-back state.
        open.refuse_if_lost(&self.shared.dir)?;
        let previous = self.read_one(&mut open, tree, key)?;
        if previous.is_some() {
            self.write_one(&mut open, tree, key, None)?;
        }
        Ok(previous)
    }

    fn delete(&self, tree: &str, key: &[u8]) -> Result<()> {
        let mut open = self.shared.lock();
        self.write_one(&mut open, tree, key, None)
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
        let mut open = self.shared.lock();
        // A mismatch answered from a rolled-back state would be a wrong answer, not an error.
        open.refuse_if_lost(&self.shared.dir)?;
        let current = self.read_one(&mut open, tree, key)?;
        if current.as_deref() != expected {
            return Ok(Err(current));
        }
        if current.is_some() || new.is_some() {
            self.write_one(&mut open, tree, key, new)?;
        }
        Ok(Ok(()))
    }

    fn flush(&self) -> Result<()> {
        self.shared.flush()
    }
}

#[cfg(test)]
mod tests;
