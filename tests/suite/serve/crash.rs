//! A kill inside a group commit while twelve sessions write at once (a test failpoint aborts
//! the process at its Nth commit, after the writes and before their flush). After the restart,
//! every card a user saw still answers, the approved calls run once, every session answers
//! again, and the store the last process leaves holds no open run, no waiting card and a
//! transcript whose every call has exactly one result.

use super::{ADMIN, CROWD, GROUP, Served, USER, WAIT, button};
use crate::suite::fakes::llm::{Reply, text, tool_calls};
use crate::suite::fakes::telegram::user_message;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

/// The chats: (chat, sender, kind, what to say) — two private chats, a group, and a crowd of
/// private chats.
fn chats() -> Vec<(i64, i64, &'static str, &'static str)> {
    let mut chats = vec![
        (USER, USER, "private", "go"),
        (11, 11, "private", "go"),
        (GROUP, USER, "supergroup", "@toll_bot go"),
    ];
    chats.extend(CROWD.map(|user| (user, user, "private", "go")));
    chats
}

/// The model: a user's message gets one shell call, whose line names the turn (each session
/// logs into its own workspace); a tool result gets "Done:" and the message it answers.
fn model(body: &Value) -> Reply {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    if messages.last().is_some_and(|m| m["role"] == "tool") {
        let asked = messages
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default();
        return text(&format!("Done: {asked}"));
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

/// The chats that answered their first message (`again` false) or the one sent after the
/// restart (a session's turns run in order, so every turn before it is over too), looking
/// past the first `skip` messages.
fn done_after(served: &Served, skip: &BTreeMap<i64, usize>, again: bool) -> BTreeSet<i64> {
    chats()
        .iter()
        .filter(|(chat, ..)| {
            served
                .telegram
                .texts_to(*chat)
                .iter()
                .skip(skip.get(chat).copied().unwrap_or(0))
                .any(|t| t.contains("Done:") && t.contains("again") == again)
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

/// A crash at the `flush`th commit (or, if every chat answered before it came, a kill then):
/// the cards seen before it, and whether it came inside a commit.
/// A press on a card that arrived before the service recorded where the card went is told
/// "Answer on the card itself" (correct at that instant: it does not know the message yet).
/// The admin presses such a card again — the latest copy of its token, refused since
/// `answers_from`; `handled` holds the refusals already acted on.
fn press_again_if_early(
    served: &Served,
    presses: &BTreeMap<String, (String, i64)>,
    pressed: &mut BTreeSet<(String, i64)>,
    handled: &mut BTreeSet<String>,
    answers_from: usize,
) {
    let shown = cards(served);
    for answer in served
        .telegram
        .calls("AnswerCallbackQuery")
        .into_iter()
        .skip(answers_from)
    {
        let Some(callback) = answer["callback_query_id"].as_str() else {
            continue;
        };
        let Some((token, id)) = presses.get(callback) else {
            continue;
        };
        let latest = !shown.keys().any(|(t, other)| t == token && other > id);
        if latest
            && answer["text"]
                .as_str()
                .unwrap_or("")
                .contains("card itself")
            && handled.insert(callback.to_string())
        {
            pressed.remove(&(token.clone(), *id));
        }
    }
}

async fn crash_at(flush: u64) -> (usize, bool) {
    let mut served = Served::new(Vec::new(), "tools = [\"execute_command\"]\n", "").await;
    // A first start makes the store (its one-time index migrations flush too): the commits
    // counted below are the turns' own.
    served.spawn();
    served.ready(1).await;
    served.terminate();
    served.llm.classify_as("high-risk");
    served.llm.respond_with(model);
    // Every request after a restart must be a transcript a provider accepts.
    served.llm.reject_unpaired_tool_messages();
    // Not waiting for the poller: the failpoint may fire at a commit during start-up, before it.
    served.spawn_with(&[(tollgate::store::ABORT_AT_FLUSH_ENV, flush.to_string())]);
    for (chat, from, kind, said) in chats() {
        served
            .telegram
            .push_message(user_message(chat, kind, from, said));
    }
    // The abort is the positive signal. Cards are approved as they come, so the turns go on
    // writing (and the crash can land while an approved call runs).
    // The child stays in `served` meanwhile: a failing assertion's unwinding kills it.
    let mut pressed = BTreeSet::new();
    let mut presses = BTreeMap::new();
    let mut handled_early = BTreeSet::new();
    let started = Instant::now();
    let mut inside_a_commit = true;
    let status = loop {
        if let Some(status) = served.child.as_mut().unwrap().try_wait().unwrap() {
            break status;
        }
        // The turns took fewer commits this time (the group commit shares more or fewer):
        // every chat answered, and the crash comes now instead.
        if done_after(&served, &BTreeMap::new(), false).len() == chats().len() {
            let child = served.child.as_mut().unwrap();
            child.kill().unwrap();
            inside_a_commit = false;
            break child.wait().unwrap();
        }
        assert!(
            started.elapsed() < WAIT,
            "flush {flush} never came: {}",
            served.log()
        );
        // A press that beat the record of where its card went is told to answer on the
        // card itself, before the crash as after it: without pressing again, that chat's
        // turn waits, the later commits never come, and the test waits out WAIT.
        press_again_if_early(&served, &presses, &mut pressed, &mut handled_early, 0);
        press_new_cards(&served, &mut pressed, &mut presses);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    served.child = None;
    assert!(!status.success(), "the failpoint aborts: {status:?}");
    let seen_before = cards(&served);
    let shown_before: BTreeSet<i64> = seen_before.values().map(|(chat, _)| *chat).collect();
    let sent_before: BTreeMap<i64, usize> = chats()
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
    for (chat, from, kind, said) in chats() {
        served
            .telegram
            .push_message(user_message(chat, kind, from, &format!("{said} again")));
    }
    // Press every card's latest copy until every chat has answered after the restart — again
    // for cards pressed before the crash: a press the dead process had fetched is gone with it,
    // as on Telegram, and the admin presses again (the first press to arrive wins).
    pressed.clear();
    let mut handled = BTreeSet::new();
    let started = Instant::now();
    while done_after(&served, &sent_before, true).len() < chats().len() {
        press_again_if_early(
            &served,
            &presses,
            &mut pressed,
            &mut handled,
            answers_before,
        );
        if started.elapsed() >= WAIT {
            let done = done_after(&served, &sent_before, true);
            let silent: Vec<(i64, Vec<String>)> = chats()
                .iter()
                .filter(|(chat, ..)| !done.contains(chat))
                .map(|(chat, ..)| (*chat, served.telegram.texts_to(*chat)))
                .collect();
            panic!(
                "crash at flush {flush}: not every chat answered: {silent:?}\n{}",
                served.log()
            );
        }
        press_new_cards(&served, &mut pressed, &mut presses);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // Every card a user saw still answers: no press came back expired or unknown. A copy sent
    // before the crash whose sending was not yet recorded is sent again after it (same
    // token); a press on the first copy is then told to answer on the card itself — allowed
    // only where that later copy exists, or where the press came before the card's record
    // and a later press of it was answered.
    let shown = cards(&served);
    let all_answers = served.telegram.calls("AnswerCallbackQuery");
    let answered_later = |n: usize, card: &(String, i64)| {
        all_answers.iter().skip(n + 1).any(|later| {
            later["callback_query_id"]
                .as_str()
                .and_then(|cb| presses.get(cb))
                == Some(card)
                && !later["text"].as_str().unwrap_or("").contains("card itself")
        })
    };
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
                shown.keys().any(|(t, other)| t == token && other > id)
                    || answered_later(n, &(token.clone(), *id)),
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
    // A turn a user saw (its card, before the crash) is answered, before the crash or after.
    for chat in &shown_before {
        let texts = served.telegram.texts_to(*chat);
        {
            assert!(
                texts
                    .iter()
                    .any(|t| t.contains("Done:") && !t.contains("again")),
                "crash at flush {flush}: chat {chat} saw its first turn's card and never got its answer: {texts:?}\n{}",
                served.log()
            );
        }
    }
    // What the last process leaves (killed again: every answer sent was durable first).
    served.kill();
    stored_records_are_consistent(&served, flush, &shown_before);
    eprintln!(
        "crash at flush {flush} ({}): {} card(s) seen before, {} pressed after",
        if inside_a_commit {
            "inside the commit"
        } else {
            "every chat had answered: killed then"
        },
        seen_before.len(),
        pressed.len()
    );
    (seen_before.len(), inside_a_commit)
}

/// Every run finished, no card still waiting, every session's transcript pairs each tool call
/// with exactly one result, after it, and a session shown a card before the crash kept that
/// turn's message.
fn stored_records_are_consistent(served: &Served, flush: u64, shown_before: &BTreeSet<i64>) {
    use std::sync::Arc;
    use tollgate::store::Store;
    let store: Arc<dyn Store> =
        Arc::new(tollgate::store::open_dir(&served.path("store"), 8).unwrap());
    let runs = tollgate::agent::runs::RunStore::new(store.clone());
    let open: Vec<String> = runs
        .open_runs()
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert!(
        open.is_empty(),
        "crash at flush {flush}: runs left open: {open:?}"
    );
    let waiting = tollgate::approvals::PendingApprovals::new(store.clone())
        .waiting()
        .unwrap();
    assert!(
        waiting.is_empty(),
        "crash at flush {flush}: cards left waiting: {waiting:?}"
    );
    for (chat, ..) in chats() {
        let session = format!("telegram:{chat}");
        let transcript = runs.transcript(&session).unwrap();
        let mut unanswered: Vec<&str> = Vec::new();
        let mut answered = BTreeSet::new();
        for message in &transcript {
            for call in &message.tool_calls {
                unanswered.push(&call.id);
            }
            if let Some(id) = &message.tool_call_id {
                let position = unanswered.iter().position(|c| c == id);
                assert!(
                    position.is_some() && answered.insert(id.clone()),
                    "crash at flush {flush}: {session}: result {id} without its call, or twice: {transcript:?}"
                );
                unanswered.remove(position.unwrap());
            }
        }
        assert!(
            unanswered.is_empty(),
            "crash at flush {flush}: {session}: calls without a result {unanswered:?}"
        );
        let users = transcript
            .iter()
            .filter(|m| m.role == tollgate::agent::llm::Role::User)
            .count();
        assert!(
            users > usize::from(shown_before.contains(&chat)),
            "crash at flush {flush}: {session} lost a message whose card was shown: {transcript:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kill_inside_a_group_commit_loses_no_card_and_runs_nothing_twice() {
    // Twelve turns take 60 to 80 commits here, as many as the group commit does not share:
    // the points run from the first messages' writes to the last answers'.
    let mut cards_seen_before_a_crash = 0;
    let mut inside_commits = 0;
    for flush in [2, 8, 16, 24, 32, 42, 52, 62] {
        let (seen, inside) = crash_at(flush).await;
        cards_seen_before_a_crash += seen;
        inside_commits += usize::from(inside);
    }
    assert!(
        cards_seen_before_a_crash > 0,
        "no crash came after a card was shown: the test proves less than it says"
    );
    assert!(
        inside_commits >= 4,
        "only {inside_commits} crashes came inside a commit: the test proves less than it says"
    );
}
