//! One turn through the runner: a valid transcript over several steps, a looping model
//! stopped at `max_rounds`, a provider failure told plainly, and a turn ended without an
//! answer keeping its message.

use super::{runner, world, ws};
use crate::suite::executor::Scripted;
use crate::suite::fakes::llm::{Condition, FakeLlm, Reply, text, tool_calls};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tollgate::agent::error::RunError;
use tollgate::agent::llm::Role;
use tollgate::agent::runs::RunStore;
use tollgate::store::Store;

#[tokio::test]
async fn a_multi_step_turn_keeps_a_valid_transcript() {
    let w = world("");
    std::fs::write(ws(&w, "notes.txt"), "the notes").unwrap();
    let llm = FakeLlm::start(vec![
        tool_calls(&[("c1", "read_file", r#"{"path":"notes.txt"}"#)]),
        text("The notes say: the notes"),
    ])
    .await;
    let (runner, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let outcome = runner
        .start(
            session,
            "run-1",
            "what do my notes say?",
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.answer, "The notes say: the notes");
    assert_eq!(outcome.rounds, 2);
    let second = &llm.requests()[1].body["messages"];
    assert_eq!(second[2]["tool_calls"][0]["id"], "c1");
    assert_eq!(second[3]["role"], "tool");
    assert_eq!(second[3]["tool_call_id"], "c1");
    assert_eq!(second[3]["content"], "the notes");
    let transcript = RunStore::new(w.store.clone() as Arc<dyn Store>)
        .transcript("console:op")
        .unwrap();
    let roles: Vec<Role> = transcript.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
}

#[tokio::test]
async fn a_prompt_answer_makes_its_run_durable_with_one_flush() {
    let w = world("");
    let llm = FakeLlm::start(vec![text("Hello.")]).await;
    let (mut runner, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    // However slowly this machine answers, the answer comes before the record's own flush.
    runner.staged_for = std::time::Duration::from_secs(600);
    let outcome = runner
        .start(session, "run-p", "hi", CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.answer, "Hello.");
    assert!(
        w.store.durable("run-p"),
        "the answer is sent only once durable"
    );
    assert_eq!(
        w.store.flushes(),
        1,
        "the start's record rides on the answer's flush"
    );
}

#[tokio::test]
async fn a_slow_model_finds_its_run_already_durable() {
    let w = world("");
    let store = w.store.clone();
    // The model answers only once the run's record is durable: without a flush of its own
    // during the model call, the record would wait for this answer, which waits for it.
    let llm = FakeLlm::start(vec![Reply::Until(
        Condition(Arc::new(move || store.durable("run-s"))),
        Box::new(text("Slow but sure.")),
    )])
    .await;
    let (runner, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let outcome = runner
        .start(session, "run-s", "hi", CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.answer, "Slow but sure.");
    assert_eq!(w.store.flushes(), 2);
}

#[tokio::test]
async fn a_model_that_loops_is_stopped_at_max_rounds() {
    let w = world("max_rounds = 2");
    std::fs::write(ws(&w, "a.txt"), "a").unwrap();
    let llm = FakeLlm::start(vec![
        tool_calls(&[("l1", "read_file", r#"{"path":"a.txt"}"#)]),
        tool_calls(&[("l2", "read_file", r#"{"path":"a.txt"}"#)]),
    ])
    .await;
    let (runner, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let outcome = runner
        .start(session, "run-2", "loop", CancellationToken::new())
        .await
        .unwrap();
    assert!(
        outcome.answer.contains("max_rounds = 2"),
        "{}",
        outcome.answer
    );
    assert_eq!(llm.requests().len(), 2);
    let transcript = RunStore::new(w.store.clone() as Arc<dyn Store>)
        .transcript("console:op")
        .unwrap();
    let calls = transcript
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| m.tool_calls.len())
        .sum::<usize>();
    let results = transcript.iter().filter(|m| m.role == Role::Tool).count();
    assert_eq!(calls, results, "every tool call has its result");
}

#[tokio::test]
async fn a_provider_failure_is_told_plainly() {
    let w = world("");
    let llm = FakeLlm::start(vec![]).await;
    let (first, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let err = first
        .start(session, "run-3", "hi", CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RunError::Model(m) if m.contains("answered 500")),
        "{err}"
    );
    let huge = "x".repeat(1024 * 1024);
    let (second, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let err = second
        .start(session, "run-4", &huge, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(err, RunError::MessageTooLong { .. }) && err.is_for_the_user(),
        "{err}"
    );
    assert!(err.to_string().contains("the limit is"), "{err}");
}

/// A turn that ends without the model's answer (the model failed, or the turn was stopped
/// while the model thought) still leaves its message in the conversation, once: the start writes it into the run's record only, and these endings
/// write the transcript themselves.
#[tokio::test]
async fn a_turn_ended_without_an_answer_keeps_its_message() {
    let contents = |w: &super::World| -> Vec<String> {
        RunStore::new(w.store.clone() as Arc<dyn Store>)
            .transcript("console:op")
            .unwrap()
            .into_iter()
            .map(|m| m.content)
            .collect()
    };
    // The model fails (the fake answers 500 when its script is empty).
    let w = world("");
    let llm = FakeLlm::start(vec![]).await;
    let (runner_a, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    runner_a
        .start(session, "run-f", "first", CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(contents(&w), ["first"]);

    // Stopped while the model thinks.
    let w = world("");
    let llm = FakeLlm::start(vec![Reply::Until(
        Condition(Arc::new(|| false)),
        Box::new(text("never seen")),
    )])
    .await;
    let (runner_b, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let token = CancellationToken::new();
    let stop = token.clone();
    let stopping = async move {
        // Once the model has the request.
        while llm.requests().is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        stop.cancel();
        llm
    };
    let (outcome, _llm) = tokio::join!(runner_b.start(session, "run-s", "second", token), stopping);
    assert_eq!(outcome.unwrap().answer, "Stopped.");
    assert_eq!(contents(&w), ["second"]);
}
