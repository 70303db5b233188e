//! One contract, run against every backend.

use super::{MemoryStore, SledStore, SqliteStore, Store};

fn contract(store: &dyn Store) {
    assert_eq!(store.get("t", b"a").unwrap(), None);
    assert_eq!(store.insert("t", b"a", b"1").unwrap(), None);
    assert_eq!(store.insert("t", b"a", b"2").unwrap(), Some(b"1".to_vec()));
    assert_eq!(store.get("t", b"a").unwrap(), Some(b"2".to_vec()));
    assert_eq!(
        store.get("other", b"a").unwrap(),
        None,
        "trees are separate"
    );
    store.put("t", b"ab", b"0").unwrap();
    store.put("t", b"ab", b"3").unwrap();
    assert_eq!(
        store.get("t", b"ab").unwrap(),
        Some(b"3".to_vec()),
        "put replaces"
    );
    store.put("t", b"b", b"4").unwrap();
    let scanned: Vec<Vec<u8>> = store
        .scan_prefix("t", b"a")
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(scanned, vec![b"a".to_vec(), b"ab".to_vec()]);
    let head: Vec<Vec<u8>> = store
        .scan_before("t", b"b")
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        head,
        vec![b"a".to_vec(), b"ab".to_vec()],
        "the head before `b`"
    );
    assert!(store.scan_before("t", b"a").unwrap().is_empty());
    let tail: Vec<Vec<u8>> = store
        .scan_from("t", b"ab")
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        tail,
        vec![b"ab".to_vec(), b"b".to_vec()],
        "the tail from `ab`, itself included"
    );
    assert!(store.scan_from("t", b"c").unwrap().is_empty());
    // The first of two racing writers wins; the second sees what won.
    assert_eq!(
        store.compare_and_swap("t", b"c", None, Some(b"x")).unwrap(),
        Ok(())
    );
    assert_eq!(
        store.compare_and_swap("t", b"c", None, Some(b"y")).unwrap(),
        Err(Some(b"x".to_vec()))
    );
    assert_eq!(
        store.compare_and_swap("t", b"c", Some(b"x"), None).unwrap(),
        Ok(())
    );
    assert_eq!(store.get("t", b"c").unwrap(), None);
    assert_eq!(store.remove("t", b"a").unwrap(), Some(b"2".to_vec()));
    assert_eq!(store.remove("t", b"a").unwrap(), None);
    store.delete("t", b"ab").unwrap();
    store.delete("t", b"ab").unwrap();
    assert_eq!(store.get("t", b"ab").unwrap(), None, "delete removes");
    assert_eq!(
        store.get("t", b"b").unwrap(),
        Some(b"4".to_vec()),
        "and only its key"
    );
    store.flush().unwrap();
}

#[test]
fn memory_backend() {
    contract(&MemoryStore::new());
}

#[test]
fn sled_backend_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = SledStore::open(dir.path(), 8).unwrap();
        contract(&store);
        store.insert("keep", b"k", b"v").unwrap();
        store.flush().unwrap();
    }
    // sled lets go of its directory's lock when its background flusher thread drops its
    // handle, shortly after ours: the reopen waits for that, as a second process would not
    // need to.
    let started = std::time::Instant::now();
    let reopened = loop {
        match SledStore::open(dir.path(), 8) {
            Ok(store) => break store,
            Err(e) if started.elapsed() < std::time::Duration::from_secs(10) => {
                assert!(e.message.contains("holds this store"), "{e}");
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(reopened.get("keep", b"k").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn sqlite_backend_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = SqliteStore::open(dir.path(), 8).unwrap();
        contract(&store);
        store.insert("keep", b"k", b"v").unwrap();
        store.insert("keep", b"\xff\xff", b"w").unwrap();
        store.flush().unwrap();
        // Written and never flushed: closing commits it.
        store.insert("keep", b"late", b"x").unwrap();
        let held = SqliteStore::open(dir.path(), 8).err().unwrap();
        assert!(held.message.contains("holds this store"), "{held}");
    }
    let reopened = SqliteStore::open(dir.path(), 8).unwrap();
    assert_eq!(reopened.get("keep", b"k").unwrap(), Some(b"v".to_vec()));
    assert_eq!(reopened.get("keep", b"late").unwrap(), Some(b"x".to_vec()));
    assert_eq!(
        reopened.scan_prefix("keep", b"\xff").unwrap(),
        vec![(b"\xff\xff".to_vec(), b"w".to_vec())]
    );
    assert_eq!(
        reopened.tree_names().unwrap(),
        vec!["keep".to_string(), "t".to_string()]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn blocking_calls_run_on_the_blocking_pool() {
    let store: std::sync::Arc<dyn Store> = std::sync::Arc::new(MemoryStore::new());
    let async_thread = std::thread::current().id();
    let ran_on = super::blocking(store.clone(), |s| {
        s.insert("t", b"k", b"v")?;
        Ok(std::thread::current().id())
    })
    .await
    .unwrap();
    assert_ne!(
        ran_on, async_thread,
        "the store call ran on the async thread"
    );
    assert_eq!(store.get("t", b"k").unwrap(), Some(b"v".to_vec()));
}
