//! Approval cards in chat: who may press, what a press runs, timeouts, re-decisions, "all N"
//! rows, and where cards go.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn only_an_admin_press_runs_the_call_and_only_once() {
    let content = format!("approved once{}", " and padded".repeat(300));
    let served = Served::start(
        vec![write_call("w1", "out.txt", &content), text("Written.")],
        "",
        "",
    )
    .await;
    served.say(USER, "write out.txt");
    let (card_id, card) = served.card(USER, 0).await;
    let html = card["text"].as_str().unwrap();
    assert!(
        html.contains("write_file") && html.contains("approved once"),
        "{html}"
    );
    // Details over 2,000 characters: cut on the card, the whole text beside it as a file.
    assert!(
        html.contains("the whole text is in the file this card replies to"),
        "{html}"
    );
    let document = served
        .telegram
        .wait_for(WAIT, "the details file", |t| {
            t.calls("SendDocument").first().cloned()
        })
        .await;
    // The card replies to its file: a file someone else posts beside it is not it.
    assert_eq!(
        card["reply_parameters"]["message_id"], document["_id"],
        "{card}"
    );
    let document = document["_raw"].as_str().unwrap_or_default().to_string();
    assert!(
        document.contains("approval-details.txt") && document.matches(" and padded").count() == 300,
        "{}",
        &document[..document.len().min(400)]
    );
    let approve = button(&card, "Approve");
    let deny = button(&card, "Deny");
    assert!(
        approve.len() <= 64 && approve.starts_with("t1"),
        "{approve}"
    );
    let written = served.path("ws/telegram_10/out.txt");

    // A non-admin's press: an alert, an audit entry, nothing runs.
    served.telegram.push_press(USER, USER, card_id, &approve);
    served.press_answer("Only admins").await;
    // The refusal is audited before it is answered: with the entry there, the press has been
    // handled to its end, and it ran nothing.
    let audit = served.tollgate(&["audit", "--json"]);
    let out = String::from_utf8_lossy(&audit.stdout);
    assert!(
        out.contains("press_rejected") && out.contains("not one of the bridge's admins"),
        "{out}"
    );
    assert!(!written.exists(), "a non-admin press ran nothing");

    served.telegram.push_press(USER, ADMIN, card_id, &approve);
    served.wait_text(USER, "Written.").await;
    assert_eq!(std::fs::read_to_string(&written).unwrap(), content);
    let edit = served.card_edit(card_id).await;
    assert!(
        edit["text"]
            .as_str()
            .unwrap()
            .contains(&format!("Approved by telegram:{ADMIN} (User)")),
        "{edit}"
    );
    assert_eq!(
        edit["reply_markup"]["inline_keyboard"],
        json!([]),
        "buttons removed"
    );

    // A later press (even an admin's, even another button) is told who answered.
    served.telegram.push_press(USER, ADMIN, card_id, &deny);
    served
        .telegram
        .wait_for(WAIT, "already answered", |t| {
            t.calls("AnswerCallbackQuery").into_iter().find(|b| {
                b["text"]
                    .as_str()
                    .unwrap_or("")
                    .contains(&format!("Already answered by telegram:{ADMIN} (User)"))
            })
        })
        .await;
    assert_eq!(std::fs::read_to_string(&written).unwrap(), content);
    assert_eq!(served.llm.requests().len(), 2);
    let audit = served.tollgate(&["audit", "--json"]);
    let out = String::from_utf8_lossy(&audit.stdout);
    assert!(
        out.contains("press_rejected") && out.contains("telegram:10"),
        "{out}"
    );
}

/// A provider that leaves tool-call ids out gets them numbered per reply, so the second round
/// of a run asks for `call_0` again. The approval of the first round's `call_0` must not run
/// the second round's different call: it gets a card of its own, and a denial there stops it.
#[tokio::test(flavor = "multi_thread")]
async fn an_approval_answers_only_its_own_call_when_the_provider_repeats_an_id() {
    let served = Served::start(
        vec![
            write_call("", "first.txt", "approved"),
            write_call("", "second.txt", "never approved"),
            text("Done."),
        ],
        "",
        "",
    )
    .await;
    served.say(USER, "write two files");
    let (first_id, first) = served.card(USER, 0).await;
    assert!(
        first["text"].as_str().unwrap().contains("first.txt"),
        "{first}"
    );
    served
        .telegram
        .push_press(USER, ADMIN, first_id, &button(&first, "Approve"));
    let (second_id, second) = served.card(USER, 1).await;
    assert!(
        second["text"].as_str().unwrap().contains("second.txt"),
        "{second}"
    );
    assert!(served.path("ws/telegram_10/first.txt").exists());
    assert!(!served.path("ws/telegram_10/second.txt").exists());
    served
        .telegram
        .push_press(USER, ADMIN, second_id, &button(&second, "Deny"));
    served.wait_text(USER, "Done.").await;
    assert!(!served.path("ws/telegram_10/second.txt").exists());
    // The model saw two distinct calls, each with its own result.
    let last = served.llm.requests().last().unwrap().body.clone();
    let messages = last["messages"].as_array().unwrap();
    let asked: Vec<&str> = messages
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    let answered: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["tool_call_id"].as_str())
        .collect();
    assert_eq!(asked.len(), 2, "{last}");
    assert_ne!(asked[0], asked[1], "{last}");
    assert_eq!(asked, answered, "{last}");
}

