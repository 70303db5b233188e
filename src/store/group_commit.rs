//! Group commit: when several sessions flush at once, one flush makes all their writes
//! durable. A `flush` returns only after a flush of the inner store that *started* after the
//! call began — so everything the caller wrote before calling is durable (the write-ahead rule
//! is unchanged) — but callers arriving while a flush runs share the next one instead of each
//! paying for their own.
//!
//! Async callers ([`Store::flush_soon`]) queue for a flusher thread instead: the waiting task
//! yields its async worker to other tasks, and whoever queued before a flush started is
//! answered by it — no worker is handed over to the blocking pool for each flush. When the
//! last flush had company, the thread lingers a moment ([`LINGER`]) before the next, so more
//! sessions share it: each commit's sync and page writes are paid once for more turns.

use super::{FlushFuture, Result, Store, StoreError};
use std::sync::{Arc, Condvar, Mutex, OnceLock, mpsc};

/// How long the flusher waits for more async callers before a flush, when the flush before
/// answered more than one: under load a commit then covers more turns (serve's CPU a message
/// fell about 4% in both of the benchmark's bursts, medians of eight alternating runs whose
/// spreads overlap: docs/benchmarks.md), and a lone caller is never kept waiting. Durability
/// is unchanged: every caller still returns only after a flush that started after it called.
const LINGER: std::time::Duration = std::time::Duration::from_micros(1500);

/// Callers that make the flusher stop lingering at once: a commit this big shares enough.
const ENOUGH_COMPANY: usize = 64;

/// A store whose flushes are shared.
pub struct GroupCommit<S> {
    core: Arc<Core<S>>,
    /// Where async callers queue for the flusher thread: started on first use, `None` when it
    /// could not start (they flush at once instead).
    flusher: OnceLock<Option<Flusher>>,
}

/// The flusher thread and its queue.
struct Flusher {
    queue: mpsc::Sender<Waiter>,
    thread: std::thread::JoinHandle<()>,
}

/// An async caller waiting for a flush.
type Waiter = tokio::sync::oneshot::Sender<Result<()>>;

struct Core<S> {
    inner: S,
    state: Mutex<Flushes>,
    done: Condvar,
}

#[derive(Default)]
struct Flushes {
    /// Tickets handed out: one per `flush` call.
    requested: u64,
    /// Every ticket up to this one is durable.
    completed: u64,
    /// A flush of the inner store is running.
    running: bool,
}

impl<S: Store + 'static> GroupCommit<S> {
    pub fn new(inner: S) -> Self {
        GroupCommit {
            core: Arc::new(Core {
                inner,
                state: Mutex::new(Flushes::default()),
                done: Condvar::new(),
            }),
            flusher: OnceLock::new(),
        }
    }

    /// The flusher thread's queue (the thread ends when the store is dropped).
    fn flusher(&self) -> Option<&mpsc::Sender<Waiter>> {
        self.flusher
            .get_or_init(|| {
                let (queue, waiting) = mpsc::channel::<Waiter>();
                let core = self.core.clone();
                std::thread::Builder::new()
                    .name("tollgate-flusher".into())
                    .spawn(move || {
                        let mut had_company = false;
                        while let Ok(first) = waiting.recv() {
                            // Everyone queued so far wrote before queueing: one flush that
                            // starts now covers them all.
                            let mut waiters = vec![first];
                            waiters.extend(waiting.try_iter());
                            if had_company && waiters.len() < ENOUGH_COMPANY {
                                // One sleep, not a wake-up for every arrival.
                                std::thread::sleep(LINGER);
                                waiters.extend(waiting.try_iter());
                            }
                            had_company = waiters.len() > 1;
                            // A panicking store answers its waiters with an error; the
                            // thread goes on serving the next ones.
                            let flushed =
                                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                    core.flush_shared()
                                }))
                                .unwrap_or_else(|_| {
                                    Err(StoreError {
                                        context: "flushing the store".into(),
                                        message: "the store's flush panicked".into(),
                                    })
                                });
                            for waiter in waiters {
                                let _ = waiter.send(flushed.clone());
                            }
                        }
                    })
                    .ok()
                    .map(|thread| Flusher { queue, thread })
            })
            .as_ref()
            .map(|flusher| &flusher.queue)
    }
}

