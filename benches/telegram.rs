//! End to end over a fake Telegram Bot API: `tollgate serve` (the release binary) answering
//! through a zero-latency scripted model, against two floors on the same kind of fake in the
//! same run, each in a process of its own as `serve` is — a bare teloxide echo bot (what the
//! Telegram client library costs), and a minimal LLM bot (what someone writes without
//! tollgate: teloxide's `Dispatcher` with its defaults, one shared reqwest client with
//! keep-alive and streaming, each message forwarded to the same fake model and its reply sent;
//! `floors.rs`). Reported: messages per second for a burst, p50/p99 latency one message at a time
//! (from the update being available to the answer's `sendMessage` reaching the fake), a burst
//! of first messages from new chats, and tollgate's RSS with 10,000 idle sessions. Run with
//! `cargo bench --bench telegram`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/suite/fakes/mod.rs"]
#[allow(dead_code)]
mod fakes;

mod common;
#[path = "telegram/floors.rs"]
mod floors;

use common::{Tollgate, cpu_time_of, mark, ms, percentile};
use fakes::llm::{FakeLlm, text};
use fakes::telegram::{FakeTelegram, user_message};
use floors::{Floor, Kind};
use std::time::{Duration, Instant};

const SEQUENTIAL: usize = 300;
const BURST_CHATS: i64 = 100;
const BURST_PER_CHAT: i64 = 5;
/// Bursts per bot: a burst lasts about a tenth of a second, so one is at this machine's mercy;
/// the median of several is what is reported.
const BURSTS: i64 = 5;
/// Idle sessions for the memory phase (`TOLLGATE_BENCH_IDLE` overrides, e.g. 100000).
const IDLE_SESSIONS: i64 = 10_000;
const NEW_CHATS: i64 = 5_000;
/// Sessions that take a second turn, for the store's bytes per turn.
const SECOND_TURNS: i64 = 2_000;

/// The store on disk: bytes per session (one turn each), per further turn, and after the
/// retention pass has run as if `retain_days` (30) and a day had passed. Each counted with the
/// service stopped, when the database holds everything and the journal's files are empty; the
/// running figure (the journal's and the log's files at their high-water mark) beside it.
async fn disk(fake: &FakeTelegram, tollgate: &mut Tollgate, sessions: i64) {
    let store = tollgate.store_path();
    let running = common::disk_bytes(&store);
    tollgate.stop();
    let one_turn = common::disk_bytes(&store);
    tollgate.restart();
    for chat in 0..SECOND_TURNS {
        fake.push_message(user_message(
            1_000_000 + chat,
            "private",
            1_000_000 + chat,
            "again",
        ));
    }
    let expect = (sessions + SECOND_TURNS) as usize;
    fake.wait_for(Duration::from_secs(600), "second answers", |t| {
        (t.calls("SendMessage").len() >= expect).then_some(())
    })
    .await;
    tollgate.stop();
    let two_turns = common::disk_bytes(&store);
    let pruned = tollgate.prune_as_if_later(31);
    let after = common::disk_bytes(&store);
    let free = free_pages_bytes(&store);
    println!(
        "Store on disk, stopped: {one_turn} bytes after {sessions} sessions of one turn ({} bytes a session; {running} bytes while running); +{} bytes for {SECOND_TURNS} more turns ({} bytes a turn; {two_turns} bytes); after a retention pass 31 days later ({pruned}): {after} bytes, of which {free} in free pages (SQLite writes there again before it grows the file)",
        one_turn / sessions as u64,
        two_turns.saturating_sub(one_turn),
        two_turns.saturating_sub(one_turn) / SECOND_TURNS as u64,
    );
}

/// Bytes of the stopped store's database that hold nothing (pages a deletion freed).
fn free_pages_bytes(store: &std::path::Path) -> u64 {
    let db = rusqlite::Connection::open(store.join("tollgate.sqlite3")).unwrap();
    let pages: i64 = db
        .query_row("PRAGMA freelist_count", [], |r| r.get(0))
        .unwrap();
    let size: i64 = db.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
    (pages * size) as u64
}

