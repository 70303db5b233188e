//! What survives a stop: a restart with a card showing, SIGTERM, deadlines passed while down,
//! cards never sent, runs gone, `/stop`, and idle workers let go.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn stop_cancels_a_run_waiting_for_approval() {
    let served = Served::start(
        vec![write_call("w1", "never.txt", "x"), text("Hello again.")],
        "",
        "",
    )
    .await;
    served.say(USER, "write never.txt");
    let (card_id, card) = served.card(USER, 0).await;
    served.say(USER, "/stop");
    served.wait_text(USER, "Stopped").await;
    served.card_edit(card_id).await;
    // A press after the stop runs nothing: it is refused as expired.
    served
        .telegram
        .push_press(USER, ADMIN, card_id, &button(&card, "Approve"));
    served.press_answer("expired").await;
    // The session handles its messages one at a time, in order: once this later message is
    // answered, a stopped run that had carried on would already have asked the model.
    served.say(USER, "hello");
    served.wait_text(USER, "Hello again.").await;
    assert!(!served.path("ws/telegram_10/never.txt").exists());
    let requests = served.llm.requests();
    assert_eq!(
        requests.len(),
        2,
        "the model was not asked again for the stopped run"
    );
    let asked = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .cloned()
        .unwrap();
    assert!(
        asked["role"] == "user" && asked["content"].as_str().unwrap().contains("hello"),
        "the second request is the new message's: {asked}"
    );
}

