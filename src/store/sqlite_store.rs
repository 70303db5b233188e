//! The SQLite backend: one file, `tollgate.sqlite3`, in the store's directory.
//!
//! Writes go into one open transaction, so readers (which share the one connection) see them
//! at once and a turn's many small writes reach the log together. [`Store::flush`] commits it
//! and syncs the write-ahead log: SQLite itself never syncs (`synchronous = OFF`) except around
//! a checkpoint, so the disk wait happens *after* the lock is released — writers carry on
//! while a flush waits for the disk, as they did with sled.
//!
//! Why syncing the log ourselves is enough: a committed transaction is in the `-wal` file
//! before `COMMIT` returns (written, not yet synced); an `fdatasync` of that file afterwards
//! makes it durable. The log is only emptied by a checkpoint this file runs itself, with
//! `synchronous = NORMAL` for its duration, so SQLite syncs the database file before the log
//! is written over. Automatic checkpoints are off; SQLite's own at close runs with
//! `synchronous = NORMAL` too.
//!
//! The checkpoint starts the log over from its beginning instead of truncating it: a log whose
//! length stays the same is synced without its inode (`fdatasync` writes only the data).

use super::{Result, Store, StoreError};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
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
}

struct Shared {
    conn: Mutex<Open>,
    dir: PathBuf,
    /// The write-ahead log, opened once it exists (synced after each commit).
    wal: Mutex<Option<File>>,
    /// Pages in the log, as SQLite reports after each commit.
    wal_pages: Arc<AtomicI64>,
}

/// The connection, always inside a transaction, and whether that transaction wrote anything.
struct Open {
    conn: Connection,
    dirty: bool,
    /// Why SQLite rolled back the open transaction (a failed write or commit, e.g. a full
    /// disk): writes callers were told had succeeded are gone, so the next flush fails.
    rolled_back: Option<String>,
}

impl Open {
    /// After a failed statement: if SQLite rolled the transaction back, note it and open the
    /// next one, so later writes are batched again.
    fn after_failure(&mut self, why: &str) {
        if self.conn.is_autocommit() {
            self.rolled_back.get_or_insert_with(|| why.to_string());
            self.dirty = false;
            if let Err(e) = self.conn.execute_batch("BEGIN IMMEDIATE") {
                tracing::warn!("reopening the store's transaction: {e}");
            }
        }
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
        let path = dir.join(FILE_NAME);
        let mut conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sqlite_failed)?;
        let cache_kib = i64::try_from(cache_mb.saturating_mul(1024)).unwrap_or(i64::MAX);
        // Exclusive locking before WAL: the log's index lives in this process's memory (no
        // shared-memory file), and the lock taken at the first transaction is never let go,
        // so a second process cannot open the store underneath this one.
        conn.execute_batch(&format!(
            "PRAGMA locking_mode = EXCLUSIVE;
             PRAGMA journal_mode = WAL;
             PRAGMA synchronous = OFF;
             PRAGMA wal_autocheckpoint = 0;
             PRAGMA cache_size = -{cache_kib};"
        ))
        .map_err(sqlite_failed)?;
        // Take the lock now, so a second process fails here with a clear message.
        conn.execute_batch("BEGIN IMMEDIATE")
            .map_err(sqlite_failed)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS kv (
                 tree TEXT NOT NULL,
                 k BLOB NOT NULL,
                 v BLOB NOT NULL,
                 PRIMARY KEY (tree, k)
             ) WITHOUT ROWID",
        )
        .map_err(sqlite_failed)?;
        let wal_pages = Arc::new(AtomicI64::new(0));
        let counted = wal_pages.clone();
        // After the pragmas: setting `wal_autocheckpoint` replaces this hook.
        conn.wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages| {
            counted.store(i64::from(pages), Ordering::Relaxed);
            Ok(())
        }))
        .map_err(sqlite_failed)?;
        let shared = Arc::new(Shared {
            conn: Mutex::new(Open {
                conn,
                dirty: true,
                rolled_back: None,
            }),
            dir: dir.to_path_buf(),
            wal: Mutex::new(None),
            wal_pages,
        });
        // The table (on a first open) is durable, and the log's file is in its directory.
        shared.flush()?;
        shared.sync_dir()?;
        spawn_committer(Arc::downgrade(&shared));
        Ok(SqliteStore { shared })
    }
}

