//! The reading connection, which keeps one read transaction open from read to read.
//!
//! SQLite starts and ends a read transaction around each statement unless one is open: two
//! file-lock system calls, the log's index read again, the pager locked and let go. In the
//! Telegram benchmark's profile that was about 40% of a read of a missing key, and a new
//! chat's first message makes five such reads. Kept open, the transaction's snapshot is
//! reused until it could be stale.
//!
//! When a snapshot is stale: it is taken after `s` applies had settled (the count
//! [`Pending::settles`](super::pending::Pending::settles) gives). A read that found its key
//! not pending when the count was still `s` may use it. Every commit the snapshot lacks
//! ended after the snapshot began, so it had not settled when the count was read, and its
//! writes were still pending then: for its keys the pending value was found first. At a
//! later count the transaction is ended and a new one begun.
//!
//! A checkpoint that starts the log over must wait for every reader to leave the log: while
//! one runs ([`Reader::checkpointing`]), reads run each in its own transaction, as SQLite's
//! default does, and the one held open is ended first.

use rusqlite::Connection;

pub(super) struct Reader {
    conn: Connection,
    /// How many applies had settled when the open read transaction began (it holds
    /// everything settled by then); `None` when none is open.
    snapshot_after: Option<u64>,
    /// Set while a checkpoint runs: no read transaction is kept open meanwhile.
    checkpointing: bool,
}

impl Reader {
    pub fn new(conn: Connection) -> Self {
        Reader {
            conn,
            snapshot_after: None,
            checkpointing: false,
        }
    }

    /// Runs `read` on a snapshot holding every apply settled by the time `settled` applies
    /// had (the count read when the caller found its keys not pending).
    pub fn read<T>(
        &mut self,
        settled: u64,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        // A snapshot begun at a later count holds all a caller at this count needs (it began
        // after this caller's count was reached); only an older one is ended, or a transaction
        // an earlier end could not close (its snapshot is unknown).
        if self.snapshot_after.is_none_or(|held| held < settled) {
            self.end();
        }
        // While a checkpoint runs, each read is its own transaction, unless one is still open
        // that nothing could end: then BEGIN fails and the read reports it, rather than read
        // a snapshot of unknown age.
        if self.snapshot_after.is_none() && (!self.checkpointing || !self.conn.is_autocommit()) {
            // Deferred: the snapshot is taken by the first read in it, after `settled` was
            // counted, so it holds at least what had settled then.
            self.conn.execute_batch("BEGIN")?;
            self.snapshot_after = Some(settled);
        }
        let read = read(&self.conn);
        if read.is_err() {
            // SQLite may have ended the transaction itself; start clean either way.
            self.end();
        }
        read
    }

    /// The connection itself, for tests that look at its statements.
    #[cfg(test)]
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Ends the open read transaction, if any.
    fn end(&mut self) {
        if !self.conn.is_autocommit() && self.conn.execute_batch("COMMIT").is_err() {
            // A read-only transaction: a rollback ends it just as well; if that fails too,
            // the next read's BEGIN fails and reports it.
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        self.snapshot_after = None;
    }

    /// A checkpoint begins (`true`: the held transaction is ended, none is kept open until
    /// it ends) or ends (`false`).
    pub fn checkpointing(&mut self, running: bool) {
        self.checkpointing = running;
        if running {
            self.end();
        }
    }
}
