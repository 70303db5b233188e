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

/// Todos and memory run unasked, so they are bounded: a chat cannot have the model write the
/// store full. At the caps a new entry is refused with the fix; an existing one can change.
#[tokio::test]
async fn todos_and_memory_are_bounded() {
    let b = bench(false);
    let todos: Vec<_> = (1..=200)
        .map(|id| json!({"id": id, "text": "t", "done": false}))
        .collect();
    b.store
        .insert(
            "todos",
            b"console:tester",
            json!(todos).to_string().as_bytes(),
        )
        .unwrap();
    for i in 0..500 {
        b.store
            .insert(
                "memory",
                format!("session\0console:tester\0k{i}").as_bytes(),
                b"v",
            )
            .unwrap();
    }
    let results = batch(
        &b,
        vec![
            call(
                "t1",
                "manage_todos",
                json!({"action": "add", "text": "one more"}),
            ),
            call(
                "t2",
                "manage_todos",
                json!({"action": "update", "id": 1, "text": "x".repeat(2_001)}),
            ),
            call(
                "m1",
                "manage_memory",
                json!({"action": "set", "key": "new", "value": "v"}),
            ),
            call(
                "m2",
                "manage_memory",
                json!({"action": "set", "key": "k1", "value": "changed"}),
            ),
            call(
                "m3",
                "manage_memory",
                json!({"action": "set", "key": "k2", "value": "z".repeat(16 * 1024 + 1)}),
            ),
        ],
    )
    .await;
    let text = |i: usize| results[i].output.text.as_str();
    assert!(text(0).contains("200 todos, the most"), "{:?}", results[0]);
    assert!(
        text(1).contains("at most 2000 characters"),
        "{:?}",
        results[1]
    );
    assert!(
        text(2).contains("500 entries, the most"),
        "{:?}",
        results[2]
    );
    assert!(!results[3].output.is_error, "{:?}", results[3]);
    assert!(text(4).contains("shorten it"), "{:?}", results[4]);
    assert_eq!(
        b.store
            .get("memory", b"session\0console:tester\0k1")
            .unwrap()
            .as_deref(),
        Some(&b"changed"[..])
    );
    assert!(
        b.store
            .get("memory", b"session\0console:tester\0new")
            .unwrap()
            .is_none()
    );
}
