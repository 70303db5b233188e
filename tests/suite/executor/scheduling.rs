//! Scheduling a batch: the concurrency cap, every call answered in order, timeouts as failed
//! results, and cancel answering running and waiting calls.

use super::{batch, bench, call, ws};
use serde_json::json;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use tollgate::executor::CallOutcome;

#[tokio::test]
async fn at_most_ten_at_a_time_and_every_call_answered_in_order() {
    let b = bench(false);
    let calls: Vec<_> = (0..14)
        .map(|i| call(&format!("c{i}"), "sleeper", json!({"ms": 300})))
        .collect();
    let results = batch(&b, calls).await;
    assert_eq!(b.peak.load(Ordering::SeqCst), 10);
    let ids: Vec<_> = results.iter().map(|r| r.id.clone()).collect();
    assert_eq!(ids, (0..14).map(|i| format!("c{i}")).collect::<Vec<_>>());
    assert!(results.iter().all(|r| r.outcome == CallOutcome::Executed));
}

#[tokio::test]
async fn a_timeout_is_a_failed_result_not_a_crash() {
    let b = bench(false);
    let started = Instant::now();
    let results = batch(
        &b,
        vec![
            call("t", "sleeper", json!({})),
            call("q", "sleeper", json!({"ms": 10})),
        ],
    )
    .await;
    assert_eq!(results[0].outcome, CallOutcome::TimedOut);
    assert!(results[0].output.is_error);
    assert_eq!(results[1].outcome, CallOutcome::Executed);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn cancel_answers_running_and_waiting_calls() {
    let b = bench(false);
    let token = CancellationToken::new();
    let canceller = token.clone();
    let executor = b.executor.clone();
    let session = b.session.clone();
    let run = tokio::spawn(async move {
        executor
            .run_batch(
                session,
                vec![
                    call("run", "sleeper", json!({})),
                    call(
                        "wait",
                        "write_file",
                        json!({"path": "x.txt", "content": "x"}),
                    ),
                ],
                token,
            )
            .await
    });
    // Cancelled once one call runs and the other waits for its answer (the sleeper counts
    // itself in when it starts; the approver records the prompt).
    for _ in 0..250 {
        if b.peak.load(Ordering::SeqCst) == 1 && b.approver.asked_ids() == ["wait"] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert_eq!(b.peak.load(Ordering::SeqCst), 1, "the sleeper started");
    assert_eq!(b.approver.asked_ids(), ["wait"]);
    canceller.cancel();
    let results = tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(results[0].outcome, CallOutcome::Cancelled);
    assert_eq!(results[1].outcome, CallOutcome::Cancelled);
    assert!(results[1].output.text.contains("nothing ran"));
    assert!(!ws(&b, "x.txt").exists());
}

/// A propose half that blocks (a large file read and diffed for the card) steps aside from
/// the async worker: on a runtime with one worker, another task still runs meanwhile — here,
/// the one that lets the proposal go. Without stepping aside it would wait 5 s in vain.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_slow_propose_half_does_not_stall_the_other_tasks() {
    let b = bench(false);
    let (executor, session) = (b.executor.clone(), b.session.clone());
    let run = tokio::spawn(async move {
        executor
            .run_batch(
                session,
                vec![call("slow", "slow_proposer", json!({}))],
                CancellationToken::new(),
            )
            .await
    });
    let (proposing, release) = (b.proposing.clone(), b.release_proposal.clone());
    let releaser = tokio::spawn(async move {
        while !proposing.load(Ordering::SeqCst) {
            tokio::task::yield_now().await;
        }
        release.send(()).unwrap();
    });
    let results = run.await.unwrap();
    releaser.await.unwrap();
    assert_eq!(results[0].outcome, CallOutcome::Executed, "{results:?}");
    assert_eq!(results[0].output.text, "let go");
}
