//! The floors tollgate is measured against, each in a process of its own as a real bot runs
//! (tollgate's `serve` is one too): the bare teloxide echo bot, and the minimal LLM bot the
//! issue names — teloxide's `Dispatcher` with its defaults (long polling, each chat's updates
//! in order on a worker of its own, chats concurrently) and one shared reqwest client that
//! streams each message to the model and sends the reply. The benchmark binary runs them by
//! starting itself again with [`FLOOR`] set.
//!
//! Also kept, as a reference row: the floor used before 2026-12-02 — the same model call from
//! a hand-rolled poll loop inside the benchmark's own process, sharing its runtime with the
//! fakes (no process switch between bot and fakes, no `Dispatcher`).

use crate::common::ask_model;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use teloxide::payloads::GetUpdatesSetters;
use teloxide::prelude::*;
use teloxide::types::UpdateKind;

/// The variable that makes the benchmark binary run a floor bot instead (`echo` or `llm`).
const FLOOR: &str = "TOLLGATE_BENCH_FLOOR";
/// The fake Bot API's URL, for a floor bot.
const API: &str = "TOLLGATE_BENCH_API";
/// The fake model's URL, for the LLM floor.
const MODEL: &str = "TOLLGATE_BENCH_MODEL";

/// Which floor.
#[derive(Clone, Copy)]
pub enum Kind {
    Echo,
    Llm,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Echo => "echo",
            Kind::Llm => "llm",
        }
    }
}

/// A floor bot's process; killed when dropped.
pub struct Floor {
    child: Child,
}

impl Floor {
    /// Starts this binary again as the `kind` floor bot, polling `api` (and asking `model`).
    pub fn start(kind: Kind, api: &str, model: Option<&str>) -> Floor {
        let child = crate::common::dies_with_parent(Command::new(std::env::current_exe().unwrap()))
            .env(FLOOR, kind.name())
            .env(API, api)
            .env(MODEL, model.unwrap_or(""))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        Floor { child }
    }

    /// CPU time the bot's process has used so far.
    pub fn cpu_time(&self) -> Duration {
        crate::common::cpu_time_of(self.child.id())
    }
}

impl Drop for Floor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// If this process was started as a floor bot, runs it (until killed) and returns true.
pub fn run_if_asked() -> bool {
    let Ok(kind) = std::env::var(FLOOR) else {
        return false;
    };
    let api = reqwest::Url::parse(&std::env::var(API).unwrap()).unwrap();
    let model = std::env::var(MODEL).unwrap();
    // What `#[tokio::main]` builds: a worker thread per core.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        match kind.as_str() {
            "echo" => echo_bot(Bot::new("1:ECHO").set_api_url(api)).await,
            "llm" => llm_bot(Bot::new("1:LLM").set_api_url(api), model).await,
            other => panic!("{FLOOR}={other}: expected echo or llm"),
        }
    });
    true
}

/// The bare teloxide echo bot: each text answered with itself.
async fn echo_bot(bot: Bot) {
    let handler = Update::filter_message().endpoint(|bot: Bot, message: Message| async move {
        if let Some(text) = message.text() {
            bot.send_message(message.chat.id, text).await?;
        }
        respond(())
    });
    Dispatcher::builder(bot, handler).build().dispatch().await;
}

/// The minimal LLM bot: each text to the model through one shared client, the streamed reply
/// sent back.
async fn llm_bot(bot: Bot, model: String) {
    let handler = Update::filter_message().endpoint(
        |bot: Bot, message: Message, client: reqwest::Client, model: String| async move {
            if let Some(text) = message.text() {
                let reply = ask_model(&client, &model, text).await;
                bot.send_message(message.chat.id, reply).await?;
            }
            respond(())
        },
    );
    Dispatcher::builder(bot, handler)
        .dependencies(dptree::deps![reqwest::Client::new(), model])
        .build()
        .dispatch()
        .await;
}

/// The floor before 2026-12-02, in the benchmark's own process: long-poll by hand; each chat's
/// messages in order on that chat's own task, chats concurrently; each text to the model
/// through one shared client and the streamed reply sent.
pub async fn in_process_llm_bot(url: String, model: String) {
    let bot = Bot::new("1:LLM").set_api_url(reqwest::Url::parse(&url).unwrap());
    let client = reqwest::Client::new();
    let mut workers: std::collections::HashMap<i64, tokio::sync::mpsc::UnboundedSender<String>> =
        std::collections::HashMap::new();
    let mut offset = 0;
    loop {
        let Ok(updates) = bot.get_updates().offset(offset).timeout(25).await else {
            continue;
        };
        for update in updates {
            offset = update.id.0 as i32 + 1;
            let UpdateKind::Message(message) = update.kind else {
                continue;
            };
            let (Some(text), chat) = (message.text(), message.chat.id) else {
                continue;
            };
            let worker = workers.entry(chat.0).or_insert_with(|| {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
                let (bot, client, model) = (bot.clone(), client.clone(), model.clone());
                tokio::spawn(async move {
                    while let Some(text) = rx.recv().await {
                        let reply = ask_model(&client, &model, &text).await;
                        let _ = bot.send_message(chat, reply).await;
                    }
                });
                tx
            });
            let _ = worker.send(text.to_string());
        }
    }
}
