//! The runtime's own correctness under `serve`: a reminder fires into its chat (and the chat's
//! next turn sees it) with the chat's dials; `/new` while a tool runs leaves a transcript every provider accepts;
//! `/stop` while a question waits stops the run; a flood of strangers writes a bounded audit; a
//! mention of another bot is not one.

use super::{ADMIN, GROUP, Served, USER, WAIT, ask_colour, button};
use crate::suite::fakes::llm::{text, tool_calls};
use crate::suite::fakes::telegram::user_message;
use serde_json::{Value, json};

/// The roles of the messages of every model request after the first `skip`.
fn roles_after(served: &Served, skip: usize) -> Vec<Vec<String>> {
    served
        .llm
        .requests()
        .iter()
        .skip(skip)
        .map(|r| {
            r.body["messages"]
                .as_array()
                .map(|m| {
                    m.iter()
                        .map(|m| m["role"].as_str().unwrap_or("").to_string())
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reminder_set_from_a_chat_fires_into_it_under_serve() {
    let served = Served::start(
        vec![
            tool_calls(&[(
                "r1",
                "add_reminder",
                &json!({"message": "stretch your legs", "in_secs": 1}).to_string(),
            )]),
            text("I will remind you."),
            text("Time to stretch!"),
            text("Well done."),
        ],
        "tools = [\"add_reminder\", \"list_reminders\"]\n",
        "",
    )
    .await;
    served.say(USER, "remind me to stretch in a second");
    served.wait_text(USER, "I will remind you.").await;
    served.wait_text(USER, "Time to stretch!").await;
    let requests = served.llm.requests();
    let fired = requests.last().unwrap().body["messages"].to_string();
    assert!(
        fired.contains("[reminder r") && fired.contains("stretch your legs"),
        "{fired}"
    );
    // Claimed once: a later `list_reminders` would not show it, and nothing fires twice.
    assert_eq!(
        served
            .telegram
            .texts_to(USER)
            .iter()
            .filter(|t| t.contains("Time to stretch!"))
            .count(),
        1
    );
    // The reminder's run (assembled apart: nobody answers its prompts) wrote the session's
    // transcript; the chat's next turn sees it.
    served.say(USER, "done stretching");
    served.wait_text(USER, "Well done.").await;
    let next = served.llm.requests().last().unwrap().body["messages"].to_string();
    assert!(
        next.contains("stretch your legs") && next.contains("Time to stretch!"),
        "{next}"
    );
}

/// A reminder, set after an admin's `dial` command (answered with `set`), whose run writes
/// late.txt; `agent_extra` adds to the agent's config. Returns the model's last request, which
/// carries the write's result, once the run has answered; the write must not have happened.
async fn reminders_write_after(dial: &str, set: &str, agent_extra: &str) -> String {
    let served = Served::start(
        vec![
            tool_calls(&[(
                "r1",
                "add_reminder",
                &json!({"message": "write late.txt", "in_secs": 1}).to_string(),
            )]),
            text("I will remind you."),
            tool_calls(&[(
                "w1",
                "write_file",
                &json!({"path": "late.txt", "content": "late"}).to_string(),
            )]),
            text("Tried to write it."),
        ],
        &format!("tools = [\"add_reminder\", \"write_file\"]\n{agent_extra}"),
        "",
    )
    .await;
    served.say(ADMIN, dial);
    served.wait_text(ADMIN, set).await;
    served.say(ADMIN, "remind me to write late.txt in a second");
    served.wait_text(ADMIN, "I will remind you.").await;
    served.wait_text(ADMIN, "Tried to write it.").await;
    assert!(!served.path("ws/telegram_1/late.txt").exists());
    served.llm.requests().last().unwrap().body["messages"].to_string()
}

/// A reminder's run (assembled apart, nobody answering its prompts) has its chat's dials: after
/// an admin's `/sandbox read-only` its write is refused, where it used to run with the agent's
/// configured sandbox (and a tool the agent allows outright was written).
#[tokio::test(flavor = "multi_thread")]
async fn a_reminders_run_keeps_its_chats_narrower_sandbox() {
    let refused = reminders_write_after(
        "/sandbox read-only",
        "Sandbox of this chat is now `read-only`",
        "[agents.a.tool_approval]\nwrite_file = \"allow\"\n",
    )
    .await;
    assert!(refused.contains("read-only"), "{refused}");
}

/// A reminder's run, with nobody watching, is no more permissive than the agent's configured
/// mode: an admin's `/mode high-risk` for the chat does not carry over, and its write (which
/// `high-risk` runs unasked) needs an approval nobody can give.
#[tokio::test(flavor = "multi_thread")]
async fn a_reminders_run_is_no_more_permissive_than_its_agents_mode() {
    let refused = reminders_write_after(
        "/mode high-risk",
        "Approval mode of this chat is now `high-risk`",
        "",
    )
    .await;
    assert!(refused.contains("nobody can approve"), "{refused}");
}

/// A stricter `/mode` for the chat reaches a reminder's run already under way: its write,
/// which the agent allows outright in mode `low-risk`, is asked about under `always` once the
/// admin set it mid-run, and nobody can answer (the run used to keep the mode it started with).
#[tokio::test(flavor = "multi_thread")]
async fn a_stricter_mode_reaches_a_reminders_run_under_way() {
    use crate::suite::fakes::llm::{Condition, Reply};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let mode_set = Arc::new(AtomicBool::new(false));
    let released = mode_set.clone();
    let served = Served::start(
        vec![
            tool_calls(&[(
                "r1",
                "add_reminder",
                &json!({"message": "write late.txt", "in_secs": 1}).to_string(),
            )]),
            text("I will remind you."),
            Reply::Until(
                Condition(Arc::new(move || released.load(Ordering::SeqCst))),
                Box::new(tool_calls(&[(
                    "w1",
                    "write_file",
                    &json!({"path": "late.txt", "content": "late"}).to_string(),
                )])),
            ),
            text("Tried to write it."),
        ],
        "tools = [\"add_reminder\", \"write_file\"]\n[agents.a.tool_approval]\nwrite_file = \"allow\"\n",
        "",
    )
    .await;
    served.say(ADMIN, "remind me to write late.txt in a second");
    served.wait_text(ADMIN, "I will remind you.").await;
    // The reminder's run is asking its model (held).
    served
        .telegram
        .wait_for(WAIT, "the reminder's model request", |_| {
            (served.llm.requests().len() >= 3).then_some(())
        })
        .await;
    served.say(ADMIN, "/mode always");
    served
        .wait_text(ADMIN, "Approval mode of this chat is now `always`")
        .await;
    mode_set.store(true, Ordering::SeqCst);
    served.wait_text(ADMIN, "Tried to write it.").await;
    assert!(!served.path("ws/telegram_1/late.txt").exists());
    let told = served.llm.requests().last().unwrap().body["messages"].to_string();
    assert!(told.contains("nobody can approve"), "{told}");
}

/// A reminder's run cannot add reminders: it is not offered `add_reminder`, and a call to it
/// is refused by the toolset (a reminder that added reminders due at once would feed itself
/// without end). The chat's own turns still have it.
#[tokio::test(flavor = "multi_thread")]
async fn a_reminders_run_cannot_add_reminders() {
    // Readable inside the server's sandbox.
    let fixture = std::path::PathBuf::from(env!("CARGO_BIN_EXE_mcp-fixture"));
    let add = |id: &str| {
        tool_calls(&[(
            id,
            "add_reminder",
            &json!({"message": "again", "in_secs": 1}).to_string(),
        )])
    };
    let served = Served::start(
        vec![
            add("r1"),
            text("I will remind you."),
            add("r2"),
            text("Could not add another."),
        ],
        &format!(
            "tools = [\"add_reminder\", \"list_reminders\"]\nreadable_roots = [{:?}]\n[agents.a.mcp.fx]\ncommand = {fixture:?}\ntrusted = true\ntier = \"read-only\"\n",
            fixture.parent().unwrap()
        ),
        "",
    )
    .await;
    served.say(ADMIN, "remind me in a second");
    served.wait_text(ADMIN, "I will remind you.").await;
    served.wait_text(ADMIN, "Could not add another.").await;
    let requests = served.llm.requests();
    let offered = |i: usize| -> Vec<String> {
        requests[i].body["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert!(
        offered(0).contains(&"add_reminder".to_string()),
        "{:?}",
        offered(0)
    );
    // The MCP servers' tools join without bringing `add_reminder` back.
    let in_reminder = offered(2);
    assert!(
        !in_reminder.contains(&"add_reminder".to_string())
            && in_reminder.contains(&"list_reminders".to_string())
            && in_reminder.contains(&"mcp_fx_echo".to_string()),
        "the reminder's run: {in_reminder:?}"
    );
    let told = requests[3].body["messages"].to_string();
    assert!(
        told.contains("`add_reminder` is not a tool of agent a; nothing ran"),
        "{told}"
    );
}

/// A kill after a reminder was claimed and before its run was recorded: the restarted process
/// delivers it again, once (a second restart does not deliver it a third time).
#[tokio::test(flavor = "multi_thread")]
async fn a_reminder_claimed_before_a_kill_is_delivered_after_the_restart_once() {
    use tollgate::reminders::{Reminder, Reminders};
    let mut served =
        Served::stopped_after_one_answer(vec![text("Time to stretch!"), text("Hi again.")]).await;
    {
        let store =
            std::sync::Arc::new(tollgate::store::open_dir(&served.path("store"), 8).unwrap());
        let reminders = Reminders::new(store);
        reminders
            .add(&Reminder {
                id: "r7".into(),
                session: format!("telegram:{USER}"),
                agent: "a".into(),
                message: "stretch your legs".into(),
                due: 100,
                created: "then".into(),
                fired: false,
            })
            .unwrap();
        // Claimed, as the scheduler claims it; the kill comes before its run is recorded.
        assert_eq!(reminders.take_due(100, |_| true).unwrap().len(), 1);
    }
    served.spawn();
    served.wait_text(USER, "Time to stretch!").await;
    let fired = served.llm.requests()[1].body["messages"].to_string();
    assert!(fired.contains("stretch your legs"), "{fired}");
    assert!(
        served.log().contains("delivering reminder r7"),
        "{}",
        served.log()
    );
    served.terminate();
    served.spawn();
    served.say(USER, "hi again");
    served.wait_text(USER, "Hi again.").await;
    let stretched = served
        .telegram
        .texts_to(USER)
        .iter()
        .filter(|t| t.contains("Time to stretch!"))
        .count();
    assert_eq!(stretched, 1, "{:?}", served.telegram.texts_to(USER));
    assert_eq!(served.llm.requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn new_while_a_tool_runs_leaves_a_transcript_the_provider_accepts() {
    let served = Served::start(
        vec![
            tool_calls(&[(
                "c1",
                "execute_command",
                &json!({"command": "touch started && sleep 30"}).to_string(),
            )]),
            text("First answer."),
            text("Second answer."),
        ],
        "tools = [\"execute_command\"]\napproval = \"high-risk\"\n",
        "",
    )
    .await;
    served.llm.reject_unpaired_tool_messages();
    served.say(USER, "run the slow thing");
    // The tool is running once its first command has left its mark.
    let started = served.path("ws/telegram_10/started");
    served
        .telegram
        .wait_for(WAIT, "the command to start", |_| {
            started.exists().then_some(())
        })
        .await;
    let before = served.llm.requests().len();
    served.say(USER, "/new");
    served.wait_text(USER, "Started a new conversation").await;
    served.say(USER, "hello again");
    served.wait_text(USER, "First answer.").await;
    served.say(USER, "and once more");
    served.wait_text(USER, "Second answer.").await;
    let after = roles_after(&served, before);
    assert!(!after.is_empty());
    for roles in &after {
        assert!(
            !roles.iter().any(|r| r == "tool" || r == "assistant") || roles.len() > 2,
            "{after:?}"
        );
    }
    // The first request after /new holds only the new conversation.
    assert_eq!(after[0], vec!["system", "user"], "{after:?}");
    assert!(
        !served
            .telegram
            .texts_to(USER)
            .iter()
            .any(|t| t.contains("run failed")),
        "{:?}",
        served.telegram.texts_to(USER)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_while_a_question_waits_stops_the_run() {
    let served = Served::start(vec![ask_colour(), text("Fresh start.")], "", "").await;
    served.say(USER, "ask me");
    let (card_id, card) = served.card(USER, 0).await;
    assert!(card["text"].as_str().unwrap().contains("Which colour?"));
    served.say(USER, "/stop");
    served
        .wait_text(USER, "Stopped: the run was cancelled")
        .await;
    // The question's card is withdrawn, its buttons gone.
    let edit = served.card_edit(card_id).await;
    assert!(
        edit.get("reply_markup")
            .is_none_or(|m| m["inline_keyboard"].as_array().is_none_or(Vec::is_empty))
    );
    served.say(USER, "something else");
    served.wait_text(USER, "Fresh start.").await;
    let told = served.llm.requests().last().unwrap().body["messages"].to_string();
    assert!(
        !told.contains("\"/stop\""),
        "/stop was not the question's answer: {told}"
    );
    // A press on the withdrawn card is answered and reaches nothing.
    let asked = served.llm.requests().len();
    served
        .telegram
        .push_press(USER, USER, card_id, &button(&card, "blue"));
    served.press_answer("").await;
    assert_eq!(served.llm.requests().len(), asked);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_strangers_writes_a_bounded_audit() {
    let served = Served::start(vec![text("Hello, Ann.")], "", "").await;
    let strangers = 300;
    for n in 0..strangers {
        let stranger = 5_000 + n;
        served
            .telegram
            .push_message(user_message(stranger, "private", stranger, "let me in"));
    }
    served.say(USER, "hello");
    served.wait_text(USER, "Hello, Ann.").await;
    // The budget's last entry says that the rest are only counted: wait for it.
    let audit = served
        .telegram
        .wait_for(WAIT, "the refusal budget's note", |_| {
            let out = served.tollgate(&["audit"]);
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.contains("refusal budget reached").then_some(text)
        })
        .await;
    let written = audit.matches("access_denied").count();
    assert!(
        (1..=30).contains(&written),
        "{written} refusals written for {strangers} strangers"
    );
    assert_eq!(
        served.llm.requests().len(),
        1,
        "no stranger reached the model"
    );
    for n in [0, strangers - 1] {
        assert!(served.telegram.texts_to(5_000 + n).is_empty());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mention_of_another_bot_is_not_a_mention_of_this_one() {
    let served = Served::start(vec![text("Here.")], "", "require_mention = true\n").await;
    served.telegram.push_message(user_message(
        GROUP,
        "supergroup",
        USER,
        "@toll_bot2 are you there?",
    ));
    served.telegram.push_message(user_message(
        GROUP,
        "supergroup",
        USER,
        "@toll_bot are you there?",
    ));
    served.wait_text(GROUP, "Here.").await;
    let requests = served.llm.requests();
    assert_eq!(requests.len(), 1);
    let asked: Value = requests[0].body["messages"].clone();
    assert!(asked.to_string().contains("are you there?"));
    assert!(!asked.to_string().contains("toll_bot2"), "{asked}");
}

/// With a session per member in groups, an admin's `/mode` changes the admin's own session
/// there, and says so: another member's session keeps its mode.
#[tokio::test(flavor = "multi_thread")]
async fn a_dial_set_in_a_group_of_per_member_sessions_says_whose_it_is() {
    let served = Served::start(vec![], "", "group_sessions_per_user = true\n").await;
    served.telegram.push_message(user_message(
        GROUP,
        "supergroup",
        ADMIN,
        "/mode@toll_bot always",
    ));
    let reply = served.wait_text(GROUP, "is now").await;
    assert!(
        reply.contains("Approval mode of your own session in this chat is now `always` (each member here has a session of their own; theirs are unchanged)"),
        "{reply}"
    );
    served
        .telegram
        .push_message(user_message(GROUP, "supergroup", USER, "/status@toll_bot"));
    let status = served.wait_text(GROUP, &format!(":{USER}`")).await;
    assert!(status.contains("Mode `low-risk`"), "{status}");
    // In a private chat the chat is the session.
    served.say(ADMIN, "/mode always");
    served
        .wait_text(ADMIN, "Approval mode of this chat is now `always`")
        .await;
}
