//! The binary's allocator: jemalloc with the options `src/main.rs` gives it, and under `serve`
//! the thread that gives freed pages back while the service is idle (the memory figures of
//! docs/benchmarks.md depend on both).

use super::{ADMIN, Served, USER, button};
use crate::suite::fakes::llm::{text, tool_calls};
use serde_json::json;
use std::process::Command;

#[test]
fn the_binary_reads_its_allocator_options() {
    // `stats_print` makes jemalloc print its options at exit; the rest come from the binary.
    let out = Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .arg("--version")
        .env(tollgate::sandbox::ALLOCATOR_OPTIONS_ENV, "stats_print:true")
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

/// An operator's allocator options do not reach the sandbox helper, which is this binary: with
/// `background_thread:true` there, jemalloc would start a thread before the helper's `main`,
/// `unshare` would refuse the threaded process, and every confined command would fail.
#[tokio::test(flavor = "multi_thread")]
async fn allocator_options_in_the_environment_leave_the_sandbox_working() {
    let mut served = Served::new(
        vec![
            tool_calls(&[(
                "c1",
                "execute_command",
                &json!({"command": "echo confined-and-running"}).to_string(),
            )]),
            text("Done."),
        ],
        "tools = [\"execute_command\"]\n",
        "",
    )
    .await;
    served.spawn_with(&[(
        tollgate::sandbox::ALLOCATOR_OPTIONS_ENV,
        "background_thread:true".to_string(),
    )]);
    served.ready(1).await;
    served.llm.classify_as("high-risk");
    served.say(USER, "run it");
    let (card_id, card) = served.card(USER, 0).await;
    served
        .telegram
        .push_press(USER, ADMIN, card_id, &button(&card, "Approve"));
    served.wait_text(USER, "Done.").await;
    let requests = served.llm.requests();
    let messages = &requests.last().unwrap().body["messages"];
    let result = messages
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "tool"))
        .map(|m| m["content"].to_string())
        .unwrap_or_default();
    assert!(
        result.contains("confined-and-running") && !result.contains("sandbox"),
        "{messages}"
    );
}
