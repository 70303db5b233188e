//! What lives in the store per session: todos, memory and stored tool results, none of it
//! shared with another session.

use super::{batch, bench, call, ws};
use serde_json::json;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tollgate::executor::session::SessionPolicy;
use tollgate::policy::mode::SandboxPolicy;
use tollgate::store::Store;

#[tokio::test]
async fn todos_memory_and_stored_results_live_in_the_store() {
    let b = bench(false);
    std::fs::write(ws(&b, "big.txt"), "y".repeat(50_000)).unwrap();
    let first = batch(
        &b,
        vec![
            call(
                "t1",
                "manage_todos",
                json!({"action": "add", "text": "write tests"}),
            ),
            call(
                "m1",
                "manage_memory",
                json!({"action": "set", "key": "lang", "value": "rust"}),
            ),
            call("big", "read_file", json!({"path": "big.txt"})),
        ],
    )
    .await;
    assert!(first.iter().all(|r| !r.output.is_error), "{first:?}");
    // A forum topic's session extends this session's key: its results stay its own.
    b.store
        .insert(
            "tool_results",
            &tollgate::tools::builtin::result_key("console:tester:7", "topic"),
            b"the topic's result",
        )
        .unwrap();
    let second = batch(
        &b,
        vec![
            call(
                "t2",
                "manage_todos",
                json!({"action": "add", "text": "ship"}),
            ),
            call("v", "view_memory", json!({"key": "lang"})),
            call(
                "r",
                "retrieve_tool_result",
                json!({"id": "big", "offset": 49990}),
            ),
            call("x", "retrieve_tool_result", json!({"id": "telegram:1:big"})),
            call(
                "y",
                "retrieve_tool_result",
                json!({"id": "console:tester:7:topic"}),
            ),
            call("z", "retrieve_tool_result", json!({"id": "7:topic"})),
            call("time", "get_time", json!({})),
        ],
    )
    .await;
    assert_eq!(second[1].output.text, "rust");
    assert_eq!(second[2].output.text, "y".repeat(10));
    for other in &second[3..=5] {
        assert!(
            other.output.is_error && !other.output.text.contains("topic's result"),
            "another session's result is not readable: {:?}",
            other.output
        );
    }
    assert!(
        second[6].output.text.ends_with('Z') && second[6].output.text.len() == 20,
        "{}",
        second[6].output.text
    );
    let third = batch(
        &b,
        vec![call(
            "c",
            "manage_todos",
            json!({"action": "complete", "id": 1}),
        )],
    )
    .await;
    assert_eq!(third[0].output.text, "1. [x] write tests\n2. [ ] ship");
}

#[tokio::test]
async fn session_memory_is_not_shared_between_sessions() {
    let b = bench(false);
    batch(
        &b,
        vec![call(
            "m",
            "manage_memory",
            json!({"action": "set", "key": "k", "value": "mine"}),
        )],
    )
    .await;
    let other = Arc::new(SessionPolicy::new(
        "console:someone-else",
        "a",
        SandboxPolicy::WorkspaceWrite,
        b.session.snapshot(),
        None,
    ));
    let seen = b
        .executor
        .run_batch(
            other,
            vec![call("v", "view_memory", json!({"key": "k"}))],
            CancellationToken::new(),
        )
        .await;
    assert!(
        seen[0].output.text.contains("nothing saved"),
        "{}",
        seen[0].output.text
    );
}

/// A session's pending reminders are capped: a chat cannot make the store grow without bound,
/// and the model is told how to make room.
#[tokio::test]
async fn a_session_may_have_at_most_a_hundred_pending_reminders() {
    let b = bench(false);
    let add = |n: usize| {
        call(
            &format!("a{n}"),
            "add_reminder",
            json!({"message": format!("reminder {n}"), "in_secs": 3600 + n}),
        )
    };
    let added = batch(
        &b,
        (0..tollgate::reminders::MAX_PENDING_PER_SESSION)
            .map(add)
            .collect(),
    )
    .await;
    assert!(added.iter().all(|r| !r.output.is_error), "{added:?}");
    let refused = batch(&b, vec![add(1_000)]).await;
    assert!(refused[0].output.is_error, "{:?}", refused[0].output);
    assert!(
        refused[0]
            .output
            .text
            .contains("already has 100 pending reminders")
            && refused[0].output.text.contains("cancel_reminder"),
        "{}",
        refused[0].output.text
    );
    let listed = batch(&b, vec![call("l", "list_reminders", json!({}))]).await;
    let first = listed[0].output.text.lines().next().unwrap().to_string();
    assert_eq!(
        listed[0].output.text.lines().count(),
        100,
        "the refused one was not stored"
    );
    assert!(first.contains("reminder 0"), "soonest first: {first}");
    let id = first.split(':').next().unwrap();
    let cancelled = batch(&b, vec![call("c", "cancel_reminder", json!({"id": id}))]).await;
    assert!(!cancelled[0].output.is_error, "{:?}", cancelled[0].output);
    let again = batch(&b, vec![add(1_001)]).await;
    assert!(
        !again[0].output.is_error,
        "room again after a cancel: {:?}",
        again[0].output
    );
}
