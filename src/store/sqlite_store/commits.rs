//! Making writes durable and bringing the database up to date: what a flush does (the writes
//! since the last one appended to the journal, which is synced), what an apply does (the
//! journal's generation closed, everything pending committed in one transaction on the
//! writing connection, the log synced, then a checkpoint when the log is long), and the
//! committer thread that applies every [`COMMIT_EVERY`].

use super::journal::Journal;
use super::pending::Committing;
use super::{
    BEGIN, CHECKPOINT_AT_PAGES, COMMIT, COMMIT_EVERY, REMOVE_ONE, Result, SET_APPLIED, Shared,
    WRITE_ONE, lock,
};
use rusqlite::{Connection, params};
use std::fs::File;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};

/// What the committer thread is asked to do before its next [`COMMIT_EVERY`].
#[derive(Default)]
pub(super) struct CommitterCalls {
    asked: Mutex<Asked>,
    call: Condvar,
}

#[derive(Default)]
struct Asked {
    apply: bool,
    stop: bool,
}

impl CommitterCalls {
    /// Asks for an apply now (a writer took the pending writes past their limit).
    pub(super) fn apply_now(&self) {
        lock(&self.asked).apply = true;
        self.call.notify_one();
    }

    /// Asks the thread to end.
    pub(super) fn stop(&self) {
        lock(&self.asked).stop = true;
        self.call.notify_one();
    }

    /// Waits for a call or [`COMMIT_EVERY`]; whether to go on (not asked to stop).
    fn wait(&self) -> bool {
        let mut asked = lock(&self.asked);
        if !asked.apply && !asked.stop {
            asked = self
                .call
                .wait_timeout(asked, COMMIT_EVERY)
                .map_or_else(|p| p.into_inner().0, |(guard, _)| guard);
        }
        asked.apply = false;
        !asked.stop
    }
}