async fn start_tollgate(fake: &FakeTelegram, replies: usize, quiet: bool, extra: &str) -> Tollgate {
    let bridge = format!("[telegram]\napi_url = \"{}\"\n{extra}", fake.url);
    common::start_tollgate(
        replies,
        quiet,
        &bridge,
        ("TELEGRAM_BOT_TOKEN", "1:BENCH-token-value"),
    )
    .await
}

async fn wait_polling(fake: &FakeTelegram) {
    fake.wait_for(Duration::from_secs(30), "polling", |t| {
        t.methods().iter().any(|m| m == "GetUpdates").then_some(())
    })
    .await;
}

/// One message at a time, each from a new chat: latencies.
async fn sequential(fake: &FakeTelegram, first_chat: i64) -> Vec<Duration> {
    let mut latencies = Vec::new();
    for i in 0..SEQUENTIAL as i64 {
        let chat = first_chat + i;
        let from = fake.call_count();
        let pushed = Instant::now();
        fake.push_message(user_message(chat, "private", chat, "ping"));
        let at = fake
            .wait_for(Duration::from_secs(30), "an answer", |t| {
                t.answers_since(from, chat..chat + 1).first().copied()
            })
            .await;
        latencies.push(at - pushed);
    }
    latencies.sort();
    latencies
}

/// Waits for `total` answers to chats in `chats` recorded since call `from`: when the last
/// arrived.
async fn last_answer(
    fake: &FakeTelegram,
    from: usize,
    chats: std::ops::Range<i64>,
    total: usize,
) -> Instant {
    fake.wait_for(Duration::from_secs(600), "a burst's answers", |t| {
        let answers = t.answers_since(from, chats.clone());
        (answers.len() >= total).then(|| answers.into_iter().max().unwrap())
    })
    .await
}

/// A burst of messages over several chats: messages per second.
async fn burst(fake: &FakeTelegram, first_chat: i64) -> f64 {
    let from = fake.call_count();
    let start = Instant::now();
    for round in 0..BURST_PER_CHAT {
        for c in 0..BURST_CHATS {
            let chat = first_chat + c;
            fake.push_message(user_message(
                chat,
                "private",
                chat,
                &format!("ping {round}"),
            ));
        }
    }
    let total = (BURST_CHATS * BURST_PER_CHAT) as usize;
    let last = last_answer(fake, from, first_chat..first_chat + BURST_CHATS, total).await;
    total as f64 / (last - start).as_secs_f64()
}

/// One first message from each of `n` new chats at once: messages per second.
async fn first_messages(fake: &FakeTelegram, first_chat: i64, n: i64) -> f64 {
    let from = fake.call_count();
    let start = Instant::now();
    for c in 0..n {
        let chat = first_chat + c;
        fake.push_message(user_message(chat, "private", chat, "hello"));
    }
    let last = last_answer(fake, from, first_chat..first_chat + n, n as usize).await;
    n as f64 / (last - start).as_secs_f64()
}

