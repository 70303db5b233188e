//! The runtime behind the `Bridge` seam, in process, with two bridges sharing one store: the
//! real Telegram bridge (teloxide against the fake Bot API) and an in-test bridge that says it
//! is Discord. Each "process" is a thread with its own async runtime: stopping it drops every
//! task it started, as an exit would, while the store lives on for the next start.

use super::fakes::bridge::{Recorder, Sent, TestBridge};
use super::fakes::llm::{FakeLlm, Reply, text, tool_calls};
use super::fakes::telegram::{FakeTelegram, user_message};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tollgate::approvals::PendingApprovals;
use tollgate::config::{self, Config};
use tollgate::events::StoreEvents;
use tollgate::store::{MemoryStore, Store};
use tollgate_surface::{Bridge, CardOutcome, CardRef, CardView, Platform};
use tollgate_telegram::TelegramBridge;
use tollgate_telegram::bot::TelegramBot;

const WAIT: Duration = Duration::from_secs(20);
/// The admin's id on both platforms: the same number, two different people.
const ADMIN: i64 = 1;
const TELEGRAM_USER: i64 = 10;
const DISCORD_USER: i64 = 510;

fn write_call(id: &str, path: &str, content: &str) -> Reply {
    tool_calls(&[(
        id,
        "write_file",
        &json!({"path": path, "content": content}).to_string(),
    )])
}

fn config(dir: &Path, telegram: &str, llm: &str) -> Arc<Config> {
    let quiet = "progress_interval_secs = 0\ntyping = false";
    let text = format!(
        "[store]\npath = \"{dir}/store\"\n[providers.p]\nkind = \"openai\"\nbase_url = \"{llm}\"\nmax_retries = 1\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\ntools = [\"write_file\"]\nworkspace = \"{dir}/ws\"\n[telegram]\napi_url = \"{telegram}\"\nallowed_users = [{TELEGRAM_USER}]\nadmins = [{ADMIN}]\n{quiet}\n[discord]\nallowed_users = [{DISCORD_USER}]\nadmins = [{ADMIN}]\napprovals_to = \"admins\"\n{quiet}\n",
        dir = dir.display()
    );
    Arc::new(config::load_with_env(None, Some(&text), HashMap::new()).unwrap())
}

