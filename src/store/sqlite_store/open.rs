//! Opening the store: its lock, the two connections and their settings, the tables, the
//! journal's replay, and the committer thread.

use super::*;

impl SqliteStore {
    /// Opens (or creates) the store in directory `dir`, with page caches of `cache_mb`
    /// megabytes in all. A second process gets an error saying the store is held.
    pub fn open(dir: &Path, cache_mb: u64) -> Result<Self> {
        Self::open_with(dir, cache_mb, true)
    }

    /// Opens the store without its committer thread: nothing reaches the database but what a
    /// test applies itself (or a writer past the pending limit), so a kill's outcome does not
    /// depend on when the thread last woke.
    #[cfg(test)]
    pub(super) fn open_unattended(dir: &Path, cache_mb: u64) -> Result<Self> {
        Self::open_with(dir, cache_mb, false)
    }

    fn open_with(dir: &Path, cache_mb: u64, with_committer: bool) -> Result<Self> {
        let failed = |message: String| StoreError {
            context: format!("opening the store at {}", dir.display()),
            message,
        };
        let held = || {
            failed(
                "another tollgate process (is `tollgate serve` running?) holds this store"
                    .to_string(),
            )
        };
        let sqlite_failed = |e: rusqlite::Error| match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
                failed(format!(
                    "{e}: another tollgate process (is `tollgate serve` running?) holds this store"
                ))
            }
            _ => failed(e.to_string()),
        };
        std::fs::create_dir_all(dir).map_err(|e| failed(e.to_string()))?;
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(LOCK_FILE_NAME))
            .map_err(|e| failed(format!("opening {LOCK_FILE_NAME}: {e}")))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(held()),
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(failed(format!("locking {LOCK_FILE_NAME}: {e}")));
            }
        }
        // Half the cache each. The writer's keeps the pages commits change; the reader's is
        // emptied by SQLite whenever the other connection committed since its last read, so
        // under load reads come from the OS's page cache and it mostly serves bursts of reads
        // between commits (and the command-line tools).
        let cache_kib = i64::try_from(cache_mb.saturating_mul(512)).unwrap_or(i64::MAX);
        let connect = || {
            let conn = Connection::open_with_flags(
                dir.join(FILE_NAME),
                OpenFlags::SQLITE_OPEN_READ_WRITE
                    | OpenFlags::SQLITE_OPEN_CREATE
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )?;
            conn.busy_timeout(BUSY_TIMEOUT)?;
            conn.execute_batch(&format!("PRAGMA cache_size = -{cache_kib};"))?;
            Ok::<_, rusqlite::Error>(conn)
        };
        let mut writer = connect().map_err(sqlite_failed)?;
        let journal: String = writer
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(sqlite_failed)?;
        if !journal.eq_ignore_ascii_case("wal") {
            // Without the log, syncing it would make nothing durable.
            return Err(failed(format!(
                "SQLite refused the write-ahead log (journal mode `{journal}`)"
            )));
        }
        writer
            .execute_batch(
                "PRAGMA synchronous = NORMAL;
                 PRAGMA wal_autocheckpoint = 0;",
            )
            .map_err(sqlite_failed)?;
        let wal_pages = Arc::new(AtomicI64::new(0));
        let counted = wal_pages.clone();
        // After the pragmas: setting `wal_autocheckpoint` replaces this hook.
        writer
            .wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages| {
                counted.store(i64::from(pages), Ordering::Relaxed);
                Ok(())
            }))
            .map_err(sqlite_failed)?;
        // The table's creation (or a no-op on an existing store) makes the first commit,
        // which creates the log.
        writer
            .execute_batch(
                "BEGIN IMMEDIATE;
                 CREATE TABLE IF NOT EXISTS kv (
                     tree TEXT NOT NULL,
                     k BLOB NOT NULL,
                     v BLOB NOT NULL,
                     PRIMARY KEY (tree, k)
                 ) WITHOUT ROWID;
                 CREATE TABLE IF NOT EXISTS journal_applied (
                     id INTEGER PRIMARY KEY CHECK (id = 0),
                     generation INTEGER NOT NULL,
                     database INTEGER NOT NULL
                 );
                 INSERT OR IGNORE INTO journal_applied (id, generation, database)
                     VALUES (0, 0, random());
                 PRAGMA user_version = 1;
                 COMMIT;",
            )
            .map_err(sqlite_failed)?;
        let reader = connect().map_err(sqlite_failed)?;
        reader
            .execute_batch("PRAGMA query_only = 1;")
            .map_err(sqlite_failed)?;
        let wal = File::open(dir.join(format!("{FILE_NAME}-wal")))
            .map_err(|e| failed(format!("opening the write-ahead log: {e}")))?;
        let (applied, database): (i64, i64) = writer
            .query_row(
                "SELECT generation, database FROM journal_applied WHERE id = 0",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(sqlite_failed)?;
        let (journal, replayed, through) = Journal::open(
            dir,
            u64::from_ne_bytes(database.to_ne_bytes()),
            u64::try_from(applied).unwrap_or(0),
        )
        .map_err(|e| failed(format!("reading the journal: {e}")))?;
        let shared = Arc::new(Shared {
            accepting: Mutex::new(Accepting {
                pending: Pending::default(),
                journal_failed: None,
                commit_failed: None,
                lost: None,
            }),
            reader: Mutex::new(super::Reader::new(reader)),
            writer: Mutex::new(writer),
            journal: Mutex::new(journal),
            committer: commits::CommitterCalls::default(),
            _lock: lock,
            dir: dir.to_path_buf(),
            wal,
            syncing: Mutex::new(()),
            wal_pages,
            #[cfg(test)]
            sync_fault: Mutex::new(None),
            #[cfg(test)]
            journal_write_fault: Mutex::new(None),
        });
        // What was journaled and not yet applied when the store was last closed (a kill).
        shared.replay(&replayed, through)?;
        // The table (on a first open) is durable, and the log's file is in its directory.
        shared.sync_wal()?;
        shared.sync_dir()?;
        let committer = if with_committer {
            spawn_committer(shared.clone())
        } else {
            None
        };
        Ok(SqliteStore {
            shared,
            committer,
            apply_on_close: true,
        })
    }

    /// Closes the store as a kill would: what was flushed is in the journal, and nothing more
    /// is applied or synced.
    #[cfg(test)]
    pub(super) fn close_as_killed(mut self) {
        self.apply_on_close = false;
    }
}
