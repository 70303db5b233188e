//! `tollgate serve` end to end: the real binary, the real teloxide client, a fake Bot API and a
//! scripted model on loopback. Each test drives chat updates and button presses and asserts on
//! what the fake Bot API was sent, what ran, and what the model was told.

use super::fakes::llm::{FakeLlm, Reply, text, tool_calls};
use super::fakes::telegram::{FakeTelegram, user_message};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const TOKEN: &str = "123456:SECRET-bot-token-value";
const WAIT: Duration = Duration::from_secs(20);
const USER: i64 = 10;
const ADMIN: i64 = 1;
const GROUP: i64 = -100;

/// A served tollgate: its directory, process and fakes.
pub struct Served {
    pub dir: tempfile::TempDir,
    pub child: Option<Child>,
    pub telegram: FakeTelegram,
    pub llm: FakeLlm,
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Served {
    /// Starts `tollgate serve` with extra lines in the agent's and the bridge's sections.
    pub async fn start(script: Vec<Reply>, agent_extra: &str, telegram_extra: &str) -> Served {
        let mut served = Served::new(script, agent_extra, telegram_extra).await;
        served.spawn();
        served.ready(1).await;
        served
    }

    /// Waits for the `n`th start to be polling.
    pub async fn ready(&self, n: usize) {
        self.telegram
            .wait_for(WAIT, "polling", |t| {
                let methods = t.methods();
                let starts = methods.iter().filter(|m| *m == "GetMe").count();
                let polling = methods
                    .iter()
                    .rev()
                    .take_while(|m| *m != "GetMe")
                    .any(|m| m == "GetUpdates");
                (starts >= n && polling).then_some(())
            })
            .await;
    }

    /// The fakes and the config, not started yet.
    pub async fn new(script: Vec<Reply>, agent_extra: &str, telegram_extra: &str) -> Served {
        let telegram = FakeTelegram::start().await;
        let llm = FakeLlm::start(script).await;
        let dir = tempfile::tempdir().unwrap();
        // Typing and progress off unless a test turns them on: they would interleave with the
        // messages the tests look for.
        let quiet = if telegram_extra.contains("progress_interval_secs") {
            ""
        } else {
            "progress_interval_secs = 0\ntyping = false\n"
        };
        let config = format!(
            "[store]\npath = \"store\"\ncache_capacity_mb = 8\n[providers.p]\nkind = \"openai\"\nbase_url = \"{}\"\nmax_retries = 1\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\ntools = [\"read_file\", \"write_file\", \"ask_user_question\"]\nworkspace = \"ws\"\n{agent_extra}\n[telegram]\napi_url = \"{}\"\nallowed_users = [{USER}, 11]\nallowed_chats = [{GROUP}]\nadmins = [{ADMIN}]\n{quiet}{telegram_extra}\n",
            llm.url, telegram.url
        );
        std::fs::write(dir.path().join("tollgate.toml"), &config).unwrap();
        Served {
            dir,
            child: None,
            telegram,
            llm,
        }
    }

    pub fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("serve.log"))
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .args(["serve", "--config", "tollgate.toml"])
            .current_dir(self.dir.path())
            .env("TELEGRAM_BOT_TOKEN", TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    /// kill -9.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("serve.log")).unwrap_or_default()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// A private message from `from`.
    pub fn say(&self, from: i64, text: &str) {
        self.telegram
            .push_message(user_message(from, "private", from, text));
    }

    /// The next card (a `SendMessage` with an inline keyboard) to `chat`, after `skip` others:
    /// its message id and body.
    pub async fn card(&self, chat: i64, skip: usize) -> (i64, Value) {
        let card = self
            .telegram
            .wait_for(WAIT, "a card", |t| {
                let cards: Vec<Value> = t
                    .calls("SendMessage")
                    .into_iter()
                    .filter(|b| {
                        b["chat_id"].as_i64() == Some(chat)
                            && b.get("reply_markup").is_some()
                            && b.get("_id").is_some()
                    })
                    .collect();
                cards.get(skip).cloned()
            })
            .await;
        (card["_id"].as_i64().unwrap(), card)
    }

    pub async fn wait_text(&self, chat: i64, needle: &str) -> String {
        self.telegram
            .wait_for(WAIT, needle, |t| {
                t.texts_to(chat).into_iter().find(|m| m.contains(needle))
            })
            .await
    }

    pub fn tollgate(&self, args: &[&str]) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .args(args)
            .args(["--config", "tollgate.toml"])
            .current_dir(self.dir.path())
            .output()
            .unwrap()
    }
}