/// One run of the runtime, on its own thread and async runtime.
struct Process {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Process {
    fn start(
        config: Arc<Config>,
        store: Arc<dyn Store>,
        telegram: &str,
        recorder: Arc<Recorder>,
    ) -> Process {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let telegram = telegram.to_string();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let bot = TelegramBot::connect("123:SECRET", &telegram).await.unwrap();
                let bridges: Vec<Arc<dyn Bridge>> = vec![
                    Arc::new(TelegramBridge::new(bot)),
                    Arc::new(TestBridge { recorder }),
                ];
                let notify = Arc::new(tokio::sync::Notify::new());
                let shutdown = async move {
                    let _ = stopped.await;
                };
                tollgate::serve::run(config, store, bridges, notify, shutdown)
                    .await
                    .unwrap();
            });
            // Every task this "process" started ends here, as with an exit.
            runtime.shutdown_background();
        });
        Process {
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Waits for the `n`th start to be polling Telegram.
async fn polling(telegram: &FakeTelegram, n: usize) {
    telegram.polling(WAIT, n).await;
}

/// The first Telegram card sent to `chat`: its message id and body.
async fn telegram_card(telegram: &FakeTelegram, chat: i64) -> (i64, Value) {
    let card = telegram
        .wait_for(WAIT, "a Telegram card", |t| {
            t.calls("SendMessage").into_iter().find(|b| {
                b["chat_id"].as_i64() == Some(chat)
                    && b.get("reply_markup").is_some()
                    && b.get("_id").is_some()
            })
        })
        .await;
    (card["_id"].as_i64().unwrap(), card)
}

/// The callback data of a Telegram card's button whose label holds `label`.
fn telegram_button(card: &Value, label: &str) -> String {
    card["reply_markup"]["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap().iter())
        .find(|b| b["text"].as_str().unwrap().contains(label))
        .unwrap()["callback_data"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A card the in-test bridge was asked to post, and the token of its button holding `label`.
async fn test_card(recorder: &Recorder, label: &str) -> (CardRef, String) {
    recorder
        .wait_for("a card on the in-test bridge", |sent| {
            sent.iter().find_map(|s| match s {
                Sent::Card {
                    at,
                    view: view @ CardView::Approval(_),
                } => view
                    .rows()
                    .iter()
                    .flatten()
                    .find(|b| b.label.contains(label))
                    .map(|b| (at.clone(), b.token.clone())),
                _ => None,
            })
        })
        .await
}

fn rejected_presses(store: &dyn Store, session: &str) -> Vec<tollgate::events::StoredEvent> {
    StoreEvents::read(store, Some(session), None)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "press_rejected")
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_bridges_one_store_each_card_recovered_and_settled_through_its_own_bridge() {
    let dir = tempfile::tempdir().unwrap();
    let telegram = FakeTelegram::start().await;
    let llm = FakeLlm::start(vec![
        write_call("t1", "t.txt", "from telegram"),
        write_call("d1", "d.txt", "from discord"),
    ])
    .await;
    let config = config(dir.path(), &telegram.url, &llm.url);
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let recorder = Arc::new(Recorder::default());
    // The in-test platform is down when its card is first sent (to the admin's DM, then to the
    // chat as the fallback): only the record exists.
    recorder.refuse_posts(2);

    let mut first = Process::start(
        config.clone(),
        store.clone(),
        &telegram.url,
        recorder.clone(),
    );
    polling(&telegram, 1).await;
    telegram.push_message(user_message(
        TELEGRAM_USER,
        "private",
        TELEGRAM_USER,
        "write t.txt",
    ));
    let (telegram_card_id, card) = telegram_card(&telegram, TELEGRAM_USER).await;
    let telegram_approve = telegram_button(&card, "Approve");
    recorder.say(DISCORD_USER, "write d.txt");
    let refused_in: Vec<i64> = recorder
        .wait_for("both refused posts", |sent| {
            let chats: Vec<i64> = sent
                .iter()
                .filter_map(|s| match s {
                    Sent::RefusedCard { chat } => Some(chat.id),
                    _ => None,
                })
                .collect();
            (chats.len() == 2).then_some(chats)
        })
        .await;
    assert_eq!(
        refused_in,
        [ADMIN, DISCORD_USER],
        "the admin's DM, then the chat"
    );
    let menu = recorder
        .wait_for("the command menu", |sent| {
            sent.iter().find_map(|s| match s {
                Sent::Commands(names) => Some(names.clone()),
                _ => None,
            })
        })
        .await;
    assert!(menu.iter().any(|n| n == "allowlist"), "{menu:?}");
    first.stop();
    let approvals = PendingApprovals::new(store.clone());
    assert_eq!(approvals.waiting().unwrap().len(), 2, "both cards wait");

    // The restart posts the card that never went out, through its own platform's bridge.
    let _second = Process::start(config, store.clone(), &telegram.url, recorder.clone());
    polling(&telegram, 2).await;
    let (discord_card, discord_approve) = test_card(&recorder, "Approve").await;
    assert_eq!(discord_card.chat.platform, Platform::Discord);
    assert_eq!(
        discord_card.chat.id, ADMIN,
        "in the admin's DM, as approvals_to says"
    );
    // Telegram was not asked to show it: its only card is the first one.
    let telegram_cards = telegram
        .calls("SendMessage")
        .into_iter()
        .filter(|b| b.get("reply_markup").is_some())
        .count();
    assert_eq!(telegram_cards, 1);

    // An admin of one bridge cannot answer the other's card, though the number is the same.
    telegram.push_press(ADMIN, ADMIN, 4242, &discord_approve);
    telegram
        .wait_for(WAIT, "the refusal on Telegram", |t| {
            t.calls("AnswerCallbackQuery").into_iter().find(|b| {
                b["text"]
                    .as_str()
                    .unwrap_or("")
                    .contains("Only admins can answer this")
            })
        })
        .await;
    let handle = recorder.press(ADMIN, 77, &telegram_approve);
    let (answer, private) = recorder.press_answer(&handle).await;
    assert!(answer.contains("Only admins can answer this"), "{answer}");
    assert!(private);
    assert_eq!(
        approvals.waiting().unwrap().len(),
        2,
        "nothing was answered"
    );
    let refused = rejected_presses(&*store, &format!("discord:{DISCORD_USER}"));
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].fields["presser"], "telegram:1");
    let refused = rejected_presses(&*store, &format!("telegram:{TELEGRAM_USER}"));
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].fields["presser"], "discord:1");

    // Each admin answers their own platform's card; each card is settled where it lives.
    llm.push(text("Written."));
    llm.push(text("Written."));
    telegram.push_press(TELEGRAM_USER, ADMIN, telegram_card_id, &telegram_approve);
    let edit = telegram
        .wait_for(WAIT, "the Telegram card's edit", |t| {
            t.calls("EditMessageText")
                .into_iter()
                .find(|e| e["message_id"].as_i64() == Some(telegram_card_id))
        })
        .await;
    assert!(
        edit["text"].as_str().unwrap().contains("Approved"),
        "{edit}"
    );
    let handle = recorder.press(ADMIN, discord_card.message_id, &discord_approve);
    assert_eq!(recorder.press_answer(&handle).await.0, "Approved.");
    recorder
        .wait_for("the in-test card settled", |sent| {
            sent.iter().find_map(|s| match s {
                Sent::Settled {
                    at,
                    outcome: CardOutcome::Approved { by },
                } if *at == discord_card => Some(by.clone()),
                _ => None,
            })
        })
        .await;
    answered(&recorder, "Written.").await;
    telegram
        .wait_for(WAIT, "the Telegram chat's answer", |t| {
            t.texts_to(TELEGRAM_USER)
                .iter()
                .any(|m| m.contains("Written."))
                .then_some(())
        })
        .await;
    assert_eq!(
        find_file(&dir.path().join("ws"), "t.txt").unwrap(),
        "from telegram"
    );
    assert_eq!(
        find_file(&dir.path().join("ws"), "d.txt").unwrap(),
        "from discord"
    );
    // Commands work the same way on the second platform.
    recorder.say(DISCORD_USER, "/status");
    let status = recorder
        .wait_for("the status notice", |sent| {
            sent.iter().find_map(|s| match s {
                Sent::Notice { chat, text }
                    if chat.id == DISCORD_USER && text.contains("session") =>
                {
                    Some(text.clone())
                }
                _ => None,
            })
        })
        .await;
    assert!(
        status.contains(&format!("session `discord:{DISCORD_USER}`")),
        "{status}"
    );
    // Neither platform was asked to touch the other's messages.
    for sent in recorder.sent() {
        if let Sent::Settled { at, .. } | Sent::Card { at, .. } = sent {
            assert_eq!(at.chat.platform, Platform::Discord);
        }
    }
    for edit in telegram.calls("EditMessageText") {
        assert_ne!(edit["chat_id"].as_i64(), Some(DISCORD_USER), "{edit}");
    }
}