impl<S> Drop for GroupCommit<S> {
    fn drop(&mut self) {
        // The thread holds the store too: closing its queue ends it once everyone queued is
        // answered, and joining it means the store is closed (and can be opened again at
        // once, by this process or another) when this returns.
        if let Some(Some(flusher)) = self.flusher.take() {
            drop(flusher.queue);
            let _ = flusher.thread.join();
        }
    }
}

impl<S: Store> Core<S> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Flushes> {
        // The state is three counters updated together: a poisoned lock still holds them whole.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<S: Store + 'static> Store for GroupCommit<S> {
    fn get(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.core.inner.get(tree, key)
    }

    fn insert(&self, tree: &str, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        self.core.inner.insert(tree, key, value)
    }

    fn put(&self, tree: &str, key: &[u8], value: &[u8]) -> Result<()> {
        self.core.inner.put(tree, key, value)
    }

    fn remove(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.core.inner.remove(tree, key)
    }

    fn delete(&self, tree: &str, key: &[u8]) -> Result<()> {
        self.core.inner.delete(tree, key)
    }

    fn scan_prefix(&self, tree: &str, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.core.inner.scan_prefix(tree, prefix)
    }

    fn scan_before(&self, tree: &str, end: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.core.inner.scan_before(tree, end)
    }

    fn scan_from(&self, tree: &str, start: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.core.inner.scan_from(tree, start)
    }

    fn compare_and_swap(
        &self,
        tree: &str,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<std::result::Result<(), Option<Vec<u8>>>> {
        self.core.inner.compare_and_swap(tree, key, expected, new)
    }

    fn flush_for_stop(&self) -> Result<()> {
        self.core.inner.flush_for_stop()
    }

    fn flush(&self) -> Result<()> {
        // A flush waits on the disk (or on another caller's flush): its async worker's other
        // tasks move to another thread meanwhile (`serve` bounds the threads this may start).
        crate::step_aside::step_aside(|| self.core.flush_shared())
    }

    fn flush_soon(&self) -> FlushFuture {
        let (waiter, answer) = tokio::sync::oneshot::channel();
        match self.flusher() {
            Some(queue) if queue.send(waiter).is_ok() => Box::pin(async move {
                answer.await.unwrap_or_else(|_| {
                    Err(StoreError {
                        context: "flushing the store".into(),
                        message: "the flusher thread stopped".into(),
                    })
                })
            }),
            _ => {
                let flushed = self.flush();
                Box::pin(std::future::ready(flushed))
            }
        }
    }
}

/// Clears `running` (and wakes the waiters) when dropped during a panic.
struct ClearRunningOnPanic<'a, S: Store>(&'a Core<S>);

impl<S: Store> Drop for ClearRunningOnPanic<'_, S> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().running = false;
            self.0.done.notify_all();
        }
    }
}

impl<S: Store> Core<S> {
    fn flush_shared(&self) -> Result<()> {
        let mut state = self.lock();
        state.requested += 1;
        let ticket = state.requested;
        loop {
            if state.completed >= ticket {
                return Ok(());
            }
            if state.running {
                // The running flush may have started before this call: wait for it, then
                // for the one after it if need be.
                state = self.done.wait(state).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            // Lead a flush for every ticket handed out so far (all of them called before it
            // starts, so it covers their writes).
            let covers = state.requested;
            state.running = true;
            drop(state);
            failpoint::abort_if_due();
            let started = std::time::Instant::now();
            let flushed = {
                // If the inner flush panics, the next caller must be able to lead a flush
                // rather than wait for this one forever.
                let _unwinding = ClearRunningOnPanic(self);
                self.inner.flush()
            };
            crate::metrics::METRICS
                .store_flush_seconds
                .get_or_create(&Vec::new())
                .observe(started.elapsed().as_secs_f64());
            state = self.lock();
            state.running = false;
            if flushed.is_ok() {
                state.completed = state.completed.max(covers);
            }
            self.done.notify_all();
            // A failed flush fails its leader; the others try again (and lead the retry).
            flushed?;
        }
    }
}

/// A test failpoint (`test-support` builds only): with `TOLLGATE_TEST_ABORT_AT_FLUSH=N` the
/// process aborts at its Nth group commit, after the writes and before they are flushed — a
/// kill inside a commit, for the durability tests. Other builds compile it to nothing.
mod failpoint {
    /// The variable a `test-support` build reads.
    #[cfg(feature = "test-support")]
    pub const ABORT_AT_FLUSH_ENV: &str = "TOLLGATE_TEST_ABORT_AT_FLUSH";

