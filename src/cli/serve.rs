//! `tollgate serve`: starts every bridge whose token variable is set (Telegram, Discord) and runs
//! until SIGINT/SIGTERM. On a stop, calls that are running are recorded as interrupted (the
//! process exit kills them and their sandboxes); calls waiting for approval stay pending and
//! their buttons keep working after the next start.
//!
//! This is the wiring: the one place that names a platform crate. The runtime (`crate::serve`)
//! takes the bridges as `tollgate_surface::Bridge`s.

mod runtime;

use super::{Failure, load_config, open_store};
use crate::agent::runs::RunStore;
use crate::config::Config;
use crate::policy::env::configured_secret_names;
use crate::policy::redact::Redactor;
use crate::serve::settings::BridgeSettings;
use clap::Args;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use tollgate_discord::{DiscordBridge, DiscordOptions, Shards};
use tollgate_surface::{Bridge, Platform};
use tollgate_telegram::TelegramBridge;
use tollgate_telegram::bot::TelegramBot;

/// A bridge that can start: its platform and token.
struct Startable {
    platform: Platform,
    token: String,
}

/// The bridges whose section is present and whose token variable is set; a usage error naming
/// the variables when none is.
fn startable(config: &Config, file: &str) -> Result<Vec<Startable>, Failure> {
    let mut ready = Vec::new();
    let mut missing = Vec::new();
    if let Some(telegram) = &config.telegram {
        BridgeSettings::for_platform(config, Platform::Telegram)
            .map_err(|e| Failure::usage(format!("{e} (in {file})")))?;
        let token = std::env::var(&telegram.token_env).unwrap_or_default();
        if token.trim().is_empty() {
            missing.push(format!(
                "set {} to the Telegram bot's token (telegram.token_env in {file})",
                telegram.token_env
            ));
        } else {
            ready.push(Startable {
                platform: Platform::Telegram,
                token,
            });
        }
    }
    if let Some(discord) = &config.discord {
        BridgeSettings::for_platform(config, Platform::Discord)
            .map_err(|e| Failure::usage(format!("{e} (in {file})")))?;
        let token = std::env::var(&discord.token_env).unwrap_or_default();
        if token.trim().is_empty() {
            missing.push(format!(
                "set {} to the Discord bot's token (discord.token_env in {file})",
                discord.token_env
            ));
        } else {
            ready.push(Startable {
                platform: Platform::Discord,
                token,
            });
        }
    }
    if !ready.is_empty() {
        for problem in &missing {
            tracing::warn!(target: "tollgate::serve", "not starting a bridge: {problem}");
        }
        return Ok(ready);
    }
    if missing.is_empty() {
        return Err(Failure::usage(format!(
            "no bridge is configured: add a [telegram] or [discord] section to {file} and set its token variable (TELEGRAM_BOT_TOKEN, DISCORD_TOKEN)"
        )));
    }
    Err(Failure::usage(format!(
        "no bridge can start: {}",
        missing.join("; ")
    )))
}

/// Connects one bridge.
async fn connect(
    config: &Config,
    startable: &Startable,
    redactor: &Redactor,
) -> Result<Arc<dyn Bridge>, Failure> {
    match (startable.platform, &config.telegram, &config.discord) {
        (Platform::Telegram, Some(telegram), _) => {
            let bot = TelegramBot::connect(&startable.token, &telegram.api_url)
                .await
                .map_err(|e| {
                    Failure::runtime(redactor.redact(&format!(
                        "connecting to the Telegram Bot API at {}: {e}",
                        telegram.api_url
                    )))
                })?;
            tracing::info!(target: "tollgate::serve", "Telegram bot @{} connected", bot.username);
            Ok(Arc::new(TelegramBridge::new(bot)))
        }
        (Platform::Discord, _, Some(discord)) => {
            let options = DiscordOptions {
                token: startable.token.clone(),
                api_url: discord.api_url.clone(),
                message_content: discord.message_content,
                shards: discord.shards.map(|s| Shards {
                    first: s.first,
                    last: s.last,
                    total: s.total,
                }),
                max_attachment_bytes: discord.max_attachment_mb.saturating_mul(1024 * 1024),
            };
            let bridge = DiscordBridge::connect(options).await.map_err(|e| {
                Failure::runtime(redactor.redact(&format!(
                    "connecting to the Discord API at {}: {e}",
                    discord.api_url
                )))
            })?;
            tracing::info!(target: "tollgate::serve", "Discord bot {} connected", bridge.name());
            Ok(Arc::new(bridge))
        }
        (platform, _, _) => Err(Failure::runtime(format!(
            "no bridge for {} in this build",
            platform.as_str()
        ))),
    }
}

#[derive(Args, Debug)]
pub struct ServeArgs {}

