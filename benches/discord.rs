//! End to end over a fake Discord (REST and gateway, the same fake the tests use): `tollgate
//! serve` (the release binary) answering DMs through a zero-latency scripted model, against two
//! floors on their own instances of the same fake in the same run — a bare serenity echo bot
//! (what the client library and the fake cost), and a minimal serenity LLM bot (an event
//! handler with one shared reqwest client that forwards each message to the same fake model
//! and sends the reply: what someone writes without tollgate). Reported: messages per second
//! for a burst (100 users × 5 DMs), and p50/p99 latency one message at a time (from the
//! gateway event being queued at the fake to the answer's POST reaching it). Run with
//! `cargo bench --bench discord`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/suite/fakes/mod.rs"]
#[allow(dead_code)]
mod fakes;

#[allow(dead_code)]
mod common;

use common::{Tollgate, ask_model, ms, percentile};
use fakes::discord::FakeDiscord;
use fakes::discord::payloads::{self, Place};
use fakes::llm::{FakeLlm, text};
use serenity::all::{Context, EventHandler, GatewayIntents, Message};
use serenity::client::ClientBuilder;
use serenity::http::HttpBuilder;
use std::time::{Duration, Instant};

const SEQUENTIAL: u64 = 300;
const BURST_USERS: u64 = 100;
const BURST_PER_USER: u64 = 5;

/// The DM channel of user N in these runs.
fn dm(user: u64) -> u64 {
    500_000 + user
}

/// What a floor does with a message's text.
enum Floor {
    Echo,
    Llm {
        client: reqwest::Client,
        model: String,
    },
}

#[serenity::async_trait]
impl EventHandler for Floor {
    async fn message(&self, ctx: Context, message: Message) {
        if message.author.bot {
            return;
        }
        let reply = match self {
            Floor::Echo => message.content.clone(),
            Floor::Llm { client, model } => ask_model(client, model, &message.content).await,
        };
        let _ = message.channel_id.say(&ctx.http, reply).await;
    }
}

/// A serenity bot against `fake`, as tollgate runs its own (REST through the fake, the
/// ratelimiter off).
async fn floor_bot(fake: &FakeDiscord, floor: Floor) {
    let http = HttpBuilder::new("floor-token")
        .proxy(fake.url.clone())
        .ratelimiter_disabled(true)
        .build();
    let intents =
        GatewayIntents::GUILDS | GatewayIntents::GUILD_MESSAGES | GatewayIntents::DIRECT_MESSAGES;
    let mut client = ClientBuilder::new_with_http(http, intents)
        .event_handler(floor)
        .await
        .unwrap();
    tokio::spawn(async move { client.start().await });
    fake.ready(1).await;
}

async fn start_tollgate(fake: &FakeDiscord, replies: usize, quiet: bool) -> Tollgate {
    let bridge = format!("[discord]\napi_url = \"{}\"", fake.url);
    let tollgate = common::start_tollgate(
        replies,
        quiet,
        &bridge,
        ("DISCORD_TOKEN", "bench-token-value"),
    )
    .await;
    fake.ready(1).await;
    tollgate
}

fn say(fake: &FakeDiscord, id: u64, user: u64, content: &str) {
    let message = payloads::message(id, Place::dm(dm(user)), (user, "U", &[]), content, &[]);
    fake.dispatch("MESSAGE_CREATE", message);
}

/// When answers to the DM channels of users in `users`, recorded since call `from`, reached
/// the fake (typing and progress posts are not answers).
fn answers(fake: &FakeDiscord, from: usize, users: std::ops::Range<u64>) -> Vec<Instant> {
    fake.picked_since(from, |c| {
        let channel = c
            .path
            .split('/')
            .nth(2)
            .and_then(|id| id.parse::<u64>().ok());
        let answer = c.method == "POST"
            && c.path.ends_with("/messages")
            && channel.is_some_and(|channel| channel >= dm(users.start) && channel < dm(users.end))
            && c.body["content"] != "Working…";
        answer.then_some(c.at)
    })
}

/// One message at a time, each from a new user: latencies, sorted.
async fn sequential(fake: &FakeDiscord, first_user: u64) -> Vec<Duration> {
    let mut latencies = Vec::new();
    for i in 0..SEQUENTIAL {
        let user = first_user + i;
        let from = fake.call_count();
        let pushed = Instant::now();
        say(fake, 1_000_000 + i, user, "ping");
        let at = fake
            .wait_for(Duration::from_secs(30), "an answer", |d| {
                answers(d, from, user..user + 1).first().copied()
            })
            .await;
        latencies.push(at - pushed);
    }
    latencies.sort();
    latencies
}

