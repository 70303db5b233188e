//! What a kill leaves: flushed writes come back from the journal, unflushed ones may not, and a
//! stop leaves the database holding everything.

use super::*;

/// A store holding one entry, `t/kept`, in the database, with no committer thread.
fn unattended_with_one_entry(dir: &std::path::Path) -> SqliteStore {
    holding_one_entry(SqliteStore::open_unattended(dir, 8).unwrap())
}

/// `key` of tree `t` as the database file alone holds it (read as a process that knows no
/// journal would).
fn in_database(dir: &std::path::Path, key: &[u8]) -> Option<Vec<u8>> {
    let raw = rusqlite::Connection::open(dir.join(FILE_NAME)).unwrap();
    raw.query_row("SELECT v FROM kv WHERE tree = 't' AND k = ?1", [key], |r| {
        r.get(0)
    })
    .ok()
}

/// A flush makes writes durable in the journal; a kill before they are applied loses none of
/// them, and the next open puts them in the database, once.
#[test]
fn flushed_writes_outlive_a_kill_before_they_reach_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let store = unattended_with_one_entry(dir.path());
    store.put("t", b"new", b"1").unwrap();
    store.put("t", b"new", b"2").unwrap();
    store.delete("t", b"kept").unwrap();
    store.flush().unwrap();
    store.put("t", b"unflushed", b"x").unwrap();
    store.close_as_killed();
    // Only the journal holds them: what follows is the replay's doing.
    assert_eq!(in_database(dir.path(), b"new"), None);
    assert_eq!(in_database(dir.path(), b"kept"), Some(b"v".to_vec()));

    let reopened = SqliteStore::open_unattended(dir.path(), 8).unwrap();
    // Read from the database: nothing is pending after an open.
    assert!(reopened.shared.accepting().pending.is_empty());
    assert_eq!(reopened.get("t", b"new").unwrap(), Some(b"2".to_vec()));
    assert_eq!(reopened.get("t", b"kept").unwrap(), None);
    // A write nobody flushed may be lost (here it is).
    assert_eq!(reopened.get("t", b"unflushed").unwrap(), None);
    // Newer writes are not undone by the journal's older ones at the next open.
    reopened.put("t", b"new", b"3").unwrap();
    reopened.flush().unwrap();
    reopened.shared.apply().unwrap();
    reopened.put("t", b"later", b"4").unwrap();
    reopened.flush().unwrap();
    reopened.close_as_killed();
    assert_eq!(in_database(dir.path(), b"new"), Some(b"3".to_vec()));
    assert_eq!(in_database(dir.path(), b"later"), None);
    let again = SqliteStore::open_unattended(dir.path(), 8).unwrap();
    assert_eq!(again.get("t", b"new").unwrap(), Some(b"3".to_vec()));
    assert_eq!(again.get("t", b"later").unwrap(), Some(b"4".to_vec()));
    assert_eq!(again.get("t", b"kept").unwrap(), None);
}

/// A commit that failed (a full disk) leaves its writes to the journal: a kill then loses
/// none of them, and a later generation's delete of a replayed key is not undone by it.
#[test]
fn a_failed_commits_writes_come_back_from_the_journal_after_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let store = unattended_with_one_entry(dir.path());
    store.put("t", b"a", b"1").unwrap();
    store.put("t", b"big", &vec![7u8; 64 * 1024]).unwrap();
    store.flush().unwrap();
    disk_full(&store, true);
    assert!(store.shared.apply().is_err());
    disk_full(&store, false);
    // Writes are refused until a commit succeeds: killed before one does.
    store.close_as_killed();
    assert_eq!(in_database(dir.path(), b"a"), None);
    let reopened = SqliteStore::open_unattended(dir.path(), 8).unwrap();
    assert_eq!(reopened.get("t", b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(
        in_database(dir.path(), b"big").map(|v| v.len()),
        Some(64 * 1024)
    );
    // A write after the replay, then a delete of the replayed key in a later generation:
    // the next open replays the later one only, so the delete stands.
    reopened.put("t", b"b", b"2").unwrap();
    reopened.flush().unwrap();
    reopened.shared.apply().unwrap();
    reopened.delete("t", b"a").unwrap();
    reopened.flush().unwrap();
    reopened.close_as_killed();
    let again = SqliteStore::open_unattended(dir.path(), 8).unwrap();
    assert_eq!(again.get("t", b"a").unwrap(), None);
    assert_eq!(again.get("t", b"b").unwrap(), Some(b"2".to_vec()));
    assert_eq!(in_database(dir.path(), b"a"), None);
}

/// A journal write that fails (a full disk) fails the flush and refuses writes, saying why;
/// what was accepted is kept, and the next flush that succeeds makes it durable.
#[test]
fn a_failed_journal_write_fails_the_flush_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = unattended_with_one_entry(dir.path());
    *store.shared.journal_write_fault.lock().unwrap() = Some(Box::new(|| {
        Err(std::io::Error::from_raw_os_error(libc::ENOSPC))
    }));
    store.put("t", b"a", b"1").unwrap();
    store.put("t", b"b", b"2").unwrap();
    let failed = store.flush().unwrap_err();
    assert!(failed.message.contains("No space left"), "{failed}");
    let refused = store.put("t", b"c", b"3").unwrap_err();
    assert!(refused.message.contains("free disk space"), "{refused}");
    assert_eq!(store.get("t", b"a").unwrap(), Some(b"1".to_vec()));

    *store.shared.journal_write_fault.lock().unwrap() = None;
    store.flush().unwrap();
    store.put("t", b"c", b"3").unwrap();
    store.flush().unwrap();
    store.close_as_killed();
    assert_eq!(in_database(dir.path(), b"a"), None);
    let reopened = SqliteStore::open_unattended(dir.path(), 8).unwrap();
    for (key, value) in [(&b"a"[..], &b"1"[..]), (b"b", b"2"), (b"c", b"3")] {
        assert_eq!(reopened.get("t", key).unwrap().as_deref(), Some(value));
    }
}

/// A stop folds everything into the database: the journal's files are emptied, and the
/// database alone holds every write.
#[test]
fn a_stop_leaves_everything_in_the_database_and_the_journal_empty() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path(), 8).unwrap();
    store.put("t", b"a", b"1").unwrap();
    store.flush().unwrap();
    store.put("t", b"b", b"2").unwrap();
    store.flush_for_stop().unwrap();
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let entry = entry.unwrap();
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with("tollgate.journal-")
        {
            assert_eq!(entry.metadata().unwrap().len(), 0, "{entry:?}");
        }
    }
    // Nor the log: the stopped store is its database.
    let wal = std::fs::metadata(dir.path().join(format!("{FILE_NAME}-wal"))).unwrap();
    assert_eq!(wal.len(), 0);
    // Read through SQLite alone, as a process that knows no journal would.
    let raw = rusqlite::Connection::open(dir.path().join(FILE_NAME)).unwrap();
    let count: i64 = raw
        .query_row("SELECT count(*) FROM kv WHERE tree = 't'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(count, 2);
    store.close_as_killed();
}