/// Approving `spawn_subagent` is the authorization for all its subagent runs unasked: the
/// admin's card shows the task and the tools (it once showed the tool's name alone).
#[tokio::test(flavor = "multi_thread")]
async fn a_subagents_card_shows_its_task_and_tools() {
    let task = "fetch the notes, then run python3 -c on them";
    let served = Served::start(
        vec![
            tool_calls(&[(
                "s1",
                "spawn_subagent",
                &json!({"task": task, "tools": ["execute_command", "read_file"]}).to_string(),
            )]),
            text("Not spawned."),
        ],
        "tools = [\"read_file\", \"execute_command\", \"spawn_subagent\"]",
        "",
    )
    .await;
    served.say(USER, "research this in a subagent");
    let (card_id, card) = served.card(USER, 0).await;
    let html = card["text"].as_str().unwrap();
    assert!(
        html.contains("spawn_subagent")
            && html.contains(task)
            && html.contains("execute_command, read_file")
            && html.contains("high-risk"),
        "{html}"
    );
    served
        .telegram
        .push_press(USER, ADMIN, card_id, &button(&card, "Deny"));
    served.wait_text(USER, "Not spawned.").await;
}

/// A card whose details were cut goes out only after the file with the whole text: when
/// Telegram refuses the file, no pressable card shows a part of what would run (the card
/// used to go first, and stayed approvable with the file missing). Like any card whose
/// platform refused it, it waits (a restart sends it again); nobody answers, so it times out.
#[tokio::test(flavor = "multi_thread")]
async fn a_card_whose_details_file_fails_is_not_sent() {
    let content = format!("hidden tail{}", " and padded".repeat(300));
    let served = Served::start(
        vec![write_call("w1", "out.txt", &content), text("Understood.")],
        "approval_timeout_secs = 2",
        "",
    )
    .await;
    served.telegram.fail_next(
        "SendDocument",
        json!({"ok": false, "error_code": 400, "description": "Bad Request: file is too big"}),
    );
    served.say(USER, "write out.txt");
    served.wait_text(USER, "Understood.").await;
    let cards: Vec<Value> = served
        .telegram
        .calls("SendMessage")
        .into_iter()
        .filter(|m| m.get("reply_markup").is_some())
        .collect();
    assert!(cards.is_empty(), "{cards:?}");
    assert_eq!(served.telegram.calls("SendDocument").len(), 1);
    assert!(
        served
            .log()
            .contains("could not be attached, so the card was not sent"),
        "{}",
        served.log()
    );
    assert!(!served.path("ws/telegram_10/out.txt").exists());
    let told = served.llm.requests()[1].body["messages"].to_string();
    assert!(
        told.contains("nobody answered the approval request in time"),
        "{told}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_card_nobody_answers_times_out_as_a_runtime_deny() {
    let served = Served::start(
        vec![
            write_call("w1", "late.txt", &format!("the bot token is {TOKEN}")),
            text("Understood."),
        ],
        "approval_timeout_secs = 2",
        "",
    )
    .await;
    served.say(USER, "write late.txt");
    let (card_id, card) = served.card(USER, 0).await;
    served.wait_text(USER, "Understood.").await;
    let edit = served.card_edit(card_id).await;
    // The leak guard covers cards and their edits too.
    for shown in [&card["text"], &edit["text"]] {
        let shown = shown.as_str().unwrap();
        assert!(
            !shown.contains("SECRET-bot-token") && shown.contains("[redacted]"),
            "{shown}"
        );
    }
    assert!(
        edit["text"]
            .as_str()
            .unwrap()
            .contains("Nobody answered in time"),
        "{edit}"
    );
    let told = served.llm.requests()[1].body["messages"].to_string();
    assert!(
        told.contains("nobody answered the approval request in time"),
        "{told}"
    );
    assert!(!served.path("ws/telegram_10/late.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn groups_answer_mentions_only_and_two_cards_get_an_approve_all_row() {
    let served = Served::start(vec![write_both(), text("Both written.")], "", "").await;
    served
        .telegram
        .push_message(user_message(GROUP, "supergroup", USER, "no mention here"));
    served.telegram.push_message(user_message(
        GROUP,
        "supergroup",
        USER,
        "@toll_bot write both",
    ));
    let (_, first) = served.card(GROUP, 0).await;
    let (_, second) = served.card(GROUP, 1).await;
    assert_ne!(button(&first, "Approve"), button(&second, "Approve"));
    let (row_id, row) = served.card(GROUP, 2).await;
    let all = button(&row, "Approve all 2");
    served.telegram.push_press(GROUP, ADMIN, row_id, &all);
    served.wait_text(GROUP, "Both written.").await;
    assert_eq!(
        std::fs::read_to_string(served.path("ws/telegram_-100/a.txt")).unwrap(),
        "A"
    );
    assert_eq!(
        std::fs::read_to_string(served.path("ws/telegram_-100/b.txt")).unwrap(),
        "B"
    );
    assert_eq!(
        served.llm.requests().len(),
        2,
        "the unmentioned message was not answered"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cards_go_to_admins_or_fall_back_to_the_chat() {
    let served = Served::start(
        vec![write_call("w1", "dm.txt", "via dm"), text("Done.")],
        "",
        "approvals_to = \"admins\"",
    )
    .await;
    served.say(USER, "write dm.txt");
    let (card_id, card) = served.card(ADMIN, 0).await;
    served.wait_text(USER, "waiting for an admin").await;
    served
        .telegram
        .push_press(ADMIN, ADMIN, card_id, &button(&card, "Approve"));
    served.wait_text(USER, "Done.").await;
    assert!(served.path("ws/telegram_10/dm.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_always_answer_redecides_the_other_card_and_can_be_revoked() {
    let served = Served::start(
        vec![
            tool_calls(&[
                (
                    "w1",
                    "write_file",
                    &json!({"path": "one.txt", "content": "1"}).to_string(),
                ),
                (
                    "w2",
                    "write_file",
                    &json!({"path": "two.txt", "content": "2"}).to_string(),
                ),
            ]),
            text("Both done."),
        ],
        "",
        "",
    )
    .await;
    served.telegram.push_message(user_message(
        GROUP,
        "supergroup",
        USER,
        "@toll_bot write two files",
    ));
    let (first_id, first) = served.card(GROUP, 0).await;
    let (second_id, _) = served.card(GROUP, 1).await;
    let always = button(&first, "Always: this tool");
    served.telegram.push_press(GROUP, ADMIN, first_id, &always);
    served.wait_text(GROUP, "Both done.").await;
    assert!(served.path("ws/telegram_-100/one.txt").exists());
    assert!(served.path("ws/telegram_-100/two.txt").exists());
    let second_edit = served.card_edit(second_id).await;
    assert!(
        second_edit["text"]
            .as_str()
            .unwrap()
            .contains("Decided again without an answer: allowed"),
        "{second_edit}"
    );

    let listed = served.tollgate(&["allowlist", "list"]);
    let out = String::from_utf8_lossy(&listed.stdout);
    assert!(
        out.contains("tool write_file") && out.contains(&format!("by telegram:{ADMIN} (User)")),
        "{out}"
    );
    served.telegram.push_message(user_message(
        GROUP,
        "supergroup",
        ADMIN,
        "/allowlist@toll_bot revoke tool write_file",
    ));
    served.wait_text(GROUP, "Revoked `write_file`").await;
    let listed = served.tollgate(&["allowlist", "list"]);
    assert!(!String::from_utf8_lossy(&listed.stdout).contains("write_file"));
}

/// An admin's `/allowlist revoke command KEY` in one chat reaches the agent's other live
/// sessions at once. A command key is the agent's, and each live session held its own copy:
/// before, the session that had the key kept running the command without asking.
#[tokio::test(flavor = "multi_thread")]
async fn a_command_revoked_in_one_chat_asks_again_in_another_live_session() {
    let echo = |id: &str| {
        tool_calls(&[(
            id,
            "execute_command",
            &json!({"command": "echo hi"}).to_string(),
        )])
    };
    let served = Served::start(
        vec![
            echo("e1"),
            text("Ran once."),
            echo("e2"),
            text("Asked again."),
        ],
        "tools = [\"execute_command\"]\n",
        "",
    )
    .await;
    served.llm.classify_as("high-risk");
    served.say(USER, "run it");
    let (card_id, card) = served.card(USER, 0).await;
    served
        .telegram
        .push_press(USER, ADMIN, card_id, &button(&card, "(agent a)"));
    served.wait_text(USER, "Ran once.").await;
    let listed = served.tollgate(&["allowlist", "list"]);
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    let key = listed
        .lines()
        .find_map(|l| l.split('\t').find_map(|f| f.strip_prefix("command ")))
        .unwrap_or_else(|| panic!("no command key in {listed}"))
        .to_string();

    // Revoked in the admin's own chat, a session of the same agent.
    served.say(ADMIN, &format!("/allowlist revoke command {key}"));
    served.wait_text(ADMIN, "Revoked").await;
    // The user's live session asks again: a card, which the admin denies.
    served.say(USER, "run it again");
    let (second_id, second) = served.card(USER, 1).await;
    served
        .telegram
        .push_press(USER, ADMIN, second_id, &button(&second, "Deny"));
    served.wait_text(USER, "Asked again.").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_admin_who_never_started_the_bot_gets_the_card_in_the_chat() {
    let served = Served::start(
        vec![write_call("w1", "x.txt", "x"), text("Ok.")],
        "",
        "approvals_to = \"admins\"",
    )
    .await;
    served.telegram.fail_next(
        "SendMessage",
        json!({"ok": false, "error_code": 403, "description": "Forbidden: bot can't initiate conversation with a user"}),
    );
    served.say(USER, "write x.txt");
    let (card_id, card) = served.card(USER, 0).await;
    assert!(
        served.log().contains("has not started a chat with the bot"),
        "{}",
        served.log()
    );
    assert!(
        served
            .telegram
            .texts_to(USER)
            .iter()
            .all(|t| !t.contains("waiting for an admin"))
    );
    served
        .telegram
        .push_press(USER, ADMIN, card_id, &button(&card, "Approve"));
    served.wait_text(USER, "Ok.").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revoke_from_the_command_line_takes_effect_in_a_live_session() {
    let served = Served::start(
        vec![
            write_call("w1", "a.txt", "a"),
            text("one"),
            write_call("w2", "b.txt", "b"),
            text("two"),
            write_call("w3", "c.txt", "c"),
            text("three"),
        ],
        "",
        "",
    )
    .await;
    served.say(USER, "write a");
    let (card_id, card) = served.card(USER, 0).await;
    let always = button(&card, "Always: this tool");
    served.telegram.push_press(USER, ADMIN, card_id, &always);
    served.wait_text(USER, "one").await;
    served.say(USER, "write b");
    served.wait_text(USER, "two").await;
    assert!(
        served.path("ws/telegram_10/b.txt").exists(),
        "allowed always, no card"
    );

    let revoked = served.tollgate(&[
        "allowlist",
        "revoke",
        "--session",
        "telegram:10",
        "--tool",
        "write_file",
    ]);
    assert!(
        revoked.status.success(),
        "{}",
        String::from_utf8_lossy(&revoked.stderr)
    );
    served.say(USER, "write c");
    let (card_id, card) = served.card(USER, 1).await;
    assert!(
        !served.path("ws/telegram_10/c.txt").exists(),
        "asked again after the revoke"
    );
    served
        .telegram
        .push_press(USER, ADMIN, card_id, &button(&card, "Approve"));
    served.wait_text(USER, "three").await;
    assert!(served.path("ws/telegram_10/c.txt").exists());
}

/// The card names who asks: the sender's name is their own choice, so it cannot pass for
/// another user's id (an admin weighs who asks).
#[tokio::test(flavor = "multi_thread")]
async fn a_senders_name_cannot_pass_for_an_admins_id_on_the_card() {
    let served = Served::start(
        vec![write_call("w1", "out.txt", "x"), text("Written.")],
        "",
        "",
    )
    .await;
    let mut message = user_message(USER, "private", USER, "write out.txt");
    message["from"]["first_name"] = json!(format!("Ann (telegram:{ADMIN})"));
    served.telegram.push_message(message);
    let (_, card) = served.card(USER, 0).await;
    let html = card["text"].as_str().unwrap();
    assert!(
        html.contains(&format!("\nRequested by telegram:{USER} (Ann telegram:)\n")),
        "{html}"
    );
}