    #[cfg(feature = "test-support")]
    pub fn abort_if_due() {
        use std::sync::atomic::{AtomicU64, Ordering};
        static FLUSHES: AtomicU64 = AtomicU64::new(0);
        // Read once: the tests set it when they start the process.
        static AT: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
        let Some(at) = *AT.get_or_init(|| {
            std::env::var(ABORT_AT_FLUSH_ENV)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
        }) else {
            return;
        };
        if FLUSHES.fetch_add(1, Ordering::SeqCst) + 1 == at {
            std::process::abort();
        }
    }

    #[cfg(not(feature = "test-support"))]
    pub fn abort_if_due() {}
}

#[cfg(feature = "test-support")]
pub use failpoint::ABORT_AT_FLUSH_ENV;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A store that takes its time to flush and records how far its writes are durable.
    #[derive(Default)]
    struct SlowDisk {
        memory: MemoryStore,
        written: AtomicU64,
        durable: AtomicU64,
        flushes: AtomicU64,
        /// Its first flush panics (a store that fails in the worst way).
        first_flush_panics: bool,
        /// Gone when the store is (tests hold a `Weak` of it).
        alive: Arc<()>,
        /// A flush says it started, then waits (at most 10 s) to be let go.
        held: Option<(
            std::sync::mpsc::Sender<()>,
            Mutex<std::sync::mpsc::Receiver<()>>,
        )>,
    }

    impl Store for SlowDisk {
        fn get(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
            self.memory.get(tree, key)
        }
        fn insert(&self, tree: &str, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
            self.written.fetch_add(1, Ordering::SeqCst);
            self.memory.insert(tree, key, value)
        }
        fn remove(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
            self.memory.remove(tree, key)
        }
        fn scan_prefix(&self, tree: &str, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
            self.memory.scan_prefix(tree, prefix)
        }
        fn scan_before(&self, tree: &str, end: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
            self.memory.scan_before(tree, end)
        }
        fn scan_from(&self, tree: &str, start: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
            self.memory.scan_from(tree, start)
        }
        fn compare_and_swap(
            &self,
            tree: &str,
            key: &[u8],
            expected: Option<&[u8]>,
            new: Option<&[u8]>,
        ) -> Result<std::result::Result<(), Option<Vec<u8>>>> {
            self.memory.compare_and_swap(tree, key, expected, new)
        }
        fn flush(&self) -> Result<()> {
            // Everything written before the flush starts is what it makes durable.
            let covers = self.written.load(Ordering::SeqCst);
            if self.flushes.fetch_add(1, Ordering::SeqCst) == 0 && self.first_flush_panics {
                panic!("the disk caught fire");
            }
            if let Some((started, release)) = &self.held {
                let _ = started.send(());
                let release = release.lock().unwrap();
                release
                    .recv_timeout(std::time::Duration::from_secs(10))
                    .map_err(|e| StoreError {
                        context: "a held flush".into(),
                        message: e.to_string(),
                    })?;
            }
            // An fsync's latency, so that callers overlap.
            std::thread::sleep(std::time::Duration::from_millis(2));
            self.durable.fetch_max(covers, Ordering::SeqCst);
            Ok(())
        }
    }