/// Commits what nobody flushed every [`COMMIT_EVERY`], until the store is dropped.
fn spawn_committer(shared: Weak<Shared>) {
    let spawned = std::thread::Builder::new()
        .name("tollgate-committer".into())
        .spawn(move || {
            loop {
                std::thread::sleep(COMMIT_EVERY);
                let Some(shared) = shared.upgrade() else {
                    return;
                };
                if shared.lock().dirty
                    && let Err(e) = shared.flush()
                {
                    tracing::warn!("committing the store in the background: {e}");
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("no background commit thread (writes wait for the next flush): {e}");
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
            if let Some(why) = open.rolled_back.take() {
                return Err(self.error(
                    "commit",
                    format!("writes since the last flush were rolled back: {why}"),
                ));
            }
            if open.dirty {
                if let Err(e) = open.conn.execute_batch("COMMIT; BEGIN IMMEDIATE") {
                    open.after_failure(&e.to_string());
                    // This error is the report of the loss.
                    open.rolled_back = None;
                    return Err(self.error("commit", e));
                }
                open.dirty = false;
            }
            self.wal_pages.load(Ordering::Relaxed) > CHECKPOINT_AT_PAGES
        };
        self.sync_wal()?;
        if checkpoint {
            self.checkpoint()?;
        }
        Ok(())
    }

    fn wal_path(&self) -> PathBuf {
        self.dir.join(format!("{FILE_NAME}-wal"))
    }

    fn sync_wal(&self) -> Result<()> {
        let mut wal = self.wal.lock().unwrap_or_else(|p| p.into_inner());
        if wal.is_none() {
            match File::open(self.wal_path()) {
                Ok(file) => *wal = Some(file),
                // No log yet: nothing was committed through one.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(self.error("opening the log", e)),
            }
        }
        match wal.as_ref() {
            Some(file) => file
                .sync_data()
                .map_err(|e| self.error("syncing the log", e)),
            None => Ok(()),
        }
    }

    fn sync_dir(&self) -> Result<()> {
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| self.error("syncing the directory", e))
    }

    /// Folds the log into the database: with `synchronous = NORMAL` for its duration, SQLite
    /// syncs the log before copying and the database after; the next commit writes the log
    /// from its start.
    fn checkpoint(&self) -> Result<()> {
        let mut open = self.lock();
        let folded = open.conn.execute_batch(
            "COMMIT;
             PRAGMA synchronous = NORMAL;
             PRAGMA wal_checkpoint(RESTART);
             PRAGMA synchronous = OFF;
             BEGIN IMMEDIATE",
        );
        folded.map_err(|e| {
            // Stopped part way: back to syncing ourselves, inside a transaction. What was
            // committed stays committed, so nothing is reported lost.
            let _ = open.conn.execute_batch("PRAGMA synchronous = OFF");
            open.after_failure(&e.to_string());
            open.rolled_back = None;
            self.error("checkpoint", e)
        })?;
        self.wal_pages.store(0, Ordering::Relaxed);
        Ok(())
    }
}

impl Drop for Shared {
    /// Closing commits what is open (SQLite would roll it back) and lets SQLite sync as it
    /// checkpoints at close. Runs when the last handle goes, the store's or the committer's.
    fn drop(&mut self) {
        if let Err(e) = self.flush().and_then(|()| self.checkpoint()) {
            tracing::warn!("closing the store: {e}");
        }
        let open = self.lock();
        if let Err(e) = open
            .conn
            .execute_batch("COMMIT; PRAGMA synchronous = NORMAL")
        {
            tracing::warn!("closing the store: {e}");
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

impl SqliteStore {
    fn read_one(&self, open: &Open, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        open.conn
            .prepare_cached("SELECT v FROM kv WHERE tree = ?1 AND k = ?2")
            .and_then(|mut s| s.query_row(params![tree, key], |r| r.get(0)).optional())
            .map_err(|e| self.shared.error(&format!("reading tree `{tree}`"), e))
    }

    fn write_one(
        &self,
        open: &mut Open,
        tree: &str,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Result<()> {
        let written = match value {
            Some(value) => open
                .conn
                .prepare_cached("INSERT OR REPLACE INTO kv (tree, k, v) VALUES (?1, ?2, ?3)")
                .and_then(|mut s| s.execute(params![tree, key, value])),
            None => open
                .conn
                .prepare_cached("DELETE FROM kv WHERE tree = ?1 AND k = ?2")
                .and_then(|mut s| s.execute(params![tree, key])),
        };
        if let Err(e) = written {
            open.after_failure(&e.to_string());
            return Err(self.shared.error(&format!("writing tree `{tree}`"), e));
        }
        open.dirty = true;
        Ok(())
    }

    fn scan(&self, tree: &str, from: &[u8], before: Option<&[u8]>) -> Result<Rows> {
        let open = self.shared.lock();
        let failed = |e| self.shared.error(&format!("scanning tree `{tree}`"), e);
        let rows = match before {
            Some(end) => open
                .conn
                .prepare_cached(
                    "SELECT k, v FROM kv WHERE tree = ?1 AND k >= ?2 AND k < ?3 ORDER BY k",
                )
                .and_then(|mut s| {
                    s.query_map(params![tree, from, end], |r| Ok((r.get(0)?, r.get(1)?)))?
                        .collect()
                }),
            None => open
                .conn
                .prepare_cached("SELECT k, v FROM kv WHERE tree = ?1 AND k >= ?2 ORDER BY k")
                .and_then(|mut s| {
                    s.query_map(params![tree, from], |r| Ok((r.get(0)?, r.get(1)?)))?
                        .collect()
                }),
        };
        rows.map_err(failed)
    }

    /// Every tree's name (for copying a store).
    pub fn tree_names(&self) -> Result<Vec<String>> {
        let open = self.shared.lock();
        open.conn
            .prepare_cached("SELECT DISTINCT tree FROM kv ORDER BY tree")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| self.shared.error("listing trees", e))
    }
}

impl Store for SqliteStore {
    fn get(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let open = self.shared.lock();
        self.read_one(&open, tree, key)
    }

    fn insert(&self, tree: &str, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut open = self.shared.lock();
        let previous = self.read_one(&open, tree, key)?;
        self.write_one(&mut open, tree, key, Some(value))?;
        Ok(previous)
    }

    fn remove(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut open = self.shared.lock();
        let previous = self.read_one(&open, tree, key)?;
        if previous.is_some() {
            self.write_one(&mut open, tree, key, None)?;
        }
        Ok(previous)
    }

    fn scan_prefix(&self, tree: &str, prefix: &[u8]) -> Result<Rows> {
        self.scan(tree, prefix, after_prefix(prefix).as_deref())
    }

    fn scan_before(&self, tree: &str, end: &[u8]) -> Result<Rows> {
        self.scan(tree, b"", Some(end))
    }

    fn compare_and_swap(
        &self,
        tree: &str,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<std::result::Result<(), Option<Vec<u8>>>> {
        let mut open = self.shared.lock();
        let current = self.read_one(&open, tree, key)?;
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
mod tests {
    use super::{CHECKPOINT_AT_PAGES, SqliteStore, after_prefix};
    use crate::store::Store;
    use std::sync::atomic::Ordering;

    #[test]
    fn a_write_the_disk_refuses_is_an_error_and_the_next_flush_reports_the_loss() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path(), 8).unwrap();
        store.insert("t", b"before", b"v").unwrap();
        // As if the disk were full: the database may not grow past its current size.
        store
            .shared
            .lock()
            .conn
            .execute_batch("PRAGMA max_page_count = 8")
            .unwrap();
        let big = vec![7u8; 64 * 1024];
        let refused = store.insert("t", b"big", &big).unwrap_err();
        assert!(refused.message.contains("full"), "{refused}");
        // Either the earlier write is still there and flushes, or the flush says it is gone.
        // SQLite rolls the whole transaction back on a full disk: the earlier write, which
        // its caller was told had succeeded, is gone, and the flush that would have made it
        // durable says so instead of succeeding.
        let lost = store.flush().unwrap_err();
        assert!(lost.message.contains("rolled back"), "{lost}");
        assert_eq!(store.get("t", b"before").unwrap(), None);
        assert_eq!(store.get("t", b"big").unwrap(), None);
        // And the store goes on working.
        store
            .shared
            .lock()
            .conn
            .execute_batch("PRAGMA max_page_count = 1000000")
            .unwrap();
        store.insert("t", b"after", b"w").unwrap();
        store.flush().unwrap();
        assert_eq!(store.get("t", b"after").unwrap(), Some(b"w".to_vec()));
    }

    #[test]
    fn a_long_log_is_folded_into_the_database_and_nothing_is_lost() {
        let dir = tempfile::tempdir().unwrap();
        let value = vec![3u8; 4000];
        {
            let store = SqliteStore::open(dir.path(), 8).unwrap();
            for i in 0u32..3000 {
                store.insert("t", &i.to_be_bytes(), &value).unwrap();
            }
            store.flush().unwrap();
            assert_eq!(
                store.shared.wal_pages.load(Ordering::Relaxed),
                0,
                "the flush after a log of more than {CHECKPOINT_AT_PAGES} pages checkpoints"
            );
            let wal_len = std::fs::metadata(store.shared.wal_path()).unwrap().len();
            // The next commits write the log from its start: it does not grow.
            for i in 3000u32..3100 {
                store.insert("t", &i.to_be_bytes(), &value).unwrap();
            }
            store.flush().unwrap();
            assert_eq!(
                std::fs::metadata(store.shared.wal_path()).unwrap().len(),
                wal_len
            );
        }
        let reopened = SqliteStore::open(dir.path(), 8).unwrap();
        let rows = reopened.scan_prefix("t", b"").unwrap();
        assert_eq!(rows.len(), 3100);
        assert!(rows.iter().all(|(_, v)| *v == value));
    }

    #[test]
    fn the_end_of_a_prefix_range() {
        assert_eq!(after_prefix(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(after_prefix(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(after_prefix(b"\xff\xff"), None);
        assert_eq!(after_prefix(b""), None);
    }
}
