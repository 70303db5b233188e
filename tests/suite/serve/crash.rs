//! A kill inside a group commit while three sessions write at once (a test failpoint aborts
//! the process at its Nth commit, after the writes and before their flush). After the restart,
//! every card a user saw still answers, the approved calls run once, and every session answers
//! again.

use super::{ADMIN, GROUP, Served, USER, WAIT, button};
use crate::suite::fakes::llm::{Reply, text, tool_calls};
use crate::suite::fakes::telegram::user_message;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

/// The three chats: (chat, sender, kind, what to say).
const CHATS: [(i64, i64, &str, &str); 3] = [
    (USER, USER, "private", "go"),
    (11, 11, "private", "go"),
    (GROUP, USER, "supergroup", "@toll_bot go"),
];

/// The model: a user's message gets one shell call, whose line names the turn (each session
/// logs into its own workspace); a tool result gets "Done."
fn model(body: &Value) -> Reply {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    if messages.last().is_some_and(|m| m["role"] == "tool") {
        return text("Done.");
    }
    let turn = messages.iter().filter(|m| m["role"] == "user").count();
    let line = format!("turn-{turn}");
    tool_calls(&[(
        &format!("call-{turn}"),
        "execute_command",
        &json!({"command": format!("echo {line} >> ran.log")}).to_string(),
    )])
}

/// Every card message shown so far, by its Approve token and message id.
fn cards(served: &Served) -> BTreeMap<(String, i64), (i64, Value)> {
    let mut shown = BTreeMap::new();
    for body in served.telegram.calls("SendMessage") {
        let Some(id) = body["_id"].as_i64() else {
            continue;
        };
        let Some(rows) = body["reply_markup"]["inline_keyboard"].as_array() else {
            continue;
        };
        let approve = rows
            .iter()
            .flat_map(|r| r.as_array().cloned().unwrap_or_default())
            .any(|b| b["text"].as_str().unwrap_or("").contains("Approve"));
        if approve {
            let chat = body["chat_id"].as_i64().unwrap();
            shown.insert((button(&body, "Approve"), id), (chat, body));
        }
    }
    shown
}

/// The "Done." answers each chat got after the first `skip` messages sent to it.
fn done_after(served: &Served, skip: &BTreeMap<i64, usize>) -> BTreeSet<i64> {
    CHATS
        .iter()
        .filter(|(chat, ..)| {
            served
                .telegram
                .texts_to(*chat)
                .iter()
                .skip(skip.get(chat).copied().unwrap_or(0))
                .any(|t| t.contains("Done."))
        })
        .map(|(chat, ..)| *chat)
        .collect()
}

/// Approves every card message not pressed yet; the presses, by callback id.
fn press_new_cards(
    served: &Served,
    pressed: &mut BTreeSet<(String, i64)>,
    presses: &mut BTreeMap<String, (String, i64)>,
) {
    for ((token, id), (chat, card)) in cards(served) {
        if pressed.insert((token.clone(), id)) {
            let update = served
                .telegram
                .push_press(chat, ADMIN, id, &button(&card, "Approve"));
            presses.insert(format!("cb{update}"), (token, id));
        }
    }
}

