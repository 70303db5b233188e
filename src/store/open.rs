//! Opening the store directory: SQLite, and once, a copy of what an older tollgate's sled
//! store held there.

use super::migrate::once;
use super::sqlite_store::FILE_NAME;
use super::{Result, SledStore, SqliteStore, Store};
use std::path::Path;

/// Set once every tree of the directory's sled store was copied.
const COPIED_FROM_SLED: &[u8] = b"copied-from-sled-v1";

/// Left beside sled's files once they were copied: a `tollgate.sqlite3` deleted later (to
/// start afresh) is not filled again from them.
const SLED_COPIED_FILE: &str = "sled-copied-to-sqlite";

/// sled's own bookkeeping tree, not ours.
const SLED_DEFAULT_TREE: &str = "__sled__default";

/// Opens the store in `dir` with a page cache of `cache_mb` megabytes. A directory an older
/// tollgate wrote with sled is copied into SQLite at the first open (sled's files are left
/// where they are, with a file saying they were copied); a copy cut short is started again at
/// the next open.
pub fn open_dir(dir: &Path, cache_mb: u64) -> Result<SqliteStore> {
    let store = SqliteStore::open(dir, cache_mb)?;
    if !holds_sled(dir) {
        return Ok(store);
    }
    if dir.join(SLED_COPIED_FILE).exists() {
        tracing::info!(
            "the sled files in {} were copied into SQLite before ({SLED_COPIED_FILE}); \
             not copying them again",
            dir.display()
        );
        return Ok(store);
    }
    once(&store, COPIED_FROM_SLED, || {
        copy_from_sled(dir, cache_mb, &store)?;
        tracing::warn!(
            "copied the sled store in {} into {FILE_NAME}; sled's files there (`conf`, `db`, \
             `blobs`, `snap.*`) are no longer read and can be deleted",
            dir.display()
        );
        Ok(())
    })?;
    // After the copy is durable (the marker in the store says so, whatever happens here).
    let copied = std::fs::write(dir.join(SLED_COPIED_FILE), COPIED_FROM_SLED)
        .and_then(|()| std::fs::File::open(dir)?.sync_all());
    if let Err(e) = copied {
        tracing::warn!(
            "could not write {} (a deleted {FILE_NAME} would be filled from sled again): {e}",
            dir.join(SLED_COPIED_FILE).display()
        );
    }
    Ok(store)
}

fn holds_sled(dir: &Path) -> bool {
    dir.join("conf").is_file() && dir.join("db").is_file()
}

fn copy_from_sled(dir: &Path, cache_mb: u64, into: &dyn Store) -> Result<()> {
    let sled = SledStore::open(dir, cache_mb)?;
    for tree in sled.tree_names()? {
        if tree == SLED_DEFAULT_TREE {
            continue;
        }
        sled.for_each(&tree, |key, value| into.put(&tree, key, value))?;
    }
    into.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sled_store_is_copied_once_and_its_files_are_left() {
        let dir = tempfile::tempdir().unwrap();
        {
            let sled = SledStore::open(dir.path(), 8).unwrap();
            sled.insert("sessions", b"telegram:1", b"state").unwrap();
            sled.insert("events", b"\x00\x01", b"e").unwrap();
            sled.flush().unwrap();
        }
        // sled lets go of its lock shortly after its handle is dropped.
        let opened = retry(|| open_dir(dir.path(), 8));
        assert_eq!(
            opened.get("sessions", b"telegram:1").unwrap(),
            Some(b"state".to_vec())
        );
        assert_eq!(
            opened.get("events", b"\x00\x01").unwrap(),
            Some(b"e".to_vec())
        );
        assert!(dir.path().join("conf").is_file(), "sled's files stay");
        // A write after the copy is not undone by a second copy at the next open.
        opened.insert("sessions", b"telegram:1", b"newer").unwrap();
        drop(opened);
        let reopened = open_dir(dir.path(), 8).unwrap();
        assert_eq!(
            reopened.get("sessions", b"telegram:1").unwrap(),
            Some(b"newer".to_vec())
        );
        // An operator who deletes the SQLite file starts afresh: sled's old data stays out.
        drop(reopened);
        for name in [FILE_NAME.to_string(), format!("{FILE_NAME}-wal")] {
            let _ = std::fs::remove_file(dir.path().join(name));
        }
        let fresh = open_dir(dir.path(), 8).unwrap();
        assert_eq!(fresh.get("sessions", b"telegram:1").unwrap(), None);
        assert!(dir.path().join("conf").is_file());
    }

    fn retry(open: impl Fn() -> Result<SqliteStore>) -> SqliteStore {
        let started = std::time::Instant::now();
        loop {
            match open() {
                Ok(store) => return store,
                Err(e) if started.elapsed() < std::time::Duration::from_secs(10) => {
                    assert!(e.message.contains("holds this store"), "{e}");
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
}