/// Applies what is pending every [`COMMIT_EVERY`], or when asked, until asked to stop.
pub(super) fn spawn_committer(shared: Arc<Shared>) -> Option<std::thread::JoinHandle<()>> {
    let spawned = std::thread::Builder::new()
        .name("tollgate-committer".into())
        .spawn(move || {
            // Said once while it lasts, not at every try.
            let mut failing: Option<String> = None;
            while shared.committer.wait() {
                if shared.accepting().pending.is_empty() {
                    // A large batch's writer applied it all.
                    if failing.take().is_some() {
                        tracing::info!("the store commits again");
                    }
                    continue;
                }
                match shared.apply() {
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
    /// Makes every write accepted so far durable: what the journal does not hold yet is
    /// appended to it and the journal synced.
    pub(super) fn flush(&self) -> Result<()> {
        let mut journal = lock(&self.journal);
        let tail = {
            let mut accepting = self.accepting();
            accepting.refuse_if_lost(&self.dir)?;
            accepting.pending.take_tail()
        };
        self.journal_durably(&mut journal, tail)
    }

    /// Appends `tail` (taken from the pending writes) to the journal and syncs it. A write
    /// that fails puts the tail back and refuses writes until one succeeds; a sync that
    /// fails is final, as the log's is.
    fn journal_durably(&self, journal: &mut Journal, tail: Vec<Committing>) -> Result<()> {
        if tail.is_empty() {
            return Ok(());
        }
        if let Err(e) = self.journal_write(journal, &tail) {
            let mut accepting = self.accepting();
            accepting.pending.restore_tail(tail);
            accepting.journal_failed = Some(e.to_string());
            return Err(self.error("writing the journal", e));
        }
        self.accepting().journal_failed = None;
        self.journal_sync(journal).map_err(|e| {
            self.accepting()
                .lost
                .get_or_insert_with(|| format!("syncing the journal failed: {e}"));
            self.error("syncing the journal", e)
        })
    }

    fn journal_write(&self, journal: &mut Journal, tail: &[Committing]) -> std::io::Result<()> {
        #[cfg(test)]
        if let Some(fault) = lock(&self.journal_write_fault).as_mut() {
            fault()?;
        }
        journal.write(tail)
    }

    fn journal_sync(&self, journal: &Journal) -> std::io::Result<()> {
        #[cfg(test)]
        if let Some(fault) = lock(&self.sync_fault).as_mut() {
            return fault();
        }
        journal.sync()
    }

    /// Brings the database up to date: everything pending is journaled, the journal's
    /// generation closed, and everything pending committed in one transaction that records
    /// the generation. Once that is synced, the journal's file for it may be reused. Writers
    /// wait only for the pending map's layer to be swapped for an empty one, not for the
    /// commit.
    pub(super) fn apply(&self) -> Result<()> {
        let writer = lock(&self.writer);
        let (layers, closed) = {
            let mut journal = lock(&self.journal);
            // Taken together: the database will hold exactly the closed generation's end.
            let (tail, layers) = {
                let mut accepting = self.accepting();
                accepting.refuse_if_lost(&self.dir)?;
                if accepting.pending.is_empty() {
                    // Then nothing was written since the last apply's layer either.
                    return Ok(());
                }
                (accepting.pending.take_tail(), accepting.pending.freeze())
            };
            self.journal_durably(&mut journal, tail)?;
            (layers, journal.rotate())
        };
        let oldest_first = layers.iter().flat_map(|layer| layer.iter());
        if let Err(e) = commit(&writer, oldest_first, closed) {
            self.accepting().commit_failed = Some(e.to_string());
            return Err(self.error("commit", e));
        }
        self.sync_wal()?;
        lock(&self.journal).applied_through(closed);
        {
            let mut accepting = self.accepting();
            accepting.pending.settle(layers.len());
            accepting.commit_failed = None;
        }
        // The layers' last references: freed here, not under a lock.
        drop(layers);
        drop(writer);
        self.checkpoint_if_long()
    }

    /// Applies what is pending and folds the log into the database, cutting the log's file
    /// to nothing (a service that stops exits without closing the database, whose close
    /// would remove it), then empties the journal's files the database now holds: the
    /// store's database holds everything on its own, and the stopped store takes only its
    /// database's room on disk.
    pub(super) fn fold_in(&self) -> Result<()> {
        self.apply()?;
        self.checkpoint_as(Checkpoint::Truncate)?;
        lock(&self.journal)
            .empty_applied()
            .map_err(|e| self.error("emptying the journal's files", e))
    }

    /// Puts the journal's writes found at open into the database, in order, in one
    /// transaction recording `through`, the last generation they come from; syncs it.
    pub(super) fn replay(&self, writes: &[super::journal::Replayed], through: u64) -> Result<()> {
        if writes.is_empty() {
            return Ok(());
        }
        let writer = lock(&self.writer);
        let in_order = writes
            .iter()
            .map(|(tree, key, value)| (tree.as_str(), key.as_slice(), value.as_deref()));
        if let Err(e) = commit(&writer, in_order, through) {
            return Err(self.error("replaying the journal", e));
        }
        drop(writer);
        self.sync_wal()?;
        lock(&self.journal).applied_through(through);
        Ok(())
    }

    /// Folds the log into the database once it is longer than [`CHECKPOINT_AT_PAGES`].
    pub(super) fn checkpoint_if_long(&self) -> Result<()> {
        if self.wal_pages.load(Ordering::Relaxed) > CHECKPOINT_AT_PAGES {
            self.checkpoint_as(Checkpoint::Restart)?;
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
    pub(super) fn checkpoint_as(&self, how: Checkpoint) -> Result<()> {
        let writer = lock(&self.writer);
        self.accepting().refuse_if_lost(&self.dir)?;
        let pragma = match how {
            Checkpoint::Restart => "PRAGMA wal_checkpoint(RESTART)",
            Checkpoint::Truncate => "PRAGMA wal_checkpoint(TRUNCATE)",
        };
        // Both modes wait for every reader to leave the log: the reading connection's held
        // transaction is ended, and none is held again until the checkpoint is done.
        lock(&self.reader).checkpointing(true);
        let busy: rusqlite::Result<i64> = writer.query_row(pragma, [], |r| r.get(0));
        lock(&self.reader).checkpointing(false);
        let busy = busy.map_err(|e| self.error("checkpoint", e))?;
        if busy == 0 {
            self.wal_pages.store(0, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// How a checkpoint leaves the log's file: kept at its length, to be written again from its
/// start (while the store runs: a file that keeps its length is synced without its inode), or
/// cut to nothing (when it stops).
pub(super) enum Checkpoint {
    Restart,
    Truncate,
}

/// A generation as SQLite stores it (an integer is signed there).
fn generation_value(generation: u64) -> i64 {
    i64::try_from(generation).unwrap_or(i64::MAX)
}

/// Commits `writes` in their order (a deletion's value is `None`), and that the database
/// holds the journal through `generation`, in one transaction; on failure nothing of them is
/// left in the database.
fn commit<'a>(
    writer: &Connection,
    writes: impl Iterator<Item = (&'a str, &'a [u8], Option<&'a [u8]>)>,
    generation: u64,
) -> rusqlite::Result<()> {
    let committed = (|| {
        writer.prepare_cached(BEGIN)?.execute([])?;
        // Taken from the cache once a commit, not once a write (each take hashes the text).
        let mut write_one = writer.prepare_cached(WRITE_ONE)?;
        let mut remove_one = writer.prepare_cached(REMOVE_ONE)?;
        for (tree, key, value) in writes {
            match value {
                Some(value) => write_one.execute(params![tree, key, value])?,
                None => remove_one.execute(params![tree, key])?,
            };
        }
        drop((write_one, remove_one));
        writer
            .prepare_cached(SET_APPLIED)?
            .execute(params![generation_value(generation)])?;
        writer.prepare_cached(COMMIT)?.execute([])
    })();
    if committed.is_err() && !writer.is_autocommit() {
        // SQLite may have rolled back already; if not, the failed statement's transaction
        // must not linger open.
        let _ = writer.execute_batch("ROLLBACK");
    }
    committed.map(|_| ())
}