pub fn run(config_path: Option<&Path>, _args: &ServeArgs) -> Result<ExitCode, Failure> {
    // First: the store starts a thread of its own when it opens.
    few_malloc_arenas();
    let config = Arc::new(load_config(config_path)?);
    let file = config
        .source
        .as_ref()
        .map_or_else(|| "the config".to_string(), |p| p.display().to_string());
    let ready = startable(&config, &file)?;
    let store = open_store(&config)?;
    let redactor = Redactor::from_env_names(configured_secret_names(&config));
    let runtime = runtime::serve_runtime()
        .map_err(|e| Failure::runtime(format!("starting the async runtime: {e}")))?;
    let code = runtime.block_on(async {
        // Up before the bridges connect: `/healthz` says 503 ("starting") meanwhile.
        let health = start_metrics(&config, &store, ready.len(), &file).await?;
        // A bridge that cannot connect (a revoked token, the platform down) does not stop the
        // others: serve goes on with those that did, and fails only when none did.
        let mut bridges = Vec::new();
        let mut failures = Vec::new();
        for one in &ready {
            match connect(&config, one, &redactor).await {
                Ok(bridge) => {
                    if let Some(health) = &health {
                        health.add(bridge.clone());
                    }
                    bridges.push(bridge);
                }
                Err(failure) => {
                    tracing::warn!(target: "tollgate::serve", "not starting the {} bridge: {}", one.platform.as_str(), failure.message);
                    if let Some(health) = &health {
                        health.failed(one.platform, &failure.message);
                    }
                    failures.push(failure.message);
                }
            }
        }
        if bridges.is_empty() {
            return Err(Failure::runtime(format!(
                "no bridge could connect: {}",
                failures.join("; ")
            )));
        }
        tracing::info!(target: "tollgate::serve", "serving (stop with Ctrl-C or SIGTERM)");
        let allowlists_changed = Arc::new(tokio::sync::Notify::new());
        let control = super::control::listen(&config, store.clone(), allowlists_changed.clone())
            .map_err(|e| Failure::runtime(format!("opening the control socket: {e}")))?;
        let (signal, code) = stop_signal();
        crate::serve::run(
            config.clone(),
            store.clone(),
            bridges,
            allowlists_changed,
            signal,
        )
            .await
            .map_err(Failure::runtime)?;
        drop(control);
        // Store work (a commit, syncs, a checkpoint), stepped aside from the async worker.
        let marked = crate::step_aside::step_aside(|| {
            let marked = RunStore::new(store.clone())
                .interrupt_running(crate::agent::runner::INTERRUPTED)
                .unwrap_or(0);
            // The process exits without dropping the store: its database takes the journal
            // now.
            if let Err(e) = store.flush_for_stop() {
                tracing::warn!(target: "tollgate::serve", "stopping: {e}");
            }
            marked
        });
        tracing::info!(
            target: "tollgate::serve",
            "stopped; {marked} running call(s) recorded as interrupted; approvals still waiting stay answerable after the next start"
        );
        let code = code.load(std::sync::atomic::Ordering::SeqCst);
        Ok::<u8, Failure>(code)
    })?;
    // Exit now: tasks still running (and the sandboxes under them) end with the process.
    std::process::exit(i32::from(code));
}

/// With `[metrics]`: the recorder installed and `/metrics` and `/healthz` served; what
/// `/healthz` reads, to add the bridges to as they connect.
async fn start_metrics(
    config: &Config,
    store: &Arc<dyn crate::store::Store>,
    bridges: usize,
    file: &str,
) -> Result<Option<Arc<crate::metrics::server::Health>>, Failure> {
    let Some(address) = config.metrics.as_ref().and_then(|m| m.address()) else {
        return Ok(None);
    };
    let listener = tokio::net::TcpListener::bind(address).await.map_err(|e| {
        Failure::runtime(format!(
            "listening on {address} for metrics (metrics.listen in {file}): {e}"
        ))
    })?;
    let health = Arc::new(crate::metrics::server::Health::new(store.clone(), bridges));
    tokio::spawn(crate::metrics::server::serve(
        listener,
        crate::metrics::registry(),
        health.clone(),
    ));
    tracing::info!(target: "tollgate::serve", "metrics on http://{address}/metrics, health on /healthz");
    Ok(Some(health))
}

/// Malloc arenas `serve` lets glibc create, unless `MALLOC_ARENA_MAX` says otherwise.
const MALLOC_ARENAS: libc::c_int = 2;

/// Caps glibc's malloc arenas before the runtime's threads start. The binary's Rust code
/// allocates through jemalloc (`src/main.rs`), but C code, SQLite's page cache among it, still
/// allocates through glibc, which gives threads arenas of their own (up to eight per core), each
/// keeping freed memory it cannot hand back: with 10,000 idle sessions, when glibc served
/// everything, two arenas measured 98.5 MiB RSS against 116.1 MiB with glibc's default
/// (`TOLLGATE_BENCH_PHASE=memory cargo bench --bench telegram`).
fn few_malloc_arenas() {
    #[cfg(target_env = "gnu")]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets an allocator parameter, under glibc's own lock, so other
        // threads (jemalloc's purging thread) may run meanwhile; it takes no pointers.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, MALLOC_ARENAS);
        }
    }
}

/// Completes on SIGTERM or SIGINT, noting the conventional exit code.
fn stop_signal() -> (
    impl std::future::Future<Output = ()>,
    Arc<std::sync::atomic::AtomicU8>,
) {
    let code = Arc::new(std::sync::atomic::AtomicU8::new(0));
    let noted = code.clone();
    let future = async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return std::future::pending().await;
        };
        let value = tokio::select! {
            _ = term.recv() => 143,
            _ = int.recv() => 130,
        };
        noted.store(value, std::sync::atomic::Ordering::SeqCst);
    };
    (future, code)
}
