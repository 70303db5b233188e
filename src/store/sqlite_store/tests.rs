//! The SQLite backend's own tests (the backend-neutral contract is in `store::contract`).

use super::{
    BEGIN, CHECKPOINT_AT_PAGES, COMMIT, FILE_NAME, READ_ONE, REMOVE_ONE, SCAN_FROM, SCAN_RANGE,
    SqliteStore, WRITE_ONE, after_prefix,
};
use crate::store::Store;
use std::sync::atomic::Ordering;

/// Each statement is compiled once, not again at every use (see [`SCAN_RANGE`]).
#[test]
fn scans_are_not_recompiled_at_each_use() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path(), 8).unwrap();
    for n in 0..20u8 {
        store.insert("runs", &[n, 0], b"v").unwrap();
        store.insert("other", &[n], b"v").unwrap();
    }
    for n in 0..20u8 {
        assert_eq!(store.scan_prefix("runs", &[n]).unwrap().len(), 1);
        assert_eq!(store.scan_prefix("other", b"").unwrap().len(), 20);
        assert!(store.get("other", &[n]).unwrap().is_some());
        store.remove("runs", &[n, 0]).unwrap();
        store.flush().unwrap();
    }
    let open = store.shared.lock();
    for sql in [
        SCAN_RANGE, SCAN_FROM, READ_ONE, WRITE_ONE, REMOVE_ONE, BEGIN, COMMIT,
    ] {
        let statement = open.conn.prepare_cached(sql).unwrap();
        assert_eq!(
            statement.get_status(rusqlite::StatementStatus::RePrepare),
            0,
            "{sql}"
        );
    }
}

/// A store holding one flushed entry, `t/kept`, in `dir`.
fn with_one_entry(dir: &std::path::Path) -> SqliteStore {
    let store = SqliteStore::open(dir, 8).unwrap();
    store.insert("t", b"kept", b"v").unwrap();
    store.flush().unwrap();
    store
}

/// As if the disk were full: the database may not grow past its current size.
fn fill_the_disk(store: &SqliteStore) {
    store
        .shared
        .lock()
        .conn
        .execute_batch("PRAGMA max_page_count = 8")
        .unwrap();
}

#[test]
fn writes_lost_to_a_full_disk_fail_every_later_flush_until_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let store = with_one_entry(dir.path());
    store.insert("t", b"before", b"v").unwrap();
    fill_the_disk(&store);
    let big = vec![7u8; 64 * 1024];
    let refused = store.insert("t", b"big", &big).unwrap_err();
    assert!(refused.message.contains("full"), "{refused}");
    // SQLite rolled the whole transaction back: the earlier write, which its caller was
    // told had succeeded, is gone. No later flush may report success — the store cannot
    // tell whose writes were lost — and no later write is accepted.
    assert_eq!(store.get("t", b"before").unwrap(), None);
    for _ in 0..2 {
        let lost = store.flush().unwrap_err();
        assert!(lost.message.contains("were lost"), "{lost}");
        assert!(lost.message.contains("full"), "{lost}");
    }
    assert!(store.insert("t", b"after", b"w").is_err());
    assert!(store.put("t", b"after", b"w").is_err());
    assert!(store.delete("t", b"kept").is_err());
    // Nor an answer built on the rolled-back state: the lost record is not "absent".
    assert!(store.compare_and_swap("t", b"before", None, None).is_err());
    assert!(store.remove("t", b"before").is_err());
    assert_eq!(store.get("t", b"kept").unwrap(), Some(b"v".to_vec()));
    drop(store);
    // A restart starts clean, with what was flushed.
    let reopened = SqliteStore::open(dir.path(), 8).unwrap();
    assert_eq!(reopened.get("t", b"kept").unwrap(), Some(b"v".to_vec()));
    assert_eq!(reopened.get("t", b"before").unwrap(), None);
    reopened.insert("t", b"after", b"w").unwrap();
    reopened.flush().unwrap();
}

/// Linux reports a failed write-back once per open file: a flush syncing beside one whose
/// sync failed must not be told its writes are durable.
#[test]
fn a_failed_sync_is_not_hidden_from_a_flush_syncing_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(with_one_entry(dir.path()));
    let (syncing, first_sync_started) = std::sync::mpsc::channel();
    let mut syncs = 0;
    *store.shared.sync_fault.lock().unwrap() = Some(Box::new(move || {
        syncs += 1;
        if syncs > 1 {
            // What a second sync on the same file gets after the error was reported.
            return Ok(());
        }
        syncing.send(()).unwrap();
        // The window in which the other flush commits and reaches its own sync.
        std::thread::sleep(std::time::Duration::from_millis(100));
        Err(std::io::Error::other("injected write-back error"))
    }));
    store.insert("t", b"first", b"1").unwrap();
    let first = {
        let store = store.clone();
        std::thread::spawn(move || store.flush())
    };
    first_sync_started.recv().unwrap();
    store.insert("t", b"second", b"2").unwrap();
    let second = store.flush().unwrap_err();
    assert!(second.message.contains("were lost"), "{second}");
    assert!(first.join().unwrap().is_err());
}

#[test]
fn a_failed_first_write_of_a_transaction_loses_nothing_and_is_only_its_own_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = with_one_entry(dir.path());
    fill_the_disk(&store);
    assert!(store.insert("t", b"big", &vec![7u8; 64 * 1024]).is_err());
    // Nothing accepted was in that transaction: the store goes on.
    store.flush().unwrap();
    store.insert("t", b"small", b"s").unwrap();
    store.flush().unwrap();
    assert_eq!(store.get("t", b"small").unwrap(), Some(b"s".to_vec()));
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
        let wal_len = std::fs::metadata(dir.path().join(format!("{FILE_NAME}-wal")))
            .unwrap()
            .len();
        // The next commits write the log from its start: it does not grow.
        for i in 3000u32..3100 {
            store.insert("t", &i.to_be_bytes(), &value).unwrap();
        }
        store.flush().unwrap();
        assert_eq!(
            std::fs::metadata(dir.path().join(format!("{FILE_NAME}-wal")))
                .unwrap()
                .len(),
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