async fn crash_at(flush: u64) -> usize {
    let mut served = Served::new(Vec::new(), "tools = [\"execute_command\"]\n", "").await;
    served.llm.classify_as("high-risk");
    served.llm.respond_with(model);
    // Not waiting for the poller: the failpoint may fire at a commit during start-up, before it.
    served.spawn_with(&[(tollgate::store::ABORT_AT_FLUSH_ENV, flush.to_string())]);
    for (chat, from, kind, said) in CHATS {
        served
            .telegram
            .push_message(user_message(chat, kind, from, said));
    }
    // The abort is the positive signal. Cards are approved as they come, so the turns go on
    // writing (and the crash can land while an approved call runs).
    let mut child = served.child.take().unwrap();
    let mut pressed = BTreeSet::new();
    let mut presses = BTreeMap::new();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < WAIT,
            "flush {flush} never came: {}",
            served.log()
        );
        press_new_cards(&served, &mut pressed, &mut presses);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert!(!status.success(), "the failpoint aborts: {status:?}");
    let seen_before = cards(&served);
    let sent_before: BTreeMap<i64, usize> = CHATS
        .iter()
        .map(|(chat, ..)| (*chat, served.telegram.texts_to(*chat).len()))
        .collect();

    // Presses answered by the dead process: one that came between a card's sending and the
    // record of where it went was told "Answer on the card itself" then — correct at that
    // instant, and pressed again below.
    let answers_before = served.telegram.calls("AnswerCallbackQuery").len();
    let starts_before = served
        .telegram
        .methods()
        .iter()
        .filter(|m| *m == "GetMe")
        .count();
    served.spawn();
    served.ready(starts_before + 1).await;
    // Every chat asks again; each session handles what the crash left (a resumed run, a card
    // to send again) before it.
    for (chat, from, kind, said) in CHATS {
        served
            .telegram
            .push_message(user_message(chat, kind, from, &format!("{said} again")));
    }
    // Press every card's latest copy until every chat has answered after the restart — again
    // for cards pressed before the crash: a press the dead process had fetched is gone with it,
    // as on Telegram, and the admin presses again (the first press to arrive wins).
    pressed.clear();
    let started = Instant::now();
    while done_after(&served, &sent_before).len() < CHATS.len() {
        assert!(
            started.elapsed() < WAIT,
            "crash at flush {flush}: not every chat answered; {:?}\n{}",
            served.telegram.methods(),
            served.log()
        );
        press_new_cards(&served, &mut pressed, &mut presses);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // Every card a user saw still answers: no press came back expired or unknown. A copy sent
    // before the crash whose sending was not yet recorded is sent again after it (same
    // token); a press on the first copy is then told to answer on the card itself — allowed
    // only where that later copy exists.
    let shown = cards(&served);
    for (n, answer) in served
        .telegram
        .calls("AnswerCallbackQuery")
        .into_iter()
        .enumerate()
    {
        let said = answer["text"].as_str().unwrap_or("");
        let Some((token, id)) = answer["callback_query_id"]
            .as_str()
            .and_then(|cb| presses.get(cb))
        else {
            continue;
        };
        assert!(
            !said.contains("no longer") && !said.contains("expired"),
            "crash at flush {flush}: a card the user saw stopped answering: {said}"
        );
        if n >= answers_before && said.contains("card itself") {
            assert!(
                shown.keys().any(|(t, other)| t == token && other > id),
                "crash at flush {flush}: card {id} refused with no later copy: {said}"
            );
        }
    }
    // No call ran twice: every line of every session's log is there once.
    for dir in std::fs::read_dir(served.path("ws")).unwrap() {
        let log = dir.unwrap().path().join("ran.log");
        let Ok(lines) = std::fs::read_to_string(&log) else {
            continue;
        };
        let all: Vec<&str> = lines.lines().collect();
        let unique: BTreeSet<&str> = all.iter().copied().collect();
        assert_eq!(
            all.len(),
            unique.len(),
            "crash at flush {flush}: {log:?} ran twice: {all:?}"
        );
    }
    eprintln!(
        "crash at flush {flush}: {} card(s) seen before, {} pressed after",
        seen_before.len(),
        pressed.len()
    );
    seen_before.len()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kill_inside_a_group_commit_loses_no_card_and_runs_nothing_twice() {
    let mut cards_seen_before_a_crash = 0;
    for flush in [3, 7, 11, 15, 19, 23] {
        cards_seen_before_a_crash += crash_at(flush).await;
    }
    assert!(
        cards_seen_before_a_crash > 0,
        "no crash came after a card was shown: the test proves less than it says"
    );
}