/// [`BURSTS`] bursts, each over new chats: the median rate.
async fn median_burst(fake: &FakeTelegram, first_chat: i64) -> f64 {
    let mut rates = Vec::new();
    for n in 0..BURSTS {
        rates.push(burst(fake, first_chat + n * 1_000).await);
    }
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

/// The floors and tollgate, one after another in this run: latency one at a time, a burst of
/// repeat chats, and (tollgate) a burst of first messages from new chats.
async fn speed() {
    let echo_fake = FakeTelegram::start().await;
    let echo = Floor::start(Kind::Echo, &echo_fake.url, None);
    wait_polling(&echo_fake).await;
    let echo_seq = sequential(&echo_fake, 100_000).await;
    let echo_rate = median_burst(&echo_fake, 200_000).await;
    drop(echo);

    let replies = SEQUENTIAL + 100 + (BURSTS * BURST_CHATS * BURST_PER_CHAT) as usize;
    let burst_messages = f64::from((BURSTS * BURST_CHATS * BURST_PER_CHAT) as u32);
    let per_message = |cpu: Duration| cpu.as_secs_f64() * 1e6 / burst_messages;
    let llm_fake = FakeTelegram::start().await;
    let model = FakeLlm::start(
        (0..replies + NEW_CHATS as usize)
            .map(|_| text("ok"))
            .collect(),
    )
    .await;
    model.stop_recording();
    let llm = Floor::start(Kind::Llm, &llm_fake.url, Some(&model.url));
    wait_polling(&llm_fake).await;
    let llm_seq = sequential(&llm_fake, 100_000).await;
    let (bot_cpu, fakes_cpu) = (llm.cpu_time(), cpu_time_of(std::process::id()));
    let llm_rate = median_burst(&llm_fake, 200_000).await;
    let llm_cpu = (
        per_message(llm.cpu_time() - bot_cpu),
        per_message(cpu_time_of(std::process::id()) - fakes_cpu),
    );
    // The same burst of first messages tollgate gets: what a burst of new chats costs a bot
    // that keeps nothing (its connections and tasks grow with the chats in flight).
    let bot_cpu = llm.cpu_time();
    let llm_first = first_messages(&llm_fake, 300_000, NEW_CHATS).await;
    let llm_first_cpu = (llm.cpu_time() - bot_cpu).as_secs_f64() * 1e6 / NEW_CHATS as f64;
    drop(llm);

    let old_fake = FakeTelegram::start().await;
    let old_model = FakeLlm::start((0..replies).map(|_| text("ok")).collect()).await;
    old_model.stop_recording();
    let old_bot = tokio::spawn(floors::in_process_llm_bot(
        old_fake.url.clone(),
        old_model.url.clone(),
    ));
    wait_polling(&old_fake).await;
    let old_seq = sequential(&old_fake, 100_000).await;
    let old_cpu = cpu_time_of(std::process::id());
    let old_rate = median_burst(&old_fake, 200_000).await;
    let old_cpu = per_message(cpu_time_of(std::process::id()) - old_cpu);
    old_bot.abort();

    let mut rows = Vec::new();
    let mut first = None;
    let mut cpu = Vec::new();
    for (label, quiet) in [
        ("tollgate, typing and progress off", true),
        ("tollgate, default config", false),
    ] {
        let fake = FakeTelegram::start().await;
        let replies =
            SEQUENTIAL + 100 + (BURSTS * BURST_CHATS * BURST_PER_CHAT + NEW_CHATS) as usize;
        let tollgate = start_tollgate(&fake, replies, quiet, "").await;
        wait_polling(&fake).await;
        let seq = sequential(&fake, 100_000).await;
        let (serve_cpu, fakes_cpu) = (tollgate.cpu_time(), cpu_time_of(std::process::id()));
        mark("repeat_start");
        let rate = median_burst(&fake, 200_000).await;
        mark("repeat_end");
        cpu.push((
            label,
            per_message(tollgate.cpu_time() - serve_cpu),
            per_message(cpu_time_of(std::process::id()) - fakes_cpu),
        ));
        if quiet {
            let serve_cpu = tollgate.cpu_time();
            mark("first_start");
            let new = first_messages(&fake, 300_000, NEW_CHATS).await;
            mark("first_end");
            let cpu = (tollgate.cpu_time() - serve_cpu).as_secs_f64() * 1e6 / NEW_CHATS as f64;
            first = Some((rate, new, cpu));
        }
        rows.push((label, seq, rate));
        drop(tollgate);
    }

    println!(
        "| run | msgs/s (median of {BURSTS} bursts of {}) | ratio to echo | ratio to LLM bot | p50 latency | p99 latency | p99 added over LLM bot |",
        BURST_CHATS * BURST_PER_CHAT
    );
    println!("|---|---|---|---|---|---|---|");
    let llm_p99 = ms(percentile(&llm_seq, 0.99));
    println!(
        "| teloxide echo bot | {echo_rate:.0} | 1.00 | — | {:.2} ms | {:.2} ms | — |",
        ms(percentile(&echo_seq, 0.5)),
        ms(percentile(&echo_seq, 0.99))
    );
    println!(
        "| minimal LLM bot | {llm_rate:.0} | {:.2} | 1.00 | {:.2} ms | {llm_p99:.2} ms | — |",
        llm_rate / echo_rate,
        ms(percentile(&llm_seq, 0.5)),
    );
    println!(
        "| minimal LLM bot in the benchmark's process, hand-rolled polling (the floor before 2026-12-02) | {old_rate:.0} | {:.2} | {:.2} | {:.2} ms | {:.2} ms | {:.2} ms |",
        old_rate / echo_rate,
        old_rate / llm_rate,
        ms(percentile(&old_seq, 0.5)),
        ms(percentile(&old_seq, 0.99)),
        ms(percentile(&old_seq, 0.99)) - llm_p99,
    );
    for (label, seq, rate) in &rows {
        let p99 = ms(percentile(seq, 0.99));
        println!(
            "| {label} | {rate:.0} | {:.2} | {:.2} | {:.2} ms | {p99:.2} ms | {:.2} ms |",
            rate / echo_rate,
            rate / llm_rate,
            ms(percentile(seq, 0.5)),
            p99 - llm_p99,
        );
    }
    println!(
        "\nCPU during the burst, minimal LLM bot: the bot's process {:.0} µs a message, the benchmark's process (fake Bot API and model) {:.0} µs a message",
        llm_cpu.0, llm_cpu.1
    );
    println!(
        "CPU during the burst, minimal LLM bot in the benchmark's process: the benchmark's process (the bot, fake Bot API and model) {old_cpu:.0} µs a message"
    );
    for (label, serve, fakes) in &cpu {
        println!(
            "CPU during the burst, {label}: serve {serve:.0} µs a message, the benchmark's process (fake Bot API and model) {fakes:.0} µs a message"
        );
    }
    if let Some((repeat, new, cpu)) = first {
        println!(
            "\nFirst messages, {NEW_CHATS} new chats at once (typing and progress off): {new:.0} msgs/s = {:.2}x the repeat-chat burst ({repeat:.0} msgs/s); serve {cpu:.0} µs of CPU a message",
            new / repeat
        );
    }
    println!(
        "First messages, {NEW_CHATS} new chats at once, minimal LLM bot: {llm_first:.0} msgs/s = {:.2}x its repeat-chat burst ({llm_rate:.0} msgs/s); the bot's process {llm_first_cpu:.0} µs of CPU a message ({:.0} in its repeat burst)",
        llm_first / llm_rate,
        llm_cpu.0
    );
}

fn main() {
    if floors::run_if_asked() {
        return;
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing useful: run only
    // when benchmarking.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let only_memory = std::env::var("TOLLGATE_BENCH_PHASE").as_deref() == Ok("memory");
        if !only_memory {
            speed().await;
        }
        if std::env::var("TOLLGATE_BENCH_PHASE").as_deref() == Ok("speed") {
            return;
        }
        // Memory: 10,000 sessions that each answered one message, then sit idle — first with
        // their workers kept (the default keeps an idle worker 10 minutes), then let go after
        // 5 idle seconds, with the store's cache at 16 MiB.
        println!();
        for (label, extra) in [
            ("workers kept in memory", "idle_session_secs = 100000"),
            (
                "workers let go after 5 s idle, store cache 16 MiB",
                "idle_session_secs = 5",
            ),
        ] {
            let fake = FakeTelegram::start().await;
            let idle_sessions: i64 = std::env::var("TOLLGATE_BENCH_IDLE")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(IDLE_SESSIONS);
            let mut tollgate =
                start_tollgate(&fake, (idle_sessions + SECOND_TURNS) as usize, true, extra).await;
            wait_polling(&fake).await;
            let before = tollgate.rss_kib();
            let start = Instant::now();
            for chat in 0..idle_sessions {
                fake.push_message(user_message(1_000_000 + chat, "private", 1_000_000 + chat, "hello"));
                if chat % 500 == 499 {
                    // Let the poller drain in batches, as a real update stream would arrive.
                    let expect = chat as usize + 1;
                    fake.wait_for(Duration::from_secs(600), "answers", |t| {
                        (t.calls("SendMessage").len() >= expect).then_some(())
                    })
                    .await;
                }
            }
            let created = start.elapsed().as_secs();
            // Past the rate-limit window (60 s) and a housekeeping pass after it: what stays
            // is what idle sessions cost.
            tokio::time::sleep(Duration::from_secs(75)).await;
            println!(
                "RSS with {idle_sessions} idle sessions, {label}: {:.1} MiB (at start {:.1} MiB; {created} s to create them)",
                tollgate.rss_kib() as f64 / 1024.0,
                before as f64 / 1024.0,
            );
            println!("  where: {}", tollgate.rss_breakdown());
            if extra == "idle_session_secs = 5" {
                disk(&fake, &mut tollgate, idle_sessions).await;
            }
        }
    });
}