    #[test]
    fn concurrent_flushes_share_one_and_every_write_is_durable_before_its_flush_returns() {
        let store = Arc::new(GroupCommit::new(SlowDisk::default()));
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let store = store.clone();
                std::thread::spawn(move || {
                    for n in 0..50 {
                        store
                            .insert("t", format!("{t}:{n}").as_bytes(), b"v")
                            .unwrap();
                        let mine = store.core.inner.written.load(Ordering::SeqCst);
                        store.flush().unwrap();
                        // The write-ahead rule: what this thread wrote is durable now.
                        assert!(store.core.inner.durable.load(Ordering::SeqCst) >= mine);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let flushes = store.core.inner.flushes.load(Ordering::SeqCst);
        assert!(
            flushes < 400,
            "{flushes} flushes for 400 calls: none were shared"
        );
        assert_eq!(store.core.inner.durable.load(Ordering::SeqCst), 400);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn async_flushes_queue_for_the_flusher_and_each_write_is_durable_before_its_answer() {
        let store = Arc::new(GroupCommit::new(SlowDisk::default()));
        let tasks: Vec<_> = (0..8)
            .map(|t| {
                let store = store.clone();
                tokio::spawn(async move {
                    for n in 0..25 {
                        store
                            .insert("t", format!("{t}:{n}").as_bytes(), b"v")
                            .unwrap();
                        let mine = store.core.inner.written.load(Ordering::SeqCst);
                        store.flush_soon().await.unwrap();
                        assert!(store.core.inner.durable.load(Ordering::SeqCst) >= mine);
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let flushes = store.core.inner.flushes.load(Ordering::SeqCst);
        assert!(
            flushes < 200,
            "{flushes} flushes for 200 calls: none were shared"
        );
        assert_eq!(store.core.inner.durable.load(Ordering::SeqCst), 200);
    }

    /// A synchronous flush called from a task (a card press settling, a dial saved) blocks its
    /// thread on the disk; the worker's other tasks must go on meanwhile. With one worker, the
    /// task that lets the flush go can only run if the flush stepped aside.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_sync_flush_in_a_task_leaves_the_worker_to_other_tasks() {
        let (started, wait_started) = std::sync::mpsc::channel();
        let (release, held) = std::sync::mpsc::channel();
        let store = Arc::new(GroupCommit::new(SlowDisk {
            held: Some((started, Mutex::new(held))),
            ..SlowDisk::default()
        }));
        let flushing = tokio::spawn({
            let store = store.clone();
            async move { store.flush() }
        });
        // The test's own thread is not the worker: it may block here.
        wait_started
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap();
        tokio::spawn(async move { release.send(()) })
            .await
            .unwrap()
            .unwrap();
        flushing
            .await
            .unwrap()
            .expect("the flush was let go by a task on the same worker");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_flush_that_panics_fails_its_waiters_and_later_flushes_still_run() {
        let store = GroupCommit::new(SlowDisk {
            first_flush_panics: true,
            ..SlowDisk::default()
        });
        assert!(store.flush_soon().await.is_err());
        // Neither the flusher thread nor the shared state is left stuck.
        store.flush_soon().await.unwrap();
        store.flush().unwrap();
    }

    /// Once dropped, the store is closed: the flusher thread, which holds it too, has ended
    /// (a store with a lock on its files can be opened again at once).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_store_is_closed_when_drop_returns() {
        let (started, flush_started) = std::sync::mpsc::channel();
        let (release, held) = std::sync::mpsc::channel();
        let disk = SlowDisk {
            held: Some((started, Mutex::new(held))),
            ..SlowDisk::default()
        };
        let alive = Arc::downgrade(&disk.alive);
        let store = GroupCommit::new(disk);
        store.insert("t", b"k", b"v").unwrap();
        let flushed = store.flush_soon();
        flush_started
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap();
        // The flusher thread is inside the flush when the store is dropped.
        release.send(()).unwrap();
        drop(store);
        assert!(alive.upgrade().is_none(), "the inner store outlived drop");
        flushed.await.unwrap();
    }
}
