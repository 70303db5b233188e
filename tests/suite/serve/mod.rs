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
/// Further users allowed in private chats, for tests with many sessions at once.
const CROWD: std::ops::RangeInclusive<i64> = 201..=209;

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

    /// A served tollgate stopped (SIGTERM) after answering "hi" with "Hello.": its store holds
    /// the session and where its chat is. `later` is what the model says after that.
    pub async fn stopped_after_one_answer(later: Vec<Reply>) -> Served {
        let mut script = vec![text("Hello.")];
        script.extend(later);
        let mut served = Served::start(script, "", "").await;
        served.say(USER, "hi");
        served.wait_text(USER, "Hello.").await;
        served.terminate();
        served
    }

    /// Waits for the `n`th start to be polling.
    pub async fn ready(&self, n: usize) {
        self.telegram.polling(WAIT, n).await;
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
        // A test that names the agent's tools replaces the default three.
        let tools = if agent_extra.contains("tools =") {
            ""
        } else {
            "tools = [\"read_file\", \"write_file\", \"ask_user_question\"]\n"
        };
        let config = format!(
            "[store]\npath = \"store\"\ncache_capacity_mb = 8\n[providers.p]\nkind = \"openai\"\nbase_url = \"{}\"\nmax_retries = 1\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\n{tools}workspace = \"ws\"\n{agent_extra}\n[telegram]\napi_url = \"{}\"\nallowed_users = [{USER}, 11, {crowd}]\nallowed_chats = [{GROUP}]\nadmins = [{ADMIN}]\n{quiet}{telegram_extra}\n",
            llm.url,
            telegram.url,
            crowd = CROWD.map(|u| u.to_string()).collect::<Vec<_>>().join(", ")
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
        self.spawn_after(0);
    }

    /// Starts the service with its approval clock `secs` ahead of the real one, as if it had
    /// been down that long: deadlines pass without a wall-clock wait (the `test-support` build
    /// honours the offset).
    pub fn spawn_after(&mut self, secs: u64) {
        self.spawn_with(&[(tollgate::clock::TEST_CLOCK_OFFSET_ENV, secs.to_string())]);
    }

    /// Starts the service with extra environment (a test clock offset, a failpoint).
    pub fn spawn_with(&mut self, env: &[(&str, String)]) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("serve.log"))
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .args(["serve", "--config", "tollgate.toml"])
            .current_dir(self.dir.path())
            .env("TELEGRAM_BOT_TOKEN", TOKEN)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    /// SIGTERM, as an operator stops it, and waits for it to exit.
    pub fn terminate(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: signalling our own child process.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            child.wait().unwrap();
        }
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

    /// The answer to a press that says `needle` (waiting for it).
    pub async fn press_answer(&self, needle: &str) -> Value {
        self.telegram
            .wait_for(WAIT, needle, |t| {
                t.calls("AnswerCallbackQuery")
                    .into_iter()
                    .find(|b| b["text"].as_str().unwrap_or("").contains(needle))
            })
            .await
    }

    /// Waits until the service has recorded where card `card_id` went: the record comes just
    /// after the send the fake sees, and a press counts only on a card the service knows it
    /// sent — a stop in between leaves a card shown that nothing answers or edits. A test that
    /// stops the service with a card showing waits for this first. The probe is an admin's
    /// press of a choice the card does not offer: refused with "Answer on the card itself"
    /// before the record, with "no longer valid" after, and never an answer.
    pub async fn card_recorded(&self, chat: i64, card_id: i64, card: &Value) {
        let approve = button(card, "Approve");
        let token = approve.strip_suffix(":approve").unwrap();
        let offered = card["reply_markup"].to_string();
        let probe = ["always-command", "always-tool"]
            .iter()
            .map(|choice| format!("{token}:{choice}"))
            .find(|data| !offered.contains(&format!("\"{data}\"")))
            .unwrap_or_else(|| panic!("no choice left to probe {card}"));
        let start = std::time::Instant::now();
        loop {
            let id = format!(
                "cb{}",
                self.telegram.push_press(chat, ADMIN, card_id, &probe)
            );
            let answer = self
                .telegram
                .wait_for(WAIT, "the probe's answer", |t| {
                    t.calls("AnswerCallbackQuery")
                        .into_iter()
                        .find(|b| b["callback_query_id"] == id.as_str())
                })
                .await;
            let text = answer["text"].as_str().unwrap_or_default();
            if text.contains("no longer valid") {
                return;
            }
            assert!(text.contains("Answer on the card itself"), "{answer}");
            assert!(start.elapsed() < WAIT, "card {card_id} was never recorded");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The edit of card `card_id` (waiting for it).
    pub async fn card_edit(&self, card_id: i64) -> Value {
        self.telegram
            .wait_for(WAIT, "the card's edit", |t| {
                t.calls("EditMessageText")
                    .into_iter()
                    .find(|e| e["message_id"].as_i64() == Some(card_id))
            })
            .await
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

/// One reply asking the user a question: "Which colour?", red or blue (call `q1`).
fn ask_colour() -> Reply {
    tool_calls(&[(
        "q1",
        "ask_user_question",
        &json!({"question": "Which colour?", "choices": ["red", "blue"]}).to_string(),
    )])
}

/// One reply asking for two writes: `w1` writes "A" to a.txt, `w2` "B" to b.txt (two cards in
/// one chat: an "Approve all" row).
fn write_both() -> Reply {
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
    ])
}

mod allocator;
mod approvals;
mod chat;
mod concurrency;
mod crash;
mod durability;
mod hardening;
mod logs;
mod media;
pub mod metrics;
mod presses;
mod runtime;
