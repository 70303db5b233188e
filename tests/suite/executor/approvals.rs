//! Approvals and refusals: queued approvals decided again when an "always" lands, write-ahead
//! of what was approved, the events each call records, and denials, refusals and bad
//! arguments returned as results.

use super::{batch, bench, call, ws};
use serde_json::json;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tollgate::executor::approval::Answer;
use tollgate::executor::{CallOutcome, ToolCallRequest};
use tollgate::policy::{DecisionSource, ReasonCode};
use tollgate::tools::Provenance;

/// Runs a batch of two writes (`w1` "1" to one.txt, `w2` "2" to two.txt) and `more`, and
/// returns once both writes wait for an answer (or after two seconds).
async fn two_writes_and(
    b: &super::Bench,
    more: Vec<ToolCallRequest>,
) -> tokio::task::JoinHandle<Vec<tollgate::executor::ToolCallResult>> {
    let executor = b.executor.clone();
    let session = b.session.clone();
    let mut calls = vec![
        call(
            "w1",
            "write_file",
            json!({"path": "one.txt", "content": "1"}),
        ),
        call(
            "w2",
            "write_file",
            json!({"path": "two.txt", "content": "2"}),
        ),
    ];
    calls.extend(more);
    let run = tokio::spawn(async move {
        executor
            .run_batch(session, calls, CancellationToken::new())
            .await
    });
    for _ in 0..100 {
        if b.approver.asked_ids().len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    run
}

#[tokio::test]
async fn an_always_answer_decides_the_waiting_calls_again() {
    let b = bench(false);
    let first = b.approver.expect("w1");
    let run = two_writes_and(
        &b,
        vec![call("r", "read_file", json!({"path": "missing.txt"}))],
    )
    .await;
    // Both writes wait with their own card; the read ran unasked.
    let mut asked = b.approver.asked_ids();
    asked.sort();
    assert_eq!(asked, ["w1", "w2"]);
    first
        .send(Answer::AlwaysTool {
            by: "telegram:42".into(),
        })
        .unwrap();
    let results = tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        results[0].outcome,
        CallOutcome::Executed,
        "{:?}",
        results[0]
    );
    assert_eq!(
        results[1].outcome,
        CallOutcome::Executed,
        "{:?}",
        results[1]
    );
    assert_eq!(std::fs::read_to_string(ws(&b, "one.txt")).unwrap(), "1");
    assert_eq!(std::fs::read_to_string(ws(&b, "two.txt")).unwrap(), "2");
    assert_eq!(
        *b.approver.withdrawn.lock().unwrap(),
        [("w2".to_string(), "allowed".to_string())]
    );
    assert!(
        results[2].output.is_error,
        "reading a missing file is an error result"
    );
    // The second call's grant names the allowlist that answered it.
    let events = b.events.all();
    let w2: Vec<_> = events
        .iter()
        .filter(|e| e.call_id == "w2")
        .map(|e| (e.kind.as_str(), e.fields.get("source").cloned()))
        .collect();
    assert_eq!(
        w2,
        [
            ("tool_proposed", None),
            ("permission_requested", None),
            ("permission_granted", Some(json!("allowlist"))),
            ("tool_started", None),
            ("tool_completed", None),
        ]
    );
}

/// A call decided again to allow whose card a person denied first (their press settled it
/// before the withdrawal did) does not run: the card says "denied", so it is.
#[tokio::test]
async fn a_deny_press_that_came_first_beats_a_redecision_that_allows() {
    let b = bench(false);
    let first = b.approver.expect("w1");
    b.approver.answered_before_withdrawal(
        "w2",
        Answer::Deny {
            by: "telegram:43".into(),
        },
    );
    let run = two_writes_and(&b, vec![]).await;
    assert_eq!(b.approver.asked_ids().len(), 2);
    // w1's "always" decides w2 again (allow); w2's card was denied first.
    first
        .send(Answer::AlwaysTool {
            by: "telegram:42".into(),
        })
        .unwrap();
    let results = tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        results[0].outcome,
        CallOutcome::Executed,
        "{:?}",
        results[0]
    );
    assert_eq!(
        results[1].outcome,
        CallOutcome::Denied(Provenance::Human {
            by: "telegram:43".into()
        }),
        "{:?}",
        results[1]
    );
    assert!(!ws(&b, "two.txt").exists(), "the denied write did not run");
    assert_eq!(
        *b.approver.withdrawn.lock().unwrap(),
        [("w2".to_string(), "allowed".to_string())]
    );
    let denied: Vec<_> = b
        .events
        .all()
        .into_iter()
        .filter(|e| e.call_id == "w2" && e.kind.as_str() == "permission_denied")
        .collect();
    assert_eq!(denied.len(), 1, "{denied:?}");
}

