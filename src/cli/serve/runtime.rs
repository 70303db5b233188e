//! The async runtime `serve` runs on: its worker threads, and the few threads blocking work
//! moves to (store calls stepping aside, file downloads, the retention pass).

use std::time::Duration;

/// Threads for blocking work. A store call steps aside with `block_in_place`, which hands the
/// async worker's core to one of these while it blocks: a few serve (512, tokio's default,
/// would let a burst grow RSS by tens of MiB, each thread holding its stack and malloc cache).
const BLOCKING_THREADS: usize = 8;

/// How long a blocking thread with nothing to do is kept. With tokio's default (10 s) an idle
/// serve kept all eight: the housekeeping's reads every few seconds woke them in turn, and with
/// 10,000 idle sessions RSS was 49.1–50.0 MiB against 39.4 MiB with 1 s
/// (`TOLLGATE_BENCH_PHASE=memory cargo bench --bench telegram`, docs/benchmarks.md). Starting a
/// thread again costs tens of microseconds.
const BLOCKING_THREAD_KEEP_ALIVE: Duration = Duration::from_secs(1);

/// The name of serve's threads (in `top -H`; the test counts them by it).
const THREAD_NAME: &str = "tollgate-serve";

/// The runtime `serve` runs on.
pub fn serve_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name(THREAD_NAME)
        .max_blocking_threads(BLOCKING_THREADS)
        .thread_keep_alive(BLOCKING_THREAD_KEEP_ALIVE)
        .build()
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use std::sync::{Arc, Barrier};
    use std::time::{Duration, Instant};

    /// Threads of this process named `name` (`/proc/self/task/*/comm`).
    fn threads_named(name: &str) -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
            .filter(|comm| comm.trim_end() == name)
            .count()
    }

    /// Waits until the count of serve's threads satisfies `done` (a positive signal, polled),
    /// failing with `what` after `limit`.
    fn wait_for_threads(limit: Duration, what: &str, done: impl Fn(usize) -> bool) {
        let deadline = Instant::now() + limit;
        loop {
            let threads = threads_named(super::THREAD_NAME);
            if done(threads) {
                return;
            }
            assert!(Instant::now() < deadline, "{what} ({threads} threads)");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Tools blocked on their threads (a long `grep`, which neither a timeout nor `/stop`
    /// takes back) leave threads for the store's work: more calls than serve has blocking
    /// threads, all stuck, and blocking work of the store's kind still runs.
    #[test]
    fn blocked_tools_leave_threads_for_the_store() {
        use crate::tools::blocking::{TOOL_THREADS, run_blocking};
        use std::sync::atomic::{AtomicUsize, Ordering};
        let runtime = super::serve_runtime().unwrap();
        let released = Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
        let started = Arc::new(AtomicUsize::new(0));
        let stuck: Vec<_> = (0..super::BLOCKING_THREADS + 2)
            .map(|_| {
                let (released, started) = (released.clone(), started.clone());
                runtime.spawn(run_blocking(move || {
                    started.fetch_add(1, Ordering::SeqCst);
                    let (lock, wake) = &*released;
                    let mut go = lock.lock().unwrap();
                    while !*go {
                        go = wake.wait(go).unwrap();
                    }
                }))
            })
            .collect();
        let store_ran = runtime.block_on(async {
            // Every permit taken (other tests' tools may hold some a moment).
            while started.load(Ordering::SeqCst) < TOOL_THREADS.min(super::BLOCKING_THREADS) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let store_work = tokio::task::spawn_blocking(|| "read");
            tokio::time::timeout(Duration::from_secs(20), store_work).await
        });
        *released.0.lock().unwrap() = true;
        released.1.notify_all();
        runtime.block_on(async {
            for task in stuck {
                task.await.unwrap().unwrap();
            }
        });
        assert!(
            matches!(store_ran, Ok(Ok("read"))),
            "the store's work waited behind blocked tools"
        );
        assert!(started.load(Ordering::SeqCst) == super::BLOCKING_THREADS + 2);
    }

    /// The threads a burst of blocking work started are let go soon after it ends: an idle
    /// serve keeps its async workers, not the blocking pool. (With tokio's 10 s keep-alive the
    /// second wait times out.)
    #[test]
    fn threads_a_burst_of_blocking_work_started_are_let_go_when_idle() {
        let runtime = super::serve_runtime().unwrap();
        let workers = runtime.metrics().num_workers();
        // Four tasks blocked at once: each hands its worker's core to another thread.
        let release = Arc::new(Barrier::new(5));
        let burst: Vec<_> = (0..4)
            .map(|_| {
                let release = release.clone();
                runtime.spawn(async move {
                    tokio::task::block_in_place(|| {
                        release.wait();
                    });
                })
            })
            .collect();
        wait_for_threads(
            Duration::from_secs(10),
            "no blocking threads started",
            |n| n > workers,
        );
        release.wait();
        runtime.block_on(async {
            for task in burst {
                task.await.unwrap();
            }
        });
        wait_for_threads(
            Duration::from_secs(6),
            &format!("blocking threads kept 6 s after the burst ({workers} workers)"),
            |n| n <= workers,
        );
    }
}
