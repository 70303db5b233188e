//! Committing and syncing: what a flush does (everything pending in one transaction on the
//! writing connection, then the log synced, then a checkpoint when the log is long), and the
//! committer thread that does it for writes nobody flushes.

use super::pending::Committing;
use super::{
    BEGIN, CHECKPOINT_AT_PAGES, COMMIT, COMMIT_EVERY, REMOVE_ONE, Result, Shared, WRITE_ONE, lock,
};
use rusqlite::{Connection, params};
use std::fs::File;
use std::sync::atomic::Ordering;
use std::sync::{Arc, mpsc};

/// Commits what nobody flushed every [`COMMIT_EVERY`], until told to stop.
pub(super) fn spawn_committer(
    shared: Arc<Shared>,
    stop: mpsc::Receiver<()>,
) -> Option<std::thread::JoinHandle<()>> {
    let spawned = std::thread::Builder::new()
        .name("tollgate-committer".into())
        .spawn(move || {
            // Said once while it lasts, not at every try.
            let mut failing: Option<String> = None;
            while let Err(mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(COMMIT_EVERY) {
                if shared.accepting().pending.is_empty() {
                    // Someone's flush committed it all.
                    if failing.take().is_some() {
                        tracing::info!("the store commits again");
                    }
                    continue;
                }
                match shared.flush() {
                    Err(e) if failing.as_deref() != Some(&e.to_string()) => {
                        tracing::warn!("committing the store in the background: {e}");
                        failing = Some(e.to_string());
                    }
                    Err(_) => {}
                    Ok(()) => {
                        if failing.take().is_some() {
                            tracing::info!("the store commits again");
                        }
                    }
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

impl Shared {
    /// Commits everything pending and syncs the log.
    pub(super) fn flush(&self) -> Result<()> {
        self.commit_pending()?;
        self.sync_wal()?;
        self.checkpoint_if_long()
    }

    /// Commits everything pending, in one transaction (not synced: see [`Shared::flush`]).
    pub(super) fn commit_pending(&self) -> Result<()> {
        let writer = lock(&self.writer);
        let to_commit = {
            let accepting = self.accepting();
            accepting.refuse_if_lost(&self.dir)?;
            accepting.pending.to_commit()
        };
        if to_commit.is_empty() {
            return Ok(());
        }
        let committed = commit(&writer, &to_commit);
        let mut accepting = self.accepting();
        match committed {
            Ok(()) => {
                accepting.pending.settle(&to_commit);
                accepting.commit_failed = None;
                Ok(())
            }
            Err(e) => {
                accepting.commit_failed = Some(e.to_string());
                Err(self.error("commit", e))
            }
        }
    }

    /// Folds the log into the database once it is longer than [`CHECKPOINT_AT_PAGES`].
    pub(super) fn checkpoint_if_long(&self) -> Result<()> {
        if self.wal_pages.load(Ordering::Relaxed) > CHECKPOINT_AT_PAGES {
            self.checkpoint()?;
        }
        Ok(())
    }

    /// Syncs the log. A failed sync is final: Linux reports a write-back error once and
    /// marks the pages clean, so a second sync would succeed without making them durable.
    pub(super) fn sync_wal(&self) -> Result<()> {
        let _one_at_a_time = lock(&self.syncing);
        self.accepting().refuse_if_lost(&self.dir)?;
        self.sync_data().map_err(|e| {
            self.accepting()
                .lost
                .get_or_insert_with(|| format!("syncing the write-ahead log failed: {e}"));
            self.error("syncing the log", e)
        })
    }

    pub(super) fn sync_data(&self) -> std::io::Result<()> {
        #[cfg(test)]
        if let Some(fault) = lock(&self.sync_fault).as_mut() {
            return fault();
        }
        self.wal.sync_data()
    }

    pub(super) fn sync_dir(&self) -> Result<()> {
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| self.error("syncing the directory", e))
    }

    /// Folds the log into the database (SQLite syncs the log before copying and the
    /// database after); the next commit writes the log from its start. Flushes wait
    /// meanwhile (it runs once per 8 MiB of log); reads and writes do not. If a read kept
    /// the log in use, the next flush tries again.
    pub(super) fn checkpoint(&self) -> Result<()> {
        let writer = lock(&self.writer);
        self.accepting().refuse_if_lost(&self.dir)?;
        let busy: i64 = writer
            .query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| r.get(0))
            .map_err(|e| self.error("checkpoint", e))?;
        if busy == 0 {
            self.wal_pages.store(0, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// Commits `writes` in one transaction; on failure nothing of them is left in the database.
fn commit(writer: &Connection, writes: &[Committing]) -> rusqlite::Result<()> {
    let committed = (|| {
        writer.prepare_cached(BEGIN)?.execute([])?;
        // Taken from the cache once a commit, not once a write (each take hashes the text).
        let mut write_one = writer.prepare_cached(WRITE_ONE)?;
        let mut remove_one = writer.prepare_cached(REMOVE_ONE)?;
        for write in writes {
            match &write.value {
                Some(value) => {
                    write_one.execute(params![&*write.tree, &*write.key, value.as_ref()])?
                }
                None => remove_one.execute(params![&*write.tree, &*write.key])?,
            };
        }
        drop((write_one, remove_one));
        writer.prepare_cached(COMMIT)?.execute([])
    })();
    if committed.is_err() && !writer.is_autocommit() {
        // SQLite may have rolled back already; if not, the failed statement's transaction
        // must not linger open.
        let _ = writer.execute_batch("ROLLBACK");
    }
    committed.map(|_| ())
}