/// Waits for the in-test bridge's chat to be answered `answer`.
async fn answered(recorder: &Recorder, answer: &str) {
    recorder
        .wait_for(&format!("the answer {answer:?}"), |sent| {
            sent.iter()
                .any(|s| matches!(s, Sent::Answer { chat, text } if chat.id == DISCORD_USER && text == answer))
                .then_some(())
        })
        .await;
}

/// The contents of the first file named `name` under `root`.
fn find_file(root: &Path, name: &str) -> std::io::Result<String> {
    for entry in std::fs::read_dir(root)? {
        let path = entry?.path();
        if path.is_dir() {
            if let Ok(found) = find_file(&path, name) {
                return Ok(found);
            }
        } else if path.file_name().is_some_and(|n| n == name) {
            return std::fs::read_to_string(path);
        }
    }
    Err(std::io::Error::from(std::io::ErrorKind::NotFound))
}

/// The runtime over an [`Observed`](super::observed::Observed) store, started and past its
/// start-up reads (its command menu registered), answering with `replies`.
struct ObservedServe {
    // First: the runtime stops before the fakes it talks to go.
    _process: Process,
    store: Arc<super::observed::Observed>,
    recorder: Arc<Recorder>,
    llm: FakeLlm,
    _telegram: FakeTelegram,
    _dir: tempfile::TempDir,
}

