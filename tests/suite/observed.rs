//! An in-memory store that lets a test see what the code under test did with it: the records
//! it read, per tree (a hot path reads only what it needs), and what its last flush made
//! durable (the records a kill -9 would leave), and every write in order (replaying a prefix of
//! them is what a kill leaves when another session's commit lands between two writes).

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use tollgate::store::{MemoryStore, Store, StoreError};

#[derive(Default)]
pub struct Observed {
    inner: MemoryStore,
    read: Mutex<HashMap<String, usize>>,
    /// Reads made (gets and scans) per tree, whatever they found.
    lookups: Mutex<HashMap<String, usize>>,
    /// Each flush's copy of the runs tree's keys.
    durable_runs: Mutex<BTreeSet<Vec<u8>>>,
    flushes: AtomicUsize,
    writes: Mutex<Vec<Write>>,
    /// Run once, after the first removal from its tree: what happens beside the code under
    /// test at that moment.
    on_remove: Mutex<Option<(String, Beside)>>,
    /// A tree whose writes fail from now on (a store refusing writes).
    refusing: Mutex<Option<String>>,
    /// A tree whose reads fail from now on.
    refusing_reads: Mutex<Option<String>>,
    /// A tree whose next read fails.
    refusing_next_read: Mutex<Option<String>>,
    /// Run once, inside the next read of its tree, after the value is read: a write landing
    /// while a read is under way.
    on_get: Mutex<Option<(String, Beside)>>,
    /// Run once, right after the next write to its tree.
    on_write: Mutex<Option<(String, Beside)>>,
}

/// What [`Observed::after_removing_from`] and [`Observed::while_reading_from`] run.
type Beside = Box<dyn FnOnce() + Send>;

/// A write as made: tree, key, and the value (`None` deletes).
pub type Write = (String, Vec<u8>, Option<Vec<u8>>);

/// A fresh store holding `writes`: what a kill after them leaves.
pub fn replayed(writes: &[Write]) -> std::sync::Arc<MemoryStore> {
    let store = MemoryStore::new();
    for (tree, key, value) in writes {
        match value {
            Some(value) => store.put(tree, key, value).unwrap(),
            None => store.delete(tree, key).unwrap(),
        }
    }
    std::sync::Arc::new(store)
}

impl Observed {
    fn count(&self, tree: &str, n: usize) {
        *self
            .lookups
            .lock()
            .unwrap()
            .entry(tree.to_string())
            .or_default() += 1;
        *self
            .read
            .lock()
            .unwrap()
            .entry(tree.to_string())
            .or_default() += n;
    }

    /// Records read from `tree` since the last call (the count starts over).
    pub fn take(&self, tree: &str) -> usize {
        self.read.lock().unwrap().remove(tree).unwrap_or(0)
    }

    /// Reads made of `tree` since the last call, found or not (the count starts over).
    pub fn take_lookups(&self, tree: &str) -> usize {
        self.lookups.lock().unwrap().remove(tree).unwrap_or(0)
    }

    pub fn reset(&self) {
        self.read.lock().unwrap().clear();
        self.lookups.lock().unwrap().clear();
    }

    /// Whether run `id` was written before the last flush.
    pub fn durable(&self, id: &str) -> bool {
        self.durable_runs.lock().unwrap().contains(id.as_bytes())
    }

    pub fn flushes(&self) -> usize {
        self.flushes.load(Ordering::SeqCst)
    }

    /// Every write so far, in order.
    pub fn writes(&self) -> Vec<Write> {
        self.writes.lock().unwrap().clone()
    }

    /// Runs `then` once, right after the next removal from `tree`.
    pub fn after_removing_from(&self, tree: &str, then: impl FnOnce() + Send + 'static) {
        *self.on_remove.lock().unwrap() = Some((tree.to_string(), Box::new(then)));
    }

    /// Runs `then` once, inside the next read of `tree` (a get or a prefix scan), after the
    /// values are read.
    pub fn while_reading_from(&self, tree: &str, then: impl FnOnce() + Send + 'static) {
        *self.on_get.lock().unwrap() = Some((tree.to_string(), Box::new(then)));
    }

    /// Runs `then` once, right after the next write to `tree` (before the writer goes on).
    pub fn after_writing_to(&self, tree: &str, then: impl FnOnce() + Send + 'static) {
        *self.on_write.lock().unwrap() = Some((tree.to_string(), Box::new(then)));
    }

