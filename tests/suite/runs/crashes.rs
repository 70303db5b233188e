//! Runs that outlive their process: a crash while a call waits for approval, a crash while a
//! call runs, a stop while a command runs, a run stored before its model call, and a run
//! killed while its model thinks — each resumed by a fresh runner over the same store.

use super::{runner, world, ws};
use crate::suite::executor::Scripted;
use crate::suite::fakes::llm::{FakeLlm, text, tool_calls};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tollgate::agent::llm::Role;
use tollgate::agent::runner::INTERRUPTED;
use tollgate::agent::runs::{CallState, RunStore};
use tollgate::executor::approval::Answer;
use tollgate::store::Store;

#[tokio::test]
async fn a_crash_while_waiting_for_approval_loses_nothing() {
    let w = world("");
    let llm = FakeLlm::start(vec![tool_calls(&[(
        "w1",
        "write_file",
        r#"{"path":"out.txt","content":"once"}"#,
    )])])
    .await;
    let nobody_answers = Arc::new(Scripted::default());
    let (first, session) = runner(&w, &llm, nobody_answers.clone());
    let task = tokio::spawn(async move {
        first
            .start(session, "run-7", "write it", CancellationToken::new())
            .await
    });
    for _ in 0..200 {
        if !nobody_answers.asked_ids().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(nobody_answers.asked_ids(), ["w1"]);
    task.abort(); // the process dies with the card showing
    let _ = task.await;

    let runs = RunStore::new(w.store.clone() as Arc<dyn Store>);
    let open = runs.open_runs().unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].calls[0].state, CallState::Pending);
    assert!(!ws(&w, "out.txt").exists());

    llm.push(text("Written."));
    let admin = Arc::new(Scripted::default());
    admin
        .expect("w1")
        .send(Answer::Approve {
            by: "console:op".into(),
        })
        .unwrap();
    let (second, session) = runner(&w, &llm, admin.clone());
    let outcome = second
        .resume(session, open[0].clone(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.answer, "Written.");
    assert_eq!(std::fs::read_to_string(ws(&w, "out.txt")).unwrap(), "once");
    assert!(runs.open_runs().unwrap().is_empty());
    let last = llm.requests().last().unwrap().body["messages"].clone();
    let tool = last
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(tool["tool_call_id"], "w1");
    assert!(
        tool["content"].as_str().unwrap().starts_with("wrote"),
        "{tool}"
    );
}