impl ObservedServe {
    async fn start(replies: Vec<Reply>) -> ObservedServe {
        let dir = tempfile::tempdir().unwrap();
        let telegram = FakeTelegram::start().await;
        let llm = FakeLlm::start(replies).await;
        let config = config(dir.path(), &telegram.url, &llm.url);
        let store = Arc::new(super::observed::Observed::default());
        let recorder = Arc::new(Recorder::default());
        let process = Process::start(config, store.clone(), &telegram.url, recorder.clone());
        polling(&telegram, 1).await;
        recorder
            .wait_for("the command menu", |sent| {
                sent.iter()
                    .any(|s| matches!(s, Sent::Commands(_)))
                    .then_some(())
            })
            .await;
        ObservedServe {
            _process: process,
            store,
            recorder,
            llm,
            _telegram: telegram,
            _dir: dir,
        }
    }

    /// Reads of `tree` made while the in-test chat says `said` and is answered `answer`.
    async fn lookups_of_a_turn(&self, tree: &str, said: &str, answer: &str) -> usize {
        self.store.take_lookups(tree);
        self.recorder.say(DISCORD_USER, said);
        answered(&self.recorder, answer).await;
        self.store.take_lookups(tree)
    }
}

/// A new chat's first message reads its session's date once: the worker's start dates the
/// session through the store its runner dates through, so the turn finds the date in that
/// store's slot. Before, the start dated it through the service's shared store and the turn
/// read it again (a read stepped aside from the async worker, at every first message).
#[tokio::test(flavor = "multi_thread")]
async fn a_new_chats_first_message_reads_its_sessions_date_once() {
    let served = ObservedServe::start(vec![text("first answer")]).await;
    assert_eq!(
        served
            .lookups_of_a_turn("session_activity", "hello", "first answer")
            .await,
        1,
        "the session's date is read once, at its worker's start"
    );
}

/// A repeat turn reads no transcript from the store: the session worker's store keeps what it
/// last read or wrote of its session's transcript (everything that writes it while the worker
/// lives goes through that store, or has it forget), and the turn still sees the whole
/// conversation. Before, every turn read it (a store read stepped aside from the async worker,
/// and its JSON decoded).
#[tokio::test(flavor = "multi_thread")]
async fn a_repeat_turn_reads_no_transcript_from_the_store() {
    let served = ObservedServe::start(vec![text("first answer"), text("second answer")]).await;
    served
        .lookups_of_a_turn("transcripts", "hello", "first answer")
        .await;
    assert_eq!(
        served
            .lookups_of_a_turn("transcripts", "again", "second answer")
            .await,
        0,
        "the repeat turn's transcript came from its worker"
    );
    let second = served.llm.requests()[1].body["messages"].to_string();
    for said in ["hello", "first answer", "again"] {
        assert!(second.contains(said), "{said} missing from {second}");
    }
}