#[tokio::test]
async fn what_was_approved_is_what_runs() {
    let b = bench(false);
    std::fs::write(ws(&b, "notes.txt"), "alpha\n").unwrap();
    let answer = b.approver.expect("e");
    let executor = b.executor.clone();
    let session = b.session.clone();
    let run = tokio::spawn(async move {
        executor
            .run_batch(
                session,
                vec![call(
                    "e",
                    "edit_file",
                    json!({"path": "notes.txt", "old": "alpha", "new": "beta"}),
                )],
                CancellationToken::new(),
            )
            .await
    });
    for _ in 0..100 {
        if !b.approver.asked_ids().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let preview = b.approver.asked.lock().unwrap()[0]
        .proposal
        .preview
        .clone()
        .unwrap();
    assert!(
        preview.contains("-alpha") && preview.contains("+beta"),
        "{preview}"
    );
    // The file changes after its diff was shown: the approved edit must not land.
    std::fs::write(ws(&b, "notes.txt"), "alpha\ngamma\n").unwrap();
    answer
        .send(Answer::Approve {
            by: "telegram:42".into(),
        })
        .unwrap();
    let results = run.await.unwrap();
    assert!(
        results[0]
            .output
            .text
            .contains("changed since the approved preview"),
        "{:?}",
        results[0]
    );
    assert_eq!(
        std::fs::read_to_string(ws(&b, "notes.txt")).unwrap(),
        "alpha\ngamma\n"
    );
}

#[tokio::test]
async fn denials_refusals_and_bad_arguments_are_results() {
    let b = bench(false);
    let results = batch(
        &b,
        vec![
            call("d", "execute_command", json!({"command": "sudo reboot"})),
            call("j", "read_file", json!("{not json")),
            ToolCallRequest {
                id: "raw".into(),
                name: "read_file".into(),
                arguments: "{\"path\": ".into(),
                run: None,
            },
            call("t", "web_fetch", json!({"url": "http://x/"})),
            call("s", "read_file", json!({"path": "/etc/shadow"})),
        ],
    )
    .await;
    assert_eq!(
        results[0].outcome,
        CallOutcome::Denied(Provenance::Gate {
            source: DecisionSource::Denylist,
            reason_code: ReasonCode::Denylist("privilege")
        })
    );
    assert!(results[0].output.text.contains("nothing ran"));
    assert_eq!(results[1].outcome, CallOutcome::Refused);
    assert_eq!(results[2].outcome, CallOutcome::Refused);
    assert!(results[2].output.text.contains("not valid JSON"));
    assert_eq!(
        results[3].outcome,
        CallOutcome::Denied(Provenance::Gate {
            source: DecisionSource::Sandbox,
            reason_code: ReasonCode::NetworkRequest
        })
    );
    assert_eq!(
        results[4].outcome,
        CallOutcome::Denied(Provenance::Gate {
            source: DecisionSource::Sandbox,
            reason_code: ReasonCode::SandboxRead
        })
    );
}

#[tokio::test]
async fn unattended_prompts_are_refused_with_the_fix() {
    let b = bench(true);
    let results = batch(
        &b,
        vec![call(
            "g",
            "execute_command",
            json!({"command": "git status"}),
        )],
    )
    .await;
    assert_eq!(results[0].outcome, CallOutcome::Refused);
    assert!(
        results[0]
            .output
            .text
            .contains("allowlist `git status` for agent a"),
        "{}",
        results[0].output.text
    );
}