/// A card for writing `content` to after.txt, shown and recorded; then the service is killed,
/// `while_down` runs, and the service starts again. The model answers "Done after restart."
/// once the call has run.
async fn a_write_card_across_a_restart(
    content: &str,
    while_down: impl FnOnce(&Served),
) -> (Served, i64, Value) {
    let mut served = Served::start(
        vec![
            write_call("w1", "after.txt", content),
            text("Done after restart."),
        ],
        "",
        "",
    )
    .await;
    served.say(USER, "write after.txt");
    let (card_id, card) = served.card(USER, 0).await;
    served.card_recorded(USER, card_id, &card).await;
    served.kill();
    while_down(&served);
    served.spawn();
    served.ready(2).await;
    (served, card_id, card)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pending_card_survives_a_restart_and_its_press_runs_the_call_once() {
    let mut cards_before = 0;
    let (served, card_id, card) = a_write_card_across_a_restart("restart-proof", |served| {
        cards_before = served.telegram.calls("SendMessage").len();
    })
    .await;
    served
        .telegram
        .push_press(USER, ADMIN, card_id, &button(&card, "Approve"));
    served.wait_text(USER, "Done after restart.").await;
    let written = served.path("ws/telegram_10/after.txt");
    assert_eq!(std::fs::read_to_string(written).unwrap(), "restart-proof");
    // No new approval was made. (A kill between sending the card and recording that it was
    // sent makes the next start send the same card again — same token — rather than lose it.)
    let approve = button(&card, "Approve");
    for resent in served.telegram.calls("SendMessage")[cards_before..]
        .iter()
        .filter(|b| b.get("reply_markup").is_some())
    {
        assert_eq!(
            button(resent, "Approve"),
            approve,
            "the old card is the one that answers"
        );
    }
    assert_eq!(served.llm.requests().len(), 2, "{}", served.log());
}

/// A call proposed again after a restart is judged again: when what its card would show
/// changed while the service was down (here the file it writes came to exist, so the card
/// would show a different diff), the old card is withdrawn and a new one asks. A press on the
/// old card writes nothing; the new card's does.
#[tokio::test(flavor = "multi_thread")]
async fn a_card_whose_call_changed_while_down_is_asked_again() {
    let (served, old_id, old_card) = a_write_card_across_a_restart("from the model", |served| {
        let written = served.path("ws/telegram_10/after.txt");
        std::fs::create_dir_all(written.parent().unwrap()).unwrap();
        std::fs::write(&written, "written meanwhile").unwrap();
    })
    .await;
    let written = served.path("ws/telegram_10/after.txt");
    let edit = served.card_edit(old_id).await;
    assert!(
        edit["text"]
            .as_str()
            .unwrap()
            .contains("asked again on a new card"),
        "{edit}"
    );
    let (new_id, new_card) = served.card(USER, 1).await;
    assert_ne!(new_id, old_id);
    // The resumed run's card names who asked, as the first did (the run's record kept it).
    for card in [&old_card, &new_card] {
        let text = card["text"].as_str().unwrap_or_default();
        assert!(
            text.contains(&format!("Requested by telegram:{USER}")),
            "{text}"
        );
    }
    assert_ne!(button(&new_card, "Approve"), button(&old_card, "Approve"));
    served
        .telegram
        .push_press(USER, ADMIN, old_id, &button(&old_card, "Approve"));
    served.press_answer("has expired").await;
    assert_eq!(
        std::fs::read_to_string(&written).unwrap(),
        "written meanwhile"
    );
    served
        .telegram
        .push_press(USER, ADMIN, new_id, &button(&new_card, "Approve"));
    served.wait_text(USER, "Done after restart.").await;
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "from the model");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_keeps_a_card_pending_and_a_deadline_passed_while_down_is_a_timeout() {
    let mut served = Served::start(
        vec![
            write_call("w1", "never.txt", "x"),
            text("Nobody approved, so I stopped."),
        ],
        "",
        "",
    )
    .await;
    served.say(USER, "write never.txt");
    let (card_id, card) = served.card(USER, 0).await;
    served.card_recorded(USER, card_id, &card).await;
    let mut child = served.child.take().unwrap();
    // SAFETY: signalling our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert_eq!(child.wait().unwrap().code(), Some(143));
    assert!(
        served
            .log()
            .contains("approvals still waiting stay answerable"),
        "{}",
        served.log()
    );
    assert!(
        !served
            .telegram
            .calls("EditMessageText")
            .iter()
            .any(|e| e["message_id"].as_i64() == Some(card_id)),
        "the card is still open when the process stops"
    );
    // Back after an hour down: the card's deadline (the default ten minutes) passed meanwhile.
    served.spawn_after(3600);
    served
        .wait_text(USER, "Nobody approved, so I stopped.")
        .await;
    let edit = served.card_edit(card_id).await;
    assert!(
        edit["text"]
            .as_str()
            .unwrap()
            .contains("Nobody answered in time"),
        "{edit}"
    );
    assert!(!served.path("ws/telegram_10/never.txt").exists());
}

/// A waiting `write_file` card of call `call_id` of run `run` in the private chat, showing
/// `details`, never sent; it asked about the call with fingerprint `asked`.
fn waiting_card(
    token: &tollgate::approvals::ApprovalToken,
    run: &str,
    call_id: &str,
    details: &str,
    asked: String,
) -> tollgate::approvals::PendingApproval {
    use tollgate::approvals::{ApprovalChoice, PendingApproval, PendingState};
    use tollgate_surface::{ApprovalCard, Button, ChatKind, ChatRef, Platform};
    let now = tollgate::clock::now_secs();
    PendingApproval {
        token: token.to_string(),
        session: "telegram:10".into(),
        call_id: call_id.into(),
        agent: "a".into(),
        tool: "write_file".into(),
        posted: now,
        expires: now + 600,
        choices: vec![ApprovalChoice::Approve, ApprovalChoice::Deny],
        state: PendingState::Waiting,
        run: run.into(),
        chat: Some(ChatRef {
            platform: Platform::Telegram,
            id: USER,
            kind: ChatKind::Private,
            thread: None,
            guild: None,
            parent: None,
        }),
        card: Some(ApprovalCard {
            agent: "a".into(),
            requester: "Ann".into(),
            tool: "write_file".into(),
            tier: "write".into(),
            reason: "writes".into(),
            details: details.into(),
            rows: vec![vec![Button {
                label: "Approve".into(),
                token: token.button("approve"),
            }]],
        }),
        posted_to: Vec::new(),
        options: Vec::new(),
        asked,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_card_never_sent_is_sent_and_a_press_on_a_gone_run_expires_it() {
    use std::sync::Arc;
    use tollgate::approvals::{ApprovalToken, PendingApprovals};
    use tollgate::store::open_dir;
    let mut served = Served::new(vec![], "", "").await;
    let token = ApprovalToken::generate().unwrap();
    {
        let store = Arc::new(open_dir(&served.path("store"), 8).unwrap());
        PendingApprovals::new(store)
            .create(&waiting_card(
                &token,
                "a-run-that-is-gone",
                "c9",
                "write x.txt",
                String::new(),
            ))
            .unwrap();
    }
    served.spawn();
    served.ready(1).await;
    let (card_id, card) = served.card(USER, 0).await;
    assert!(card["text"].as_str().unwrap().contains("write x.txt"));
    served
        .telegram
        .push_press(USER, ADMIN, card_id, &button(&card, "Approve"));
    served.press_answer("expired").await;
    let edit = served.card_edit(card_id).await;
    assert!(edit["text"].as_str().unwrap().contains("Expired"), "{edit}");
    assert_eq!(served.llm.requests().len(), 0);
}

/// A stopped process's store holding an open run whose call `call_0` writes second.txt, and a
/// card of the same run and call id that asked about another call (first.txt) — answered
/// with Approve, or still waiting with no fingerprint (written before calls had one).
fn seed_another_calls_card(served: &Served, answered: bool) {
    use std::sync::Arc;
    use tollgate::agent::llm::{ChatMessage, Role, ToolCall};
    use tollgate::agent::runs::{CallRecord, CallState, RunPhase, RunRecord, RunStore};
    use tollgate::approvals::{ApprovalToken, PendingApprovals, PressOutcome};
    use tollgate::executor::ToolCallRequest;
    use tollgate::store::open_dir;
    let write = |path: &str| ToolCall {
        id: "call_0".into(),
        name: "write_file".into(),
        arguments: json!({"path": path, "content": "x"}).to_string(),
    };
    let store = Arc::new(open_dir(&served.path("store"), 8).unwrap());
    let runs = RunStore::new(store.clone());
    let mut transcript = runs.transcript("telegram:10").unwrap();
    transcript.push(ChatMessage::new(Role::User, "write two files"));
    transcript.push(ChatMessage {
        role: Role::Assistant,
        content: String::new(),
        tool_calls: vec![write("second.txt")],
        tool_call_id: None,
    });
    runs.save_transcript("telegram:10", &transcript).unwrap();
    runs.save(&RunRecord {
        requester: None,
        id: "telegram:10:seeded".into(),
        session: "telegram:10".into(),
        agent: "a".into(),
        round: 2,
        phase: RunPhase::RunningTools,
        calls: vec![CallRecord {
            call: write("second.txt"),
            state: CallState::Pending,
        }],
        usage: Default::default(),
        transcript_len: Some(transcript.len()),
        message: None,
    })
    .unwrap();
    let first = write("first.txt");
    let token = ApprovalToken::generate().unwrap();
    let approvals = PendingApprovals::new(store.clone());
    let asked = if answered {
        ToolCallRequest {
            id: first.id,
            name: first.name,
            arguments: first.arguments,
            run: None,
        }
        .fingerprint()
    } else {
        String::new()
    };
    approvals
        .create(&waiting_card(
            &token,
            "telegram:10:seeded",
            "call_0",
            "write first.txt",
            asked,
        ))
        .unwrap();
    let now = tollgate::clock::now_secs();
    if answered {
        let pressed = approvals
            .press(&token.button("approve"), "User1", true, now)
            .unwrap();
        assert!(matches!(pressed, PressOutcome::Answered(_)), "{pressed:?}");
    }
}

/// A stored answer is reused only for the very call it answered. Here a run resumed after a
/// restart holds a call whose id matches an approved record of the same run, but that record
/// answered a different call (another file): the resumed call gets a card of its own, and a
/// denial there writes nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_stored_approval_of_another_call_with_the_same_id_runs_nothing() {
    let mut served = Served::stopped_after_one_answer(vec![text("Not written.")]).await;
    seed_another_calls_card(&served, true);
    served.spawn();
    let (card_id, card) = served.card(USER, 0).await;
    assert!(
        card["text"].as_str().unwrap().contains("second.txt"),
        "{card}"
    );
    let second = served.path("ws/telegram_10/second.txt");
    assert!(!second.exists());
    served
        .telegram
        .push_press(USER, ADMIN, card_id, &button(&card, "Deny"));
    served.wait_text(USER, "Not written.").await;
    assert!(!second.exists());
}

/// The same with the other call's card still waiting (written before calls had fingerprints):
/// that card is withdrawn and says so, and the resumed call waits on a card of its own, so no
/// card stays answerable that nothing waits on.
#[tokio::test(flavor = "multi_thread")]
async fn a_waiting_card_of_another_call_with_the_same_id_is_withdrawn() {
    let mut served = Served::stopped_after_one_answer(vec![text("Written.")]).await;
    seed_another_calls_card(&served, false);
    served.spawn();
    let (old_id, old) = served.card(USER, 0).await;
    assert!(old["text"].as_str().unwrap().contains("first.txt"), "{old}");
    let edit = served.card_edit(old_id).await;
    assert!(
        edit["text"]
            .as_str()
            .unwrap()
            .contains("asked again on a new card"),
        "{edit}"
    );
    let (new_id, new) = served.card(USER, 1).await;
    assert!(
        new["text"].as_str().unwrap().contains("second.txt"),
        "{new}"
    );
    served
        .telegram
        .push_press(USER, ADMIN, new_id, &button(&new, "Approve"));
    served.wait_text(USER, "Written.").await;
    assert!(served.path("ws/telegram_10/second.txt").exists());
    assert!(!served.path("ws/telegram_10/first.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_idle_session_is_let_go_and_keeps_its_mode() {
    let served = Served::start(vec![text("Hi.")], "", "idle_session_secs = 1").await;
    served.say(ADMIN, "/mode high-risk");
    served
        .wait_text(ADMIN, "Approval mode of this chat is now `high-risk`")
        .await;
    for _ in 0..100 {
        if served.log().contains("let go of") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        served.log().contains("let go of 1 session worker"),
        "{}",
        served.log()
    );
    served.say(ADMIN, "/status");
    let status = served.wait_text(ADMIN, "Mode `").await;
    assert!(status.contains("Mode `high-risk`"), "{status}");
    served.say(ADMIN, "hello again");
    served.wait_text(ADMIN, "Hi.").await;
}

/// Saved dials that cannot be decoded are not replaced by the agent's (which may be wider than
/// what an admin set): the chat gets the strictest until an admin sets them again.
#[tokio::test(flavor = "multi_thread")]
async fn unreadable_saved_dials_make_the_chat_strictest() {
    use tollgate::executor::session::DIALS_TREE;
    use tollgate::store::{Store, open_dir};
    let mut served = Served::new(vec![], "", "").await;
    {
        let store = open_dir(&served.path("store"), 8).unwrap();
        store
            .insert(
                DIALS_TREE,
                format!("telegram:{ADMIN}").as_bytes(),
                b"{not json",
            )
            .unwrap();
        store.flush().unwrap();
    }
    served.spawn();
    served.ready(1).await;
    served.say(ADMIN, "/status");
    let status = served.wait_text(ADMIN, "Mode `").await;
    assert!(
        status.contains("Mode `always` · sandbox `read-only`"),
        "{status}"
    );
    assert!(
        served.log().contains("saved dials unreadable"),
        "{}",
        served.log()
    );
}

/// Marks the store's only run unanswered again, after checking that the chat's answer (or
/// word of its failure) was noted as sent: the store as a kill before it left would leave it.
fn mark_the_only_run_unanswered(served: &Served) {
    use tollgate::store::{Store, open_dir};
    let store = open_dir(&served.path("store"), 8).unwrap();
    let runs = store.scan_prefix("runs", b"").unwrap();
    assert_eq!(runs.len(), 1);
    assert!(
        store
            .scan_prefix("runs_unanswered", b"")
            .unwrap()
            .is_empty(),
        "what the chat was sent is noted"
    );
    store.insert("runs_unanswered", &runs[0].0, b"").unwrap();
    store.flush().unwrap();
}

/// Starts `served` again (stopped, its only run marked unanswered) and waits until `count` of
/// the chat's texts is `sent`; then checks it is sent once, not at every start. A session's
/// worker takes its items in order, so a message answered after the resend ("Second.") means
/// the resend was noted before the stop; and one answered after the next start ("Third.")
/// comes after anything that start would have sent again.
async fn sent_once_more_after_a_restart(
    served: &mut Served,
    count: impl Fn(Vec<String>) -> usize,
    sent: usize,
) {
    served.spawn();
    served.ready(2).await;
    served
        .telegram
        .wait_for(WAIT, "sent again after the restart", |t| {
            (count(t.texts_to(USER)) == sent).then_some(())
        })
        .await;
    served.say(USER, "and now?");
    served.wait_text(USER, "Second.").await;
    served.terminate();
    served.spawn();
    served.ready(3).await;
    served.say(USER, "and again?");
    served.wait_text(USER, "Third.").await;
    assert_eq!(count(served.telegram.texts_to(USER)), sent);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_written_down_but_not_sent_is_sent_after_a_restart_once() {
    let mut served = Served::stopped_after_one_answer(vec![text("Second."), text("Third.")]).await;
    // As if a kill had come between the finished record and the answer leaving.
    mark_the_only_run_unanswered(&served);
    let hellos = |texts: Vec<String>| texts.iter().filter(|t| t.as_str() == "Hello.").count();
    sent_once_more_after_a_restart(&mut served, hellos, 2).await;
    assert_eq!(
        served.llm.requests().len(),
        3,
        "the finished run was not run again"
    );
}

/// A run that failed is owed word of it as a finished run is its answer: a kill after the
/// failed record and before the chat was told has the chat told after the restart (in general
/// terms: the error itself stays in the log), once.
#[tokio::test(flavor = "multi_thread")]
async fn a_failure_the_chat_was_not_told_of_is_told_after_a_restart_once() {
    use crate::suite::fakes::llm::Reply;
    let mut served = Served::start(
        vec![
            Reply::Status {
                code: 400,
                retry_after: None,
            },
            text("Second."),
            text("Third."),
        ],
        "",
        "",
    )
    .await;
    served.say(USER, "hi");
    served.wait_text(USER, "The run failed").await;
    served.terminate();
    // As if a kill had come between the failed record and the notice leaving.
    mark_the_only_run_unanswered(&served);
    let told = |texts: Vec<String>| {
        texts
            .iter()
            .filter(|t| t.contains("failed before tollgate restarted"))
            .count()
    };
    sent_once_more_after_a_restart(&mut served, told, 1).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_the_platform_failed_to_take_is_sent_after_a_restart() {
    // Telegram's servers fail the send and every retry of it (the bridge retries a 5xx three
    // times: bridges/telegram/src/bot.rs, MAX_TRANSIENT_RETRIES). A fault left over would
    // fail the next start's send, and the test would say so.
    let bad_gateway =
        serde_json::json!({"ok": false, "error_code": 502, "description": "Bad Gateway"});
    sent_only_after_a_restart(&vec![bad_gateway; 4]).await;
}

/// A rate limit longer than five minutes (a flood ban) is not slept through: the send gives up at
/// once and the answer is kept, to go out at the next start.
#[tokio::test(flavor = "multi_thread")]
async fn an_answer_under_an_hour_long_rate_limit_is_kept_not_waited_for() {
    sent_only_after_a_restart(&[serde_json::json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 3600", "parameters": {"retry_after": 3600}})]).await;
}

/// Answers "hi" while Telegram answers the sends with `faults`: the answer is not sent (the
/// log says why), and the next start sends it, without asking the model again.
async fn sent_only_after_a_restart(faults: &[Value]) {
    let mut served = Served::start(vec![text("Hello.")], "", "").await;
    for fault in faults {
        served.telegram.fail_next("SendMessage", fault.clone());
    }
    served.say(USER, "hi");
    let failed = std::time::Instant::now();
    while !served.log().contains("sending an answer to chat") {
        assert!(failed.elapsed() < WAIT, "{}", served.log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(served.telegram.texts_to(USER).is_empty());
    served.terminate();
    served.spawn();
    served.ready(2).await;
    served.wait_text(USER, "Hello.").await;
    assert_eq!(
        served.llm.requests().len(),
        1,
        "sent again, not asked again"
    );
}

/// A subagent's run a kill left open is ended at the next start (nobody resumes it: its
/// parent's call was interrupted with it), so retention can prune it.
#[tokio::test(flavor = "multi_thread")]
async fn a_subagents_run_left_open_is_ended_at_the_next_start() {
    use std::sync::Arc;
    use tollgate::agent::runs::{RunPhase, RunRecord, RunStore};
    use tollgate::store::open_dir;
    let mut served = Served::stopped_after_one_answer(vec![]).await;
    let sub = RunRecord {
        requester: None,
        id: "telegram:10:sub:1f:run".into(),
        session: "telegram:10:sub:1f".into(),
        agent: "a".into(),
        round: 1,
        phase: RunPhase::RunningTools,
        calls: Vec::new(),
        usage: Default::default(),
        transcript_len: None,
        message: None,
    };
    RunStore::new(Arc::new(open_dir(&served.path("store"), 8).unwrap()))
        .save(&sub)
        .unwrap();
    served.spawn();
    // Polling again: recovery is over (it runs before the bridge polls).
    served.ready(2).await;
    served.terminate();
    assert!(
        served.log().contains("ended 1 open run(s) nobody resumes"),
        "{}",
        served.log()
    );
    let runs = RunStore::new(Arc::new(open_dir(&served.path("store"), 8).unwrap()));
    assert!(runs.open_runs().unwrap().is_empty());
    assert!(matches!(
        runs.load(&sub.id).unwrap().unwrap().phase,
        RunPhase::Failed { .. }
    ));
}

/// An "Approve all" row saved by a process killed before it noted where the row went is
/// retired at the next start: it is not read at every start after, and retention prunes it.
#[tokio::test(flavor = "multi_thread")]
async fn an_approve_all_row_never_noted_as_posted_is_retired_at_the_next_start() {
    use std::sync::Arc;
    use tollgate::approvals::BulkApprovals;
    use tollgate::store::open_dir;
    let mut served = Served::new(vec![], "", "").await;
    // A new row over two cards, never posted.
    let token = crate::suite::store_scale::bulk_row(&BulkApprovals::new(Arc::new(
        open_dir(&served.path("store"), 8).unwrap(),
    )));
    served.spawn();
    // Polling: recovery is over (it runs before the bridge polls).
    served.ready(1).await;
    served.terminate();
    let bulks = BulkApprovals::new(Arc::new(open_dir(&served.path("store"), 8).unwrap()));
    assert!(bulks.live().unwrap().is_empty());
    assert!(bulks.get(&token).unwrap().unwrap().replaced);
}

/// A chat that only ever sent commands is dated like one that talked, so retention forgets it
/// (where it was seen included) once it has been idle past `retain_days`: before, its worker's
/// start remembered the chat with no date, and nothing ever removed it.
#[tokio::test(flavor = "multi_thread")]
async fn a_chat_that_only_sent_commands_is_forgotten_by_retention() {
    use std::sync::Arc;
    use tollgate::store::{Store, open_dir};
    let mut served = Served::start(vec![], "", "").await;
    served.say(USER, "/whoami");
    served.wait_text(USER, "You are telegram user").await;
    served.terminate();
    let store: Arc<dyn Store> = Arc::new(open_dir(&served.path("store"), 8).unwrap());
    let key = b"telegram:10";
    assert!(
        store.get("bridge_sessions", key).unwrap().is_some(),
        "the chat is remembered"
    );
    let config = tollgate::config::load(Some(&served.path("tollgate.toml"))).unwrap();
    let later = tollgate::clock::now_secs() + 31 * 86_400;
    let report = tollgate::retention::prune(&store, &config, later).unwrap();
    assert_eq!(report.sessions.len(), 1, "{report}");
    assert!(
        store.get("bridge_sessions", key).unwrap().is_none(),
        "where the chat was seen is forgotten with it"
    );
}

/// A reminder's run is unattended: nobody answers its prompts. Resumed after a restart, it
/// stays unattended — its call that needs a human is refused with the fix named, and no card
/// asks an admin (before, the resumed run went through the chat's card approver).
#[tokio::test(flavor = "multi_thread")]
async fn a_reminders_run_resumed_after_a_restart_still_asks_nobody() {
    use std::sync::Arc;
    use tollgate::agent::llm::{ChatMessage, Role, ToolCall};
    use tollgate::agent::runs::{CallRecord, CallState, RunPhase, RunRecord, RunStore};
    use tollgate::store::open_dir;
    let mut served = Served::stopped_after_one_answer(vec![text("Could not write it.")]).await;
    let write = ToolCall {
        id: "call_r".into(),
        name: "write_file".into(),
        arguments: json!({"path": "reminded.txt", "content": "x"}).to_string(),
    };
    let runs = RunStore::new(Arc::new(open_dir(&served.path("store"), 8).unwrap()));
    let mut transcript = runs.transcript("telegram:10").unwrap();
    transcript.push(ChatMessage::new(
        Role::User,
        "⏰ Reminder: write reminded.txt",
    ));
    transcript.push(ChatMessage {
        role: Role::Assistant,
        content: String::new(),
        tool_calls: vec![write.clone()],
        tool_call_id: None,
    });
    runs.save_transcript("telegram:10", &transcript).unwrap();
    runs.save(&RunRecord {
        requester: None,
        id: "telegram:10:reminder:r1".into(),
        session: "telegram:10".into(),
        agent: "a".into(),
        round: 1,
        phase: RunPhase::RunningTools,
        calls: vec![CallRecord {
            call: write,
            state: CallState::Proposed,
        }],
        usage: Default::default(),
        transcript_len: Some(transcript.len()),
        message: None,
    })
    .unwrap();
    drop(runs);
    let from = served.telegram.call_count();
    served.spawn();
    served.wait_text(USER, "Could not write it.").await;
    let cards: Vec<Value> = served
        .telegram
        .calls("SendMessage")
        .into_iter()
        .filter(|m| m.get("reply_markup").is_some())
        .collect();
    assert!(cards.is_empty(), "no card asks anyone: {cards:?}");
    assert!(served.telegram.call_count() > from);
    assert!(!served.path("ws/telegram_10/reminded.txt").exists());
    let refused = &served.llm.requests()[1].raw;
    assert!(
        refused.contains("tool_approval"),
        "the model is told the call was refused, with the fix: {refused}"
    );
}
