//! Presses as an attacker sends them: from a bot with an admin's id, without data, without
//! their message, on cards that are unknown or answered, on an "Approve all" row that was
//! replaced. Each gets an answer (no button keeps spinning) and each refusal is audited under
//! the session it touched.

use super::*;

/// Every `press_rejected` audit entry: (session, presser, reason).
fn rejections(served: &Served) -> Vec<(String, String, String)> {
    let audit = served.tollgate(&["audit", "--json"]);
    String::from_utf8_lossy(&audit.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "press_rejected")
        .map(|e| {
            let field = |k: &str| e[k].as_str().unwrap_or("").to_string();
            (field("session"), field("presser"), field("reason"))
        })
        .collect()
}

/// The answer to callback `id` (waiting for it).
async fn answer_to(served: &Served, id: &str) -> String {
    served
        .telegram
        .wait_for(WAIT, id, |t| {
            t.calls("AnswerCallbackQuery")
                .into_iter()
                .find(|b| b["callback_query_id"] == id)
                .map(|b| b["text"].as_str().unwrap_or("").to_string())
        })
        .await
}

fn card_message(chat: i64, message_id: i64) -> Value {
    json!({
        "message_id": message_id, "date": 1_700_000_000,
        "chat": {"id": chat, "type": "private", "first_name": "Ann"},
        "from": {"id": 999, "is_bot": true, "first_name": "Toll"},
        "text": "card",
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn every_press_is_answered_and_every_refusal_audited_under_its_session() {
    let served = Served::start(vec![write_call("w1", "x.txt", "x"), text("Ok.")], "", "").await;
    served.say(USER, "write x.txt");
    let (card_id, card) = served.card(USER, 0).await;
    let approve = button(&card, "Approve");

    // A bot whose id is an admin's is not an admin.
    served.telegram.push_callback(json!({
        "id": "from-bot", "chat_instance": "ci", "data": approve,
        "from": {"id": ADMIN, "is_bot": true, "first_name": "Imposter"},
        "message": card_message(USER, card_id),
    }));
    assert!(answer_to(&served, "from-bot").await.contains("Only admins"));
    // A press without data, and one without its message, still get an answer.
    served.telegram.push_callback(json!({
        "id": "no-data", "chat_instance": "ci",
        "from": {"id": USER, "is_bot": false, "first_name": "Ann"},
        "message": card_message(USER, card_id),
    }));
    assert!(
        answer_to(&served, "no-data")
            .await
            .contains("no longer valid")
    );
    served.telegram.push_callback(json!({
        "id": "no-message", "chat_instance": "ci", "data": approve,
        "from": {"id": USER, "is_bot": false, "first_name": "Ann"},
    }));
    assert!(
        answer_to(&served, "no-message")
            .await
            .contains("Only admins")
    );
    // An admin's press that does not come from the card answers nothing either.
    served.telegram.push_callback(json!({
        "id": "admin-elsewhere", "chat_instance": "ci", "data": approve,
        "from": {"id": ADMIN, "is_bot": false, "first_name": "Admin"},
        "message": card_message(ADMIN, 4321),
    }));
    assert!(
        answer_to(&served, "admin-elsewhere")
            .await
            .contains("on the card itself")
    );
    // A non-admin's press on a card that does not exist, from the group.
    let (head, choice) = approve.split_once(':').unwrap();
    let last = head.chars().last().unwrap();
    let other = if last == 'a' { 'b' } else { 'a' };
    let unknown = format!("{}{other}:{choice}", &head[..head.len() - 1]);
    served.telegram.push_callback(json!({
        "id": "unknown-card", "chat_instance": "ci", "data": unknown,
        "from": {"id": 11, "is_bot": false, "first_name": "Bob"},
        "message": {
            "message_id": 4242, "date": 1_700_000_000,
            "chat": {"id": GROUP, "type": "supergroup", "title": "Team"},
            "from": {"id": 999, "is_bot": true, "first_name": "Toll"},
            "text": "card",
        },
    }));
    assert!(
        answer_to(&served, "unknown-card")
            .await
            .contains("Only admins")
    );

    served.llm.push(text("Ok."));
    served.telegram.push_press(USER, ADMIN, card_id, &approve);
    served.wait_text(USER, "Ok.").await;
    // A non-admin's press on the answered card.
    served.telegram.push_callback(json!({
        "id": "answered", "chat_instance": "ci", "data": approve,
        "from": {"id": 11, "is_bot": false, "first_name": "Bob"},
        "message": card_message(USER, card_id),
    }));
    assert!(answer_to(&served, "answered").await.contains("Only admins"));

    let refused = rejections(&served);
    let sessions: Vec<&str> = refused.iter().map(|(s, _, _)| s.as_str()).collect();
    assert_eq!(
        sessions,
        [
            "telegram:10",
            "telegram:10",
            "telegram:10",
            "telegram:10",
            "telegram:-100",
            "telegram:10"
        ],
        "{refused:?}"
    );
    assert_eq!(refused[0].1, "telegram:1", "the bot, by its id");
    assert!(refused.iter().all(|(_, _, reason)| !reason.is_empty()));
    assert!(std::fs::read_to_string(served.path("ws/telegram_10/x.txt")).is_ok());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replaced_approve_all_row_is_refused_and_the_current_row_stays_live() {
    let served = Served::start(
        vec![write_both(), write_call("w3", "c.txt", "C")],
        "",
        "approvals_to = \"admins\"",
    )
    .await;
    served.say(USER, "write a and b");
    // Both cards and their row reach the admin's private chat.
    let (old_row_id, old_row) = served
        .telegram
        .wait_for(WAIT, "the first row", |t| {
            t.calls("SendMessage").into_iter().find_map(|b| {
                let row = b["text"].as_str()?.contains("2 approvals are waiting");
                row.then(|| (b["_id"].as_i64().unwrap(), b))
            })
        })
        .await;
    served.say(11, "write c");
    let (row_id, row) = served
        .telegram
        .wait_for(WAIT, "the second row", |t| {
            t.calls("SendMessage").into_iter().find_map(|b| {
                let row = b["text"].as_str()?.contains("3 approvals are waiting");
                row.then(|| (b["_id"].as_i64().unwrap(), b))
            })
        })
        .await;
    // The old row was taken off as it was replaced.
    let edit = served.card_edit(old_row_id).await;
    assert!(
        edit["text"].as_str().unwrap().contains("no longer valid"),
        "{edit}"
    );

    // Pressing the old row answers nothing and leaves the current row alone.
    served
        .telegram
        .push_press(ADMIN, ADMIN, old_row_id, &button(&old_row, "Approve all 2"));
    served.press_answer("This row was replaced").await;
    // A non-admin's press on the current row is refused and audited under the row's chat.
    served
        .telegram
        .push_press(ADMIN, USER, row_id, &button(&row, "Deny all 3"));
    served.press_answer("Only admins").await;
    assert!(
        served
            .telegram
            .calls("EditMessageText")
            .iter()
            .all(|e| e["message_id"].as_i64() != Some(row_id)),
        "the current row keeps its buttons"
    );
    assert!(!served.path("ws/telegram_10/a.txt").exists());

    served.llm.push(text("Done."));
    served.llm.push(text("Done."));
    served
        .telegram
        .push_press(ADMIN, ADMIN, row_id, &button(&row, "Approve all 3"));
    served.press_answer("Approved 3.").await;
    let edit = served.card_edit(row_id).await;
    assert!(
        edit["text"].as_str().unwrap().contains("Approved 3 of 3"),
        "{edit}"
    );
    served.wait_text(USER, "Done.").await;
    served.wait_text(11, "Done.").await;
    for (file, content) in [("a.txt", "A"), ("b.txt", "B")] {
        assert_eq!(
            std::fs::read_to_string(served.path(&format!("ws/telegram_10/{file}"))).unwrap(),
            content
        );
    }
    assert_eq!(
        std::fs::read_to_string(served.path("ws/telegram_11/c.txt")).unwrap(),
        "C"
    );
    let refused = rejections(&served);
    assert!(
        refused
            .iter()
            .any(|(s, p, r)| s == "telegram:10" && p == "telegram:1" && r == "row replaced"),
        "{refused:?}"
    );
    assert!(
        refused
            .iter()
            .any(|(s, p, _)| (s == "telegram:10" || s == "telegram:11") && p == "telegram:10"),
        "audited under the session of one of the row's cards: {refused:?}"
    );
}

/// An admin presses a card while its own `sendMessage` is still being answered (the record
/// does not say where the card went yet: under load, the press can be read first). The press
/// is answered once the record says; before, it was refused ("Answer on the card itself.")
/// and the call waited for a second press.
#[tokio::test(flavor = "multi_thread")]
async fn a_press_read_before_its_card_is_recorded_is_answered() {
    let served = Served::start(
        vec![write_call("w1", "x.txt", "x"), text("Written.")],
        "",
        "",
    )
    .await;
    served
        .telegram
        .delay_next("SendMessage", Duration::from_millis(1500));
    served.say(USER, "write x.txt");
    let (card_id, card) = served.card(USER, 0).await;
    served
        .telegram
        .push_press(USER, ADMIN, card_id, &button(&card, "Approve"));
    served.wait_text(USER, "Written.").await;
    assert!(served.path("ws/telegram_10/x.txt").exists());
}

/// An "Approve all" row pressed while its own `sendMessage` is still being answered: the
/// press waits for the row's record to say where it went, and both calls run. Before, the
/// row's platform was unknown at that moment and the admin was told they were not one.
#[tokio::test(flavor = "multi_thread")]
async fn a_press_read_before_its_row_is_recorded_is_answered() {
    let served = Served::start(vec![write_both(), text("Both written.")], "", "").await;
    // The two cards are answered at once, the row (the third message) after 1.5 s.
    for delay in [0, 0, 1500] {
        served
            .telegram
            .delay_next("SendMessage", Duration::from_millis(delay));
    }
    served.telegram.push_message(user_message(
        GROUP,
        "supergroup",
        USER,
        "@toll_bot write both",
    ));
    let (row_id, row) = served.card(GROUP, 2).await;
    let all = button(&row, "Approve all 2");
    let press = served.telegram.push_press(GROUP, ADMIN, row_id, &all);
    served.wait_text(GROUP, "Both written.").await;
    assert_eq!(
        answer_to(&served, &format!("cb{press}")).await,
        "Approved 2."
    );
    assert!(served.path("ws/telegram_-100/a.txt").exists());
    assert!(served.path("ws/telegram_-100/b.txt").exists());
}

/// A question pressed while its card's `sendMessage` is still being answered: someone else's
/// press is refused at once, the requester's waits for the question to open and answers it.
/// Before, both found it "no longer open" and the question waited out its timeout.
#[tokio::test(flavor = "multi_thread")]
async fn a_press_read_before_its_question_is_open_is_answered() {
    let served = Served::start(vec![ask_colour(), text("You chose it.")], "", "").await;
    served
        .telegram
        .delay_next("SendMessage", Duration::from_millis(1500));
    served.say(USER, "ask me");
    let (card_id, card) = served.card(USER, 0).await;
    let other = served
        .telegram
        .push_press(USER, ADMIN, card_id, &button(&card, "red"));
    assert!(
        answer_to(&served, &format!("cb{other}"))
            .await
            .contains("Only the person who asked")
    );
    let own = served
        .telegram
        .push_press(USER, USER, card_id, &button(&card, "blue"));
    served.wait_text(USER, "You chose it.").await;
    assert_eq!(answer_to(&served, &format!("cb{own}")).await, "Answered.");
    let told = served.llm.requests()[1].body["messages"].to_string();
    assert!(told.contains("blue") && !told.contains("\"red\""), "{told}");
}

/// A flood of presses from chat members, whose answers the platform is slow to take, does not
/// hold back an admin's press: admins have a lane of their own, and the flood fills only the
/// others' (one presser only its share).
#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_presses_does_not_hold_back_an_admins() {
    let served = Served::start(vec![write_call("w1", "x.txt", "x"), text("Ok.")], "", "").await;
    served.say(USER, "write x.txt");
    let (card_id, card) = served.card(USER, 0).await;
    let approve = button(&card, "Approve");
    const FLOOD: usize = 300;
    for _ in 0..FLOOD {
        served
            .telegram
            .delay_next("AnswerCallbackQuery", std::time::Duration::from_secs(60));
    }
    for i in 0..FLOOD {
        served.telegram.push_callback(json!({
            "id": format!("flood-{i}"), "chat_instance": "ci", "data": approve,
            "from": {"id": 20 + (i % 50), "is_bot": false, "first_name": "Bob"},
            "message": card_message(USER, card_id),
        }));
    }
    served.llm.push(text("Ok."));
    served.telegram.push_press(USER, ADMIN, card_id, &approve);
    served.wait_text(USER, "Ok.").await;
    assert!(std::fs::read_to_string(served.path("ws/telegram_10/x.txt")).is_ok());
}