/// The callback data of the button whose label starts with `label`.
pub fn button(card: &Value, label: &str) -> String {
    card["reply_markup"]["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap().iter())
        .find(|b| b["text"].as_str().unwrap().contains(label))
        .unwrap_or_else(|| panic!("no button {label} on {card}"))["callback_data"]
        .as_str()
        .unwrap()
        .to_string()
}

fn write_call(id: &str, path: &str, content: &str) -> Reply {
    tool_calls(&[(
        id,
        "write_file",
        &json!({"path": path, "content": content}).to_string(),
    )])
}

#[tokio::test(flavor = "multi_thread")]
async fn strangers_are_ignored_and_users_answered() {
    let served = Served::start(vec![text("Hello, Ann.")], "", "").await;
    let commands = served.telegram.calls("SetMyCommands");
    let names: Vec<&str> = commands[0]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["command"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "help",
            "new",
            "stop",
            "status",
            "mode",
            "sandbox",
            "allowlist"
        ]
    );

    served.say(77, "hello?");
    served.say(USER, "hello");
    served.wait_text(USER, "Hello, Ann.").await;
    assert!(
        served.telegram.texts_to(77).is_empty(),
        "a stranger gets nothing"
    );
    assert_eq!(
        served.llm.requests().len(),
        1,
        "the stranger's message never reached the model"
    );

    // While serve holds the store, `audit` reaches it over the control socket.
    let audit = served.tollgate(&["audit"]);
    let out = String::from_utf8_lossy(&audit.stdout);
    assert!(
        audit.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&audit.stderr)
    );
    assert!(
        out.contains("access_denied") && out.contains("telegram:77"),
        "{out}"
    );
    assert!(out.contains("run_completed"), "{out}");
    assert!(
        !served.log().contains("SECRET-bot-token"),
        "{}",
        served.log()
    );
}

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
    assert!(html.contains("the whole text is in the file"), "{html}");
    let document = served
        .telegram
        .wait_for(WAIT, "the details file", |t| {
            t.calls("SendDocument").first().cloned()
        })
        .await;
    let document = document.as_str().unwrap_or_default().to_string();
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
    served
        .telegram
        .wait_for(WAIT, "the alert", |t| {
            t.calls("AnswerCallbackQuery")
                .into_iter()
                .find(|b| b["text"].as_str().unwrap_or("").contains("Only admins"))
        })
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!written.exists(), "a non-admin press ran nothing");

    served.telegram.push_press(USER, ADMIN, card_id, &approve);
    served.wait_text(USER, "Written.").await;
    assert_eq!(std::fs::read_to_string(&written).unwrap(), content);
    let edits = served.telegram.calls("EditMessageText");
    let edit = edits
        .iter()
        .find(|e| e["message_id"].as_i64() == Some(card_id))
        .expect("the card was edited");
    assert!(
        edit["text"].as_str().unwrap().contains("Approved by User1"),
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
                    .contains("Already answered by User1")
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

#[tokio::test(flavor = "multi_thread")]
async fn a_card_nobody_answers_times_out_as_a_runtime_deny() {
    let served = Served::start(
        vec![write_call("w1", "late.txt", "x"), text("Understood.")],
        "approval_timeout_secs = 2",
        "",
    )
    .await;
    served.say(USER, "write late.txt");
    let (card_id, _) = served.card(USER, 0).await;
    served.wait_text(USER, "Understood.").await;
    let edit = served
        .telegram
        .calls("EditMessageText")
        .into_iter()
        .find(|e| e["message_id"].as_i64() == Some(card_id))
        .expect("the card was edited");
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
async fn stop_cancels_a_run_waiting_for_approval() {
    let served = Served::start(vec![write_call("w1", "never.txt", "x")], "", "").await;
    served.say(USER, "write never.txt");
    let (card_id, card) = served.card(USER, 0).await;
    served.say(USER, "/stop");
    served.wait_text(USER, "Stopped").await;
    served
        .telegram
        .wait_for(WAIT, "the withdrawn card", |t| {
            t.calls("EditMessageText")
                .into_iter()
                .find(|e| e["message_id"].as_i64() == Some(card_id))
        })
        .await;
    // A press after the stop runs nothing.
    served
        .telegram
        .push_press(USER, ADMIN, card_id, &button(&card, "Approve"));
    served
        .telegram
        .wait_for(WAIT, "the press answer", |t| {
            (!t.calls("AnswerCallbackQuery").is_empty()).then_some(())
        })
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!served.path("ws/telegram_10/never.txt").exists());
    assert_eq!(
        served.llm.requests().len(),
        1,
        "the model was not asked again"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pending_card_survives_a_restart_and_its_press_runs_the_call_once() {
    let mut served = Served::start(
        vec![
            write_call("w1", "after.txt", "restart-proof"),
            text("Done after restart."),
        ],
        "",
        "",
    )
    .await;
    served.say(USER, "write after.txt");
    let (card_id, card) = served.card(USER, 0).await;
    served.kill();
    let cards_before = served.telegram.calls("SendMessage").len();
    served.spawn();
    served.ready(2).await;
    served
        .telegram
        .push_press(USER, ADMIN, card_id, &button(&card, "Approve"));
    served.wait_text(USER, "Done after restart.").await;
    let written = served.path("ws/telegram_10/after.txt");
    assert_eq!(std::fs::read_to_string(written).unwrap(), "restart-proof");
    let new_cards = served.telegram.calls("SendMessage")[cards_before..]
        .iter()
        .filter(|b| b.get("reply_markup").is_some())
        .count();
    assert_eq!(new_cards, 0, "the old card is the one that answers");
    assert_eq!(served.llm.requests().len(), 2, "{}", served.log());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_answer_is_split_and_a_429_storm_loses_nothing() {
    let mut long = String::new();
    let mut i = 0;
    while long.len() < 10_000 {
        long.push_str(&format!("line {i} with <angle> & **bold** text\n"));
        i += 1;
    }
    let served = Served::start(vec![text(&long)], "", "").await;
    for _ in 0..3 {
        served.telegram.fail_next(
            "SendMessage",
            json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 1", "parameters": {"retry_after": 1}}),
        );
    }
    // And a slow Bot API: the first delivered message takes 1.5 s to be answered.
    served
        .telegram
        .delay_next("SendMessage", Duration::from_millis(1_500));
    served.say(USER, "tell me a lot");
    let last = format!("line {}", i - 1);
    served.wait_text(USER, &last).await;
    let refused = served
        .telegram
        .calls("SendMessage")
        .into_iter()
        .filter(|b| b.get("_refused").is_some())
        .count();
    assert_eq!(refused, 3);
    let delivered = served.telegram.texts_to(USER);
    assert!(delivered.len() >= 3, "{}", delivered.len());
    let unique: Vec<&String> = delivered.iter().collect();
    for message in &unique {
        assert!(message.chars().count() <= 4096);
        assert!(!message.contains("<angle>"));
    }
    let all: String = unique.iter().map(|s| s.as_str()).collect();
    for n in 0..i {
        assert_eq!(all.matches(&format!("line {n} ")).count(), 1, "line {n}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn groups_answer_mentions_only_and_two_cards_get_an_approve_all_row() {
    let served = Served::start(
        vec![
            tool_calls(&[
                (
                    "w1",
                    "write_file",
                    &json!({"path": "a.txt", "content": "A"}).to_string(),
                ),
                (
                    "w2",
                    "write_file",
                    &json!({"path": "b.txt", "content": "B"}).to_string(),
                ),
            ]),
            text("Both written."),
        ],
        "",
        "",
    )
    .await;
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
async fn questions_files_commands_and_the_leak_guard() {
    let served = Served::start(
        vec![
            tool_calls(&[(
                "q1",
                "ask_user_question",
                &json!({"question": "Which colour?", "choices": ["red", "blue"]}).to_string(),
            )]),
            text(&format!("You chose it. (token {TOKEN})")),
            text("Got the file."),
        ],
        "",
        "",
    )
    .await;
    served.say(USER, "ask me");
    let (card_id, card) = served.card(USER, 0).await;
    assert!(card["text"].as_str().unwrap().contains("Which colour?"));
    // Only the requester answers a question.
    served
        .telegram
        .push_press(USER, ADMIN, card_id, &button(&card, "blue"));
    served
        .telegram
        .push_press(USER, USER, card_id, &button(&card, "blue"));
    let answer = served.wait_text(USER, "You chose it.").await;
    assert!(!answer.contains("SECRET-bot-token"), "{answer}");
    let told = served.llm.requests()[1].body["messages"].to_string();
    assert!(told.contains("blue"), "{told}");

    // A document: downloaded into the session's workspace, named to the agent by path.
    served.telegram.add_file("F1", b"file body".to_vec());
    let mut message = user_message(USER, "private", USER, "");
    message.as_object_mut().unwrap().remove("text");
    message["caption"] = json!("read this");
    message["document"] = json!({"file_id": "F1", "file_unique_id": "U1", "file_size": 9, "file_name": "../../notes.txt"});
    served.telegram.push_message(message);
    served.wait_text(USER, "Got the file.").await;
    let saved = served.path("ws/telegram_10/attachments/notes.txt");
    assert_eq!(
        std::fs::read(saved).unwrap(),
        b"file body",
        "{:?}\n{}",
        served.telegram.texts_to(USER),
        served.log()
    );
    let told = served.llm.requests()[2].body["messages"].to_string();
    assert!(told.contains("attachments/notes.txt"), "{told}");

    // Admin-only commands refuse others; /status answers anyone admitted.
    served.say(USER, "/mode high-risk");
    served
        .wait_text(USER, "Only this bot's admins can use /mode")
        .await;
    served.say(USER, "/status");
    let status = served.wait_text(USER, "Mode `").await;
    assert!(
        status.contains("idle") && status.contains("sandbox"),
        "{status}"
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

#[tokio::test]
async fn serve_without_a_token_exits_2_and_names_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tollgate.toml"),
        "[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9\"\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\n[telegram]\nadmins = [1]\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args(["serve", "--config", "tollgate.toml"])
        .current_dir(dir.path())
        .env_remove("TELEGRAM_BOT_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("TELEGRAM_BOT_TOKEN"), "{err}");
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
    let second_edit = served
        .telegram
        .calls("EditMessageText")
        .into_iter()
        .find(|e| e["message_id"].as_i64() == Some(second_id))
        .expect("the other card was edited");
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
        out.contains("tool write_file") && out.contains("User1"),
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

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_keeps_a_card_pending_and_a_deadline_passed_while_down_is_a_timeout() {
    let mut served = Served::start(
        vec![
            write_call("w1", "never.txt", "x"),
            text("Nobody approved, so I stopped."),
        ],
        "approval_timeout_secs = 2",
        "",
    )
    .await;
    served.say(USER, "write never.txt");
    let (card_id, _) = served.card(USER, 0).await;
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
    tokio::time::sleep(Duration::from_secs(3)).await;
    served.spawn();
    served
        .wait_text(USER, "Nobody approved, so I stopped.")
        .await;
    let edit = served
        .telegram
        .calls("EditMessageText")
        .into_iter()
        .find(|e| e["message_id"].as_i64() == Some(card_id))
        .expect("the expired card was edited");
    assert!(
        edit["text"]
            .as_str()
            .unwrap()
            .contains("Nobody answered in time"),
        "{edit}"
    );
    assert!(!served.path("ws/telegram_10/never.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_card_never_sent_is_sent_and_a_press_on_a_gone_run_expires_it() {
    use std::sync::Arc;
    use tollgate::approvals::{
        ApprovalChoice, ApprovalToken, PendingApproval, PendingApprovals, PendingState,
    };
    use tollgate::store::SledStore;
    use tollgate_surface::{ApprovalCard, Button, ChatKind, ChatRef, Platform};
    let mut served = Served::new(vec![], "", "").await;
    let token = ApprovalToken::generate().unwrap();
    {
        let store = Arc::new(SledStore::open(&served.path("store"), 8).unwrap());
        let approvals = PendingApprovals::new(store.clone());
        let now = tollgate::agent::reminders::now_secs();
        approvals
            .create(&PendingApproval {
                token: token.to_string(),
                session: "telegram:10".into(),
                call_id: "c9".into(),
                agent: "a".into(),
                tool: "write_file".into(),
                posted: now,
                expires: now + 600,
                choices: vec![ApprovalChoice::Approve, ApprovalChoice::Deny],
                state: PendingState::Waiting,
                run: "a-run-that-is-gone".into(),
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
                    details: "write x.txt".into(),
                    rows: vec![vec![Button {
                        label: "Approve".into(),
                        token: token.button("approve"),
                    }]],
                }),
                posted_to: Vec::new(),
            })
            .unwrap();
    }
    served.spawn();
    served.ready(1).await;
    let (card_id, card) = served.card(USER, 0).await;
    assert!(card["text"].as_str().unwrap().contains("write x.txt"));
    served
        .telegram
        .push_press(USER, ADMIN, card_id, &button(&card, "Approve"));
    served
        .telegram
        .wait_for(WAIT, "the expired alert", |t| {
            t.calls("AnswerCallbackQuery")
                .into_iter()
                .find(|b| b["text"].as_str().unwrap_or("").contains("expired"))
        })
        .await;
    let edit = served
        .telegram
        .wait_for(WAIT, "the expired card", |t| {
            t.calls("EditMessageText")
                .into_iter()
                .find(|e| e["message_id"].as_i64() == Some(card_id))
        })
        .await;
    assert!(edit["text"].as_str().unwrap().contains("Expired"), "{edit}");
    assert_eq!(served.llm.requests().len(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn typing_and_a_progress_message_edited_at_most_every_interval() {
    let served = Served::start(
        vec![
            tool_calls(&[("r1", "read_file", r#"{"path":"missing.txt"}"#)]),
            Reply::Delayed(Duration::from_millis(3_500), Box::new(text("Slow answer."))),
        ],
        "",
        "progress_interval_secs = 1\ntyping = true",
    )
    .await;
    served.say(USER, "take your time");
    served.wait_text(USER, "Slow answer.").await;
    let typing = served.telegram.calls("SendChatAction");
    assert!(
        !typing.is_empty() && typing.iter().all(|b| b["action"] == "typing"),
        "{typing:?}"
    );
    let progress = served.wait_text(USER, "Working…").await;
    assert!(progress.contains("read_file"), "{progress}");
    let edits = served.telegram.timed_calls("EditMessageText");
    let mut shown = vec![progress];
    for pair in edits.windows(2) {
        assert!(
            pair[1].1 - pair[0].1 >= Duration::from_millis(900),
            "edits closer than the interval"
        );
    }
    for (edit, _) in &edits {
        let text = edit["text"].as_str().unwrap().to_string();
        assert_ne!(shown.last(), Some(&text), "an identical edit");
        shown.push(text);
    }
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

#[tokio::test]
async fn a_failed_connection_is_reported_without_the_token() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tollgate.toml"),
        "[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9\"\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\n[telegram]\napi_url = \"http://127.0.0.1:9\"\nadmins = [1]\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args(["serve", "--config", "tollgate.toml"])
        .current_dir(dir.path())
        .env("TELEGRAM_BOT_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("connecting to the Telegram Bot API"), "{err}");
    assert!(!err.contains("SECRET-bot-token"), "{err}");
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

#[tokio::test(flavor = "multi_thread")]
async fn a_full_queue_and_a_fast_sender_get_one_notice_each() {
    let served = Served::start(
        vec![
            Reply::Delayed(Duration::from_millis(1_500), Box::new(text("first answer"))),
            text("second answer"),
        ],
        "",
        "queue_cap = 1\nrate_limit_per_minute = 3",
    )
    .await;
    served.say(USER, "one");
    served
        .telegram
        .wait_for(WAIT, "the first model call", |t| {
            let _ = t;
            (!served.llm.requests().is_empty()).then_some(())
        })
        .await;
    for text in ["two", "three", "four", "five"] {
        served.say(USER, text);
    }
    served.wait_text(USER, "second answer").await;
    let texts = served.telegram.texts_to(USER);
    let busy = texts
        .iter()
        .filter(|t| t.contains("this one was dropped"))
        .count();
    let fast = texts
        .iter()
        .filter(|t| t.contains("faster than 3 a minute"))
        .count();
    assert_eq!((busy, fast), (1, 1), "{texts:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        served.llm.requests().len(),
        2,
        "three, four and five never reached the model"
    );
}