#[tokio::test]
async fn a_crash_while_running_is_reported_and_never_rerun() {
    let w = world("[agents.a.tool_approval]\nexecute_command = \"allow\"");
    let llm = FakeLlm::start(vec![tool_calls(&[(
        "r1",
        "execute_command",
        r#"{"command":"echo ran >> count.txt; sleep 30"}"#,
    )])])
    .await;
    let (first, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let task = tokio::spawn(async move {
        first
            .start(session, "run-9", "count", CancellationToken::new())
            .await
    });
    let runs = RunStore::new(w.store.clone() as Arc<dyn Store>);
    for _ in 0..300 {
        let running = runs.load("run-9").unwrap().is_some_and(|r| {
            r.calls
                .first()
                .is_some_and(|c| c.state == CallState::Running)
        });
        // The whole line, not just the file: `>>` creates it before `echo` writes.
        let counted = std::fs::read_to_string(ws(&w, "count.txt")).is_ok_and(|c| c == "ran\n");
        if running && counted {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task.abort(); // the process dies mid-command (its sandbox dies with it)
    let _ = task.await;
    assert_eq!(
        runs.load("run-9").unwrap().unwrap().calls[0].state,
        CallState::Running
    );

    llm.push(text("It may or may not have run."));
    let (second, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let open = runs.open_runs().unwrap();
    let outcome = second
        .resume(session, open[0].clone(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.answer, "It may or may not have run.");
    // The model was told the call was interrupted, and the resumed run has ended: a re-run
    // would have been one of its steps, awaited before that answer — not something still
    // under way.
    let last = llm.requests().last().unwrap().body["messages"].clone();
    let tool = last
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(tool["content"], INTERRUPTED);
    assert_eq!(
        std::fs::read_to_string(ws(&w, "count.txt")).unwrap(),
        "ran\n",
        "never run twice"
    );
}

#[tokio::test]
async fn stop_cancels_and_a_run_stored_before_its_model_call_resumes() {
    let w = world("[agents.a.tool_approval]\nexecute_command = \"allow\"");
    let llm = FakeLlm::start(vec![tool_calls(&[(
        "s1",
        "execute_command",
        r#"{"command":"touch started && sleep 30"}"#,
    )])])
    .await;
    let (first, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let token = CancellationToken::new();
    let stop = token.clone();
    let task = tokio::spawn(async move { first.start(session, "run-stop", "sleep", token).await });
    // Stopped while the command runs: the marker says it has started.
    let started = ws(&w, "started");
    for _ in 0..500 {
        if started.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(started.exists(), "the command never started");
    stop.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(outcome.answer, "Stopped.");
    let transcript = RunStore::new(w.store.clone() as Arc<dyn Store>)
        .transcript("console:op")
        .unwrap();
    let last = transcript.last().unwrap();
    assert_eq!(last.role, Role::Tool, "the dangling call got a result");
    assert!(last.content.contains("cancelled"), "{}", last.content);

    // A run stored just before its model call (the process died there) asks the model again.
    let runs = RunStore::new(w.store.clone() as Arc<dyn Store>);
    let mut stored = runs.load("run-stop").unwrap().unwrap();
    stored.id = "run-again".into();
    stored.phase = tollgate::agent::runs::RunPhase::AskingModel;
    stored.calls.clear();
    runs.save(&stored).unwrap();
    llm.push(text("Back again."));
    let (second, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let resumed = second
        .resume(session, stored, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(resumed.answer, "Back again.");
}

/// A run's start puts the user's message into the run's record and leaves the transcript as
/// it was: the transcript is written once a turn, with the answer. A process that dies while
/// the model thinks (the run's record made durable by the slow-model flush) leaves the
/// message in the open run; the resumed run asks with it, once, and the transcript ends with
/// it and the answer, each once.
#[tokio::test]
async fn a_run_killed_while_its_model_thinks_resumes_with_its_message_once() {
    use crate::suite::fakes::llm::{Condition, Reply};
    use tollgate::agent::llm::ChatMessage;
    let w = world("");
    let runs = RunStore::new(w.store.clone() as Arc<dyn Store>);
    let before = [
        ChatMessage::new(Role::User, "earlier"),
        ChatMessage::new(Role::Assistant, "before"),
    ];
    runs.save_transcript("console:op", &before).unwrap();
    // The first process's model never answers it.
    let llm = FakeLlm::start(vec![Reply::Until(
        Condition(Arc::new(|| false)),
        Box::new(text("never seen")),
    )])
    .await;
    let (first, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let task = tokio::spawn(async move {
        first
            .start(session, "run-k", "what now?", CancellationToken::new())
            .await
    });
    for _ in 0..500 {
        if w.store.durable("run-k") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        w.store.durable("run-k"),
        "the run's start was never flushed"
    );
    // The process dies.
    task.abort();
    let _ = task.await;
    let transcript = runs.transcript("console:op").unwrap();
    assert_eq!(
        transcript, before,
        "the start leaves the transcript as it was"
    );
    let stored = runs.load("run-k").unwrap().unwrap();
    assert_eq!(stored.message.as_deref(), Some("what now?"));
    assert!(runs.open_runs().unwrap().iter().any(|r| r.id == "run-k"));

    llm.push(text("Here now."));
    let (second, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let resumed = second
        .resume(session, stored, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(resumed.answer, "Here now.");
    let asked = llm.requests()[1].body["messages"].clone();
    let asked = asked.as_array().unwrap();
    let contents: Vec<&str> = asked[1..]
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["earlier", "before", "what now?"]);
    let transcript: Vec<String> = runs
        .transcript("console:op")
        .unwrap()
        .into_iter()
        .map(|m| m.content)
        .collect();
    assert_eq!(transcript, ["earlier", "before", "what now?", "Here now."]);
    let finished = runs.load("run-k").unwrap().unwrap();
    assert_eq!(finished.message, None, "in the transcript now");
}

/// A run ended by a store error before its first answer keeps its message in the
/// conversation, as a failed model call does. It stays open; resumed after the conversation
/// went on, it neither deletes the later turn's answer (shown to the user) nor adds its
/// message a second time.
#[tokio::test]
async fn a_run_ended_by_a_store_error_before_its_answer_keeps_its_message() {
    use tollgate::agent::error::RunError;
    use tollgate::agent::llm::ChatMessage;
    let w = world("");
    let runs = RunStore::new(w.store.clone() as Arc<dyn Store>);
    let contents = || -> Vec<String> {
        runs.transcript("console:op")
            .unwrap()
            .into_iter()
            .map(|m| m.content)
            .collect()
    };
    runs.save_transcript(
        "console:op",
        &[
            ChatMessage::new(Role::User, "earlier"),
            ChatMessage::new(Role::Assistant, "before"),
        ],
    )
    .unwrap();
    let llm = FakeLlm::start(vec![text("Later answer."), text("Stale run answered.")]).await;
    // Once the start has written the run's record, the model call's read of the transcript
    // fails (once).
    let store = w.store.clone();
    w.store
        .after_writing_to("runs", move || store.refuse_next_read_of("transcripts"));
    let (first, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let err = first
        .start(session, "run-e", "lost?", CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::Store(_)), "{err}");
    assert_eq!(contents(), ["earlier", "before", "lost?"]);
    assert!(runs.open_runs().unwrap().iter().any(|r| r.id == "run-e"));

    let (second, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let later = second
        .start(session, "run-later", "next", CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(later.answer, "Later answer.");

    // The restart resumes the run the error left open.
    let stale = runs.load("run-e").unwrap().unwrap();
    let (third, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let resumed = third
        .resume(session, stale, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(resumed.answer, "Stale run answered.");
    assert_eq!(
        contents(),
        [
            "earlier",
            "before",
            "lost?",
            "next",
            "Later answer.",
            "Stale run answered."
        ]
    );
}

/// A reply kept without its run step (a kill between the transcript's write and the run
/// record's, another session's flush making the first durable): the next turn and a resumed
/// run ask the model again rather than leave a tool call without a result or add a second
/// reply.
#[tokio::test]
async fn a_reply_whose_run_step_was_lost_is_asked_for_again() {
    use tollgate::agent::llm::{ChatMessage, ToolCall};
    let w = world("");
    let runs = RunStore::new(w.store.clone() as Arc<dyn Store>);
    let lost_call = ChatMessage {
        role: Role::Assistant,
        content: String::new(),
        tool_calls: vec![ToolCall {
            id: "lost".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a.txt"}"#.into(),
        }],
        tool_call_id: None,
    };
    runs.save_transcript(
        "console:op",
        &[
            ChatMessage::new(Role::User, "read a.txt"),
            lost_call.clone(),
        ],
    )
    .unwrap();
    let llm = FakeLlm::start(vec![text("Hello."), text("Asked again.")]).await;
    // OpenAI refuses a transcript with a call and no result: so does the fake now.
    llm.reject_unpaired_tool_messages();
    let (first, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let outcome = first
        .start(session, "run-next", "hello?", CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.answer, "Hello.");
    let roles: Vec<Role> = runs
        .transcript("console:op")
        .unwrap()
        .iter()
        .map(|m| m.role)
        .collect();
    assert_eq!(roles, [Role::User, Role::User, Role::Assistant]);

    // A run stored as asking the model, whose reply reached the transcript but not the run.
    let mut stored = runs.load("run-next").unwrap().unwrap();
    stored.id = "run-resumed".into();
    stored.phase = tollgate::agent::runs::RunPhase::AskingModel;
    let mut transcript = runs.transcript("console:op").unwrap();
    transcript.push(ChatMessage::new(Role::User, "and?"));
    stored.transcript_len = Some(transcript.len());
    transcript.push(lost_call);
    runs.save_transcript("console:op", &transcript).unwrap();
    runs.save(&stored).unwrap();
    let (second, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let resumed = second
        .resume(session, stored, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(resumed.answer, "Asked again.");
    let asked = &llm.requests()[1].body["messages"];
    assert_eq!(asked.as_array().unwrap().last().unwrap()["content"], "and?");
    let transcript = runs.transcript("console:op").unwrap();
    assert_eq!(transcript.last().unwrap().content, "Asked again.");
    assert_eq!(transcript[transcript.len() - 2].role, Role::User);
}

/// The answer of a run that finished (or word of its failure) is never lost to a kill: whatever
/// prefix of the ending save's writes another session's commit made durable before the kill,
/// the restarted process either resumes the run (still open) or sends its answer (ended,
/// unanswered), and an ended run stays one retention prunes. Found as a
/// rare failure of the serve crash test: a commit between the finished record and its
/// "unanswered" mark left a finished run that was neither, and its answer was never sent.
#[test]
fn every_prefix_of_a_finishing_save_leaves_the_answer_recoverable() {
    use tollgate::agent::runs::RunPhase;
    // A failed run's chat is owed word of the failure as a finished run's is its answer.
    for ending in [
        RunPhase::Finished {
            answer: "Done".into(),
        },
        RunPhase::Failed {
            error: "the model said no".into(),
        },
    ] {
        every_prefix_of_an_ending_save_leaves_it_recoverable(ending);
    }
}

fn every_prefix_of_an_ending_save_leaves_it_recoverable(ending: tollgate::agent::runs::RunPhase) {
    use tollgate::agent::runs::{RunPhase, RunRecord};
    let recording = Arc::new(crate::suite::observed::Observed::default());
    let runs = RunStore::new(recording.clone());
    let mut run = RunRecord {
        requester: None,
        id: "telegram:1:run".into(),
        session: "telegram:1".into(),
        agent: "a".into(),
        round: 1,
        phase: RunPhase::RunningTools,
        calls: Vec::new(),
        usage: Default::default(),
        transcript_len: Some(2),
        message: None,
    };
    runs.save(&run).unwrap();
    let durable_before = recording.writes().len();
    run.phase = ending;
    runs.save(&run).unwrap();
    let writes = recording.writes();
    assert!(writes.len() > durable_before + 1, "{writes:?}");
    for kept in durable_before..=writes.len() {
        let after_kill = crate::suite::observed::replayed(&writes[..kept]);
        // What recovery reads, in its order: answers to send, then runs to resume.
        let restarted = RunStore::new(after_kill);
        let to_answer = restarted.unanswered().unwrap();
        let to_resume = restarted.open_runs().unwrap();
        assert!(
            to_answer.iter().any(|r| r.id == run.id) || to_resume.iter().any(|r| r.id == run.id),
            "a kill after {} of the finishing save's {} writes loses the run: {:?}",
            kept - durable_before,
            writes.len() - durable_before,
            writes[durable_before..kept]
                .iter()
                .map(|(tree, _, value)| (tree, value.is_some()))
                .collect::<Vec<_>>()
        );
        // A finished run a kill left behind is still one retention can find and prune.
        if !to_resume.iter().any(|r| r.id == run.id) {
            assert_eq!(
                restarted.prune_finished(u64::MAX).unwrap(),
                1,
                "a kill after {} of the finishing save's {} writes leaves a finished run \
                 retention never prunes",
                kept - durable_before,
                writes.len() - durable_before,
            );
        }
    }
}

/// A session's new date is written before its old one is dropped: whatever prefix of a
/// redating a kill keeps, retention still finds the session once it is idle. Dropping the old
/// entry first left a session with no entry at all, whose transcript was never pruned.
#[test]
fn every_prefix_of_a_redating_leaves_the_session_prunable() {
    use tollgate::agent::llm::{ChatMessage, Role};
    use tollgate::agent::runs::REDATE_AFTER;
    let recording = Arc::new(crate::suite::observed::Observed::default());
    let runs = RunStore::new(recording.clone());
    runs.note_activity("telegram:1", "a", 1_000).unwrap();
    runs.save_transcript("telegram:1", &[ChatMessage::new(Role::User, "hi")])
        .unwrap();
    let dated_before = recording.writes().len();
    runs.note_activity("telegram:1", "a", 1_000 + REDATE_AFTER)
        .unwrap();
    let writes = recording.writes();
    assert!(writes.len() > dated_before + 1, "{writes:?}");
    for kept in dated_before..=writes.len() {
        let after_kill = crate::suite::observed::replayed(&writes[..kept]);
        let pruned = RunStore::new(after_kill)
            .prune_idle_sessions(u64::MAX, |_| Ok(()))
            .unwrap();
        assert!(
            pruned.iter().any(|p| p.session == "telegram:1"),
            "a kill after {} of the redating's {} writes leaves a session retention never \
             prunes: {pruned:?}",
            kept - dated_before,
            writes.len() - dated_before,
        );
    }
}

/// Pruning an idle session deletes what it kept before the entry that finds it: whatever
/// prefix of a pass a kill keeps, the next pass finishes it, workspace included. The entry
/// used to go before the session's dials and "always" grants, and a claimed session without
/// its entry was dropped, so a kill could leave a grant retention had promised to revoke.
#[test]
fn every_prefix_of_an_idle_sessions_pruning_is_finished_by_the_next_pass() {
    use tollgate::agent::llm::ChatMessage;
    use tollgate::store::{Allowlists, ToolEntry};
    let dir = tempfile::tempdir().unwrap();
    let root = tollgate::policy::paths::canonical_root(dir.path());
    let toml = "[store]\nprune_workspaces = true\n[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9\"\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\nworkspace = \"ws\"\n";
    let file = root.join("tollgate.toml");
    std::fs::write(&file, toml).unwrap();
    let config =
        tollgate::config::load_with_env(Some(file), Some(toml), Default::default()).unwrap();
    let recording = Arc::new(crate::suite::observed::Observed::default());
    let store: Arc<dyn Store> = recording.clone();
    let runs = RunStore::new(store.clone());
    runs.note_activity("telegram:7", "a", 1_000).unwrap();
    runs.save_transcript("telegram:7", &[ChatMessage::new(Role::User, "hi")])
        .unwrap();
    store.insert("session_dials", b"telegram:7", b"{}").unwrap();
    store.insert("todos", b"telegram:7", b"[]").unwrap();
    store
        .insert("bridge_sessions", b"telegram:7", b"{}")
        .unwrap();
    Allowlists::new(store.clone())
        .add_tool(&ToolEntry {
            session: "telegram:7".into(),
            tool: "write_file".into(),
            by: "admin".into(),
            at: "then".into(),
        })
        .unwrap();
    let workspace = config.agents["a"]
        .workspace
        .clone()
        .unwrap()
        .join("telegram_7");
    std::fs::create_dir_all(&workspace).unwrap();
    let set_up = recording.writes().len();
    let later = 1_000 + 365 * 86_400;
    let report = tollgate::retention::prune(&store, &config, later).unwrap();
    assert_eq!(
        (report.sessions.len(), report.workspaces),
        (1, 1),
        "{report:?}"
    );
    let writes = recording.writes();
    for kept in set_up..=writes.len() {
        let after_kill: Arc<dyn Store> = crate::suite::observed::replayed(&writes[..kept]);
        // The workspace goes before the session's entry: until that entry's removal is kept,
        // a kill may have come before the workspace went too.
        let entry_gone = writes[set_up..kept]
            .iter()
            .any(|(tree, _, value)| tree == "session_activity_aged" && value.is_none());
        if !entry_gone {
            std::fs::create_dir_all(&workspace).unwrap();
        }
        tollgate::retention::prune(&after_kill, &config, later).unwrap();
        let left: Vec<&str> = [
            "transcripts",
            "session_dials",
            "todos",
            "bridge_sessions",
            "session_activity",
            "session_activity_aged",
        ]
        .into_iter()
        .filter(|tree| !after_kill.scan_prefix(tree, b"").unwrap().is_empty())
        .collect();
        let grants = Allowlists::new(after_kill.clone())
            .tools("telegram:7")
            .unwrap();
        assert!(
            left.is_empty() && grants.is_empty() && !workspace.exists(),
            "a kill after {} of the pass's {} writes leaves {left:?}, grants {grants:?}, workspace {}",
            kept - set_up,
            writes.len() - set_up,
            workspace.exists(),
        );
    }
}

/// Whatever prefix of a reminder's claim a kill keeps, the restarted process either claims it
/// again or delivers it again — exactly one of the two. Before the delivering mark, a kill
/// after the claim and before the reminder's run was recorded lost the reminder.
#[test]
fn every_prefix_of_a_reminders_claim_leaves_it_to_fire_once() {
    use tollgate::reminders::Reminders;
    let recording = Arc::new(crate::suite::observed::Observed::default());
    let reminder = crate::suite::store_scale::reminder_of("telegram:1", 1, 100);
    Reminders::new(recording.clone()).add(&reminder).unwrap();
    let added = recording.writes().len();
    let claimed = Reminders::new(recording.clone())
        .take_due(100, |_| true)
        .unwrap();
    assert_eq!(claimed.len(), 1);
    let writes = recording.writes();
    for kept in added..=writes.len() {
        let restarted = Reminders::new(crate::suite::observed::replayed(&writes[..kept]));
        let again = restarted
            .undelivered(|_| true, |_| Ok(false))
            .unwrap()
            .len();
        let claimed = restarted.take_due(100, |_| true).unwrap().len();
        assert_eq!(
            again + claimed,
            1,
            "a kill after {} of the claim's {} writes: delivered again {again}, claimed {claimed}",
            kept - added,
            writes.len() - added
        );
    }
}
