//! The binary's allocator: jemalloc with the options `src/main.rs` gives it, and under `serve`
//! the thread that gives freed pages back while the service is idle (the memory figures of
//! docs/benchmarks.md depend on both).

use super::{Served, USER};
use crate::suite::fakes::llm::text;
use std::process::Command;

#[test]
fn the_binary_reads_its_allocator_options() {
    // `stats_print` makes jemalloc print its options at exit; the rest come from the binary.
    let out = Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .arg("--version")
        .env("_RJEM_MALLOC_CONF", "stats_print:true")
        .output()
        .unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for option in [
        "opt.narenas: 2\n",
        "opt.dirty_decay_ms: 1000 ",
        "opt.muzzy_decay_ms: 0 ",
        // Not at the start: the sandbox helper, the same binary, must stay single-threaded.
        "opt.background_thread: false ",
    ] {
        assert!(printed.contains(option), "{option:?} not in:\n{printed}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_starts_the_thread_that_gives_freed_pages_back() {
    let served = Served::start(vec![text("hello back")], "", "").await;
    served.say(USER, "hello");
    served.wait_text(USER, "hello back").await;
    let pid = served.child.as_ref().unwrap().id();
    let threads: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .map(|name| name.trim().to_string())
        .collect();
    assert!(
        threads.iter().any(|name| name == "jemalloc_bg_thd"),
        "{threads:?}"
    );
}