/// A burst over several users: messages per second until the last answer, and when each
/// answer came (from the burst's start, sorted).
async fn burst(fake: &FakeDiscord, first_user: u64) -> (f64, Vec<Duration>) {
    let from = fake.call_count();
    let start = Instant::now();
    let mut id = 2_000_000;
    for round in 0..BURST_PER_USER {
        for u in 0..BURST_USERS {
            id += 1;
            say(fake, id, first_user + u, &format!("ping {round}"));
        }
    }
    let total = (BURST_USERS * BURST_PER_USER) as usize;
    let mut got = fake
        .wait_for(Duration::from_secs(300), "the burst's answers", |d| {
            let got = answers(d, from, first_user..first_user + BURST_USERS);
            (got.len() >= total).then_some(got)
        })
        .await;
    got.sort();
    let offsets: Vec<Duration> = got.iter().map(|at| *at - start).collect();
    let last = offsets[offsets.len() - 1];
    (total as f64 / last.as_secs_f64(), offsets)
}

/// When the burst's answers came: median, 90th percentile and last.
fn spread(label: &str, offsets: &[Duration]) {
    println!(
        "| {label} | {:.1} ms | {:.1} ms | {:.1} ms |",
        ms(percentile(offsets, 0.5)),
        ms(percentile(offsets, 0.9)),
        ms(offsets[offsets.len() - 1])
    );
}

async fn speed() {
    let echo_fake = FakeDiscord::start().await;
    floor_bot(&echo_fake, Floor::Echo).await;
    let echo_seq = sequential(&echo_fake, 10_000).await;
    let (echo_rate, echo_spread) = burst(&echo_fake, 20_000).await;

    let llm_fake = FakeDiscord::start().await;
    let model = FakeLlm::start((0..SEQUENTIAL + 600).map(|_| text("ok")).collect()).await;
    model.stop_recording();
    let floor = Floor::Llm {
        client: reqwest::Client::new(),
        model: model.url.clone(),
    };
    floor_bot(&llm_fake, floor).await;
    let llm_seq = sequential(&llm_fake, 10_000).await;
    let (llm_rate, llm_spread) = burst(&llm_fake, 20_000).await;

    let mut rows = Vec::new();
    for (label, quiet) in [
        ("tollgate, typing and progress off", true),
        ("tollgate, default config", false),
    ] {
        let fake = FakeDiscord::start().await;
        let tollgate = start_tollgate(&fake, SEQUENTIAL as usize + 600, quiet).await;
        let seq = sequential(&fake, 10_000).await;
        let (rate, offsets) = burst(&fake, 20_000).await;
        rows.push((label, seq, rate, offsets));
        drop(tollgate);
    }

    println!(
        "| run | msgs/s (burst of {}) | ratio to echo | ratio to LLM bot | p50 latency | p99 latency | p99 added over LLM bot |",
        BURST_USERS * BURST_PER_USER
    );
    println!("|---|---|---|---|---|---|---|");
    let llm_p99 = ms(percentile(&llm_seq, 0.99));
    println!(
        "| serenity echo bot | {echo_rate:.0} | 1.00 | — | {:.2} ms | {:.2} ms | — |",
        ms(percentile(&echo_seq, 0.5)),
        ms(percentile(&echo_seq, 0.99))
    );
    println!(
        "| minimal serenity LLM bot | {llm_rate:.0} | {:.2} | 1.00 | {:.2} ms | {llm_p99:.2} ms | — |",
        llm_rate / echo_rate,
        ms(percentile(&llm_seq, 0.5)),
    );
    for (label, seq, rate, _) in &rows {
        let p99 = ms(percentile(seq, 0.99));
        println!(
            "| {label} | {rate:.0} | {:.2} | {:.2} | {:.2} ms | {p99:.2} ms | {:.2} ms |",
            rate / echo_rate,
            rate / llm_rate,
            ms(percentile(seq, 0.5)),
            p99 - llm_p99,
        );
    }
    println!("\n| burst answers arrived | p50 | p90 | last |");
    println!("|---|---|---|---|");
    spread("serenity echo bot", &echo_spread);
    spread("minimal serenity LLM bot", &llm_spread);
    for (label, _, _, offsets) in &rows {
        spread(label, offsets);
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing useful: run only
    // when benchmarking.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(speed());
}