    /// Writes to `tree` fail from now on, as a store's do while its disk refuses them.
    pub fn refuse_writes_to(&self, tree: &str) {
        *self.refusing.lock().unwrap() = Some(tree.to_string());
    }

    /// Every read of `tree` (a get or a prefix scan) fails from now on.
    pub fn refuse_reads_of(&self, tree: &str) {
        *self.refusing_reads.lock().unwrap() = Some(tree.to_string());
    }

    /// The next read of `tree` fails; later ones do not.
    pub fn refuse_next_read_of(&self, tree: &str) {
        *self.refusing_next_read.lock().unwrap() = Some(tree.to_string());
    }

    fn refuse_read_if_asked(&self, tree: &str) -> R<()> {
        let mut next = self.refusing_next_read.lock().unwrap();
        let once = next.as_deref() == Some(tree);
        if once {
            next.take();
        }
        drop(next);
        if once || self.refusing_reads.lock().unwrap().as_deref() == Some(tree) {
            return Err(StoreError {
                context: format!("reading tree `{tree}`"),
                message: "refused by the test".into(),
            });
        }
        Ok(())
    }

    fn refuse_if_asked(&self, tree: &str) -> R<()> {
        if self.refusing.lock().unwrap().as_deref() == Some(tree) {
            return Err(StoreError {
                context: format!("writing tree `{tree}`"),
                message: "refused by the test".into(),
            });
        }
        Ok(())
    }

    fn record(&self, tree: &str, key: &[u8], value: Option<&[u8]>) {
        self.writes.lock().unwrap().push((
            tree.to_string(),
            key.to_vec(),
            value.map(<[u8]>::to_vec),
        ));
    }
}

type R<T> = Result<T, StoreError>;

/// Runs the hook in `slot`, once, if it is for `tree` (the lock let go first: the hook may use
/// the store).
fn run_once(slot: &Mutex<Option<(String, Beside)>>, tree: &str) {
    let mut hook = slot.lock().unwrap();
    if hook.as_ref().is_some_and(|(t, _)| t == tree)
        && let Some((_, then)) = hook.take()
    {
        drop(hook);
        then();
    }
}

impl Store for Observed {
    fn get(&self, tree: &str, key: &[u8]) -> R<Option<Vec<u8>>> {
        self.refuse_read_if_asked(tree)?;
        let got = self.inner.get(tree, key)?;
        self.count(tree, usize::from(got.is_some()));
        run_once(&self.on_get, tree);
        Ok(got)
    }
    fn insert(&self, tree: &str, key: &[u8], value: &[u8]) -> R<Option<Vec<u8>>> {
        self.refuse_if_asked(tree)?;
        self.record(tree, key, Some(value));
        let inserted = self.inner.insert(tree, key, value);
        run_once(&self.on_write, tree);
        inserted
    }
    fn remove(&self, tree: &str, key: &[u8]) -> R<Option<Vec<u8>>> {
        self.refuse_if_asked(tree)?;
        self.record(tree, key, None);
        let removed = self.inner.remove(tree, key);
        run_once(&self.on_remove, tree);
        removed
    }
    fn scan_prefix(&self, tree: &str, prefix: &[u8]) -> R<Vec<(Vec<u8>, Vec<u8>)>> {
        self.refuse_read_if_asked(tree)?;
        let all = self.inner.scan_prefix(tree, prefix)?;
        self.count(tree, all.len());
        run_once(&self.on_get, tree);
        Ok(all)
    }
    fn scan_before(&self, tree: &str, end: &[u8]) -> R<Vec<(Vec<u8>, Vec<u8>)>> {
        let head = self.inner.scan_before(tree, end)?;
        self.count(tree, head.len());
        Ok(head)
    }
    fn scan_from(&self, tree: &str, start: &[u8]) -> R<Vec<(Vec<u8>, Vec<u8>)>> {
        let tail = self.inner.scan_from(tree, start)?;
        self.count(tree, tail.len());
        Ok(tail)
    }
    fn compare_and_swap(
        &self,
        tree: &str,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> R<Result<(), Option<Vec<u8>>>> {
        let swapped = self.inner.compare_and_swap(tree, key, expected, new)?;
        if swapped.is_ok() {
            self.record(tree, key, new);
        }
        Ok(swapped)
    }
    fn flush(&self) -> R<()> {
        let runs = self.inner.scan_prefix("runs", b"")?;
        *self.durable_runs.lock().unwrap() = runs.into_iter().map(|(k, _)| k).collect();
        self.flushes.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}
