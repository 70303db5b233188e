//! The command line: `check`, `explain`, `allowlist`, `chat`, `run`, `audit`, `serve`. Exit
//! codes: 0 success, 2 invalid config or usage, 1 any other failure. While `serve` runs it holds
//! the store (it is locked by the process that opened it): `audit`, `allowlist` and `explain`
//! then reach it over the control socket (see [`control`]).

/// A line of a command's output, into its [`Io`].
macro_rules! io_say {
    ($io:expr, $($arg:tt)*) => {
        $io.say(&format!($($arg)*))
    };
}

mod allowlist;
mod audit;
mod chat;
mod check;
mod control;
mod explain;
mod first_run;
mod init;
pub mod logging;
mod run;
mod serve;

use crate::config::{self, Config};
use crate::store::Store;
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Parser, Debug)]
#[command(
    name = "tollgate",
    version,
    about = "AI agents in Discord and Telegram behind one policy gate"
)]
pub struct Cli {
    /// The config file (default: ./tollgate.toml if present, else built-in defaults).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Log lines as text, or as one JSON object a line (also `TOLLGATE_LOG_FORMAT=json`).
    #[arg(long, global = true, value_enum)]
    pub log_format: Option<logging::LogFormat>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Validate the config, print what it resolved, and warn about what will not work.
    Check(check::CheckArgs),
    /// Print the gate's decision for one hypothetical tool call as JSON, running nothing.
    Explain(explain::ExplainArgs),
    /// List, add or revoke saved "always" approvals.
    #[command(subcommand)]
    Allowlist(allowlist::AllowlistCommand),
    /// Talk to an agent at this terminal (or through a pipe); you answer its prompts.
    Chat(chat::ChatArgs),
    /// One unattended turn: prompts are refused with the fix; prints the answer.
    Run(run::RunArgs),
    /// Print the recorded events (every decision with its source).
    Audit(audit::AuditArgs),
    /// Run the chat bridges whose token variables are set (Telegram, Discord), until
    /// SIGINT/SIGTERM.
    Serve(serve::ServeArgs),
    /// Write a commented starter config (never over an existing file).
    Init(init::InitArgs),
}

/// Parses the arguments and runs the command.
pub fn main_with_args<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args_vec: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    let cli = match Cli::try_parse_from(args_vec.clone()) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    logging::init(cli.log_format);
    let mut io = Io::default();
    let outcome = match &cli.command {
        Command::Check(args) => check::run(cli.config.as_deref(), args),
        Command::Run(args) => run::run(cli.config.as_deref(), args),
        Command::Chat(args) => chat::run(cli.config.as_deref(), args),
        Command::Serve(args) => serve::run(cli.config.as_deref(), args),
        Command::Init(args) => init::run(cli.config.as_deref(), args),
        store_command => {
            if let Some(code) = control::forward_if_serving(cli.config.as_deref(), args_vec) {
                return code;
            }
            run_store_command(store_command, cli.config.as_deref(), &mut io)
        }
    };
    print!("{}", io.out);
    match outcome {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("tollgate: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

/// Where a command's output goes and which store it reads: its own store and stdout, or —
/// run for a client of the control socket — the serving process's store and a buffer sent back.
#[derive(Default)]
pub struct Io {
    pub out: String,
    /// The store of the `serve` process this command runs in.
    pub store: Option<Arc<dyn Store>>,
}

impl Io {
    fn say(&mut self, line: &str) {
        self.out.push_str(line);
        self.out.push('\n');
    }

    fn existing_store(&self, config: &Config) -> Result<Option<Arc<dyn Store>>, Failure> {
        match &self.store {
            Some(store) => Ok(Some(store.clone())),
            None => existing_store(config),
        }
    }

    fn open_store(&self, config: &Config) -> Result<Arc<dyn Store>, Failure> {
        match &self.store {
            Some(store) => Ok(store.clone()),
            None => open_store(config),
        }
    }
}

/// Runs `audit`, `allowlist` or `explain`: the commands that read or change the store, and so
/// run in the serving process (over the control socket) while `serve` holds it.
fn run_store_command(
    command: &Command,
    config_path: Option<&Path>,
    io: &mut Io,
) -> Result<ExitCode, Failure> {
    match command {
        Command::Explain(args) => explain::run(config_path, args, io),
        Command::Allowlist(command) => allowlist::run(config_path, command, io),
        Command::Audit(args) => audit::run(config_path, args, io),
        _ => Err(Failure::usage(
            "only audit, allowlist and explain run against a serving process's store",
        )),
    }
}

/// A command's failure: what to print and the exit code.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub code: u8,
}

impl Failure {
    /// Exit 2: the command or its config is wrong.
    fn usage(message: impl std::fmt::Display) -> Self {
        Failure {
            message: message.to_string(),
            code: 2,
        }
    }

    /// Exit 1: something failed while running.
    fn runtime(message: impl std::fmt::Display) -> Self {
        Failure {
            message: message.to_string(),
            code: 1,
        }
    }
}

impl From<config::ConfigError> for Failure {
    fn from(e: config::ConfigError) -> Self {
        Failure::usage(format!("invalid config: {e}"))
    }
}

fn load_config(path: Option<&Path>) -> Result<Config, Failure> {
    Ok(config::load(path)?)
}

/// The config named or found, else (for `chat` and `run`) the built-in first-run default with
/// the model found in the environment.
fn load_config_or_default(path: Option<&Path>) -> Result<Config, Failure> {
    match first_run::default_config(path)? {
        Some(config) => Ok(config),
        None => load_config(path),
    }
}

/// Opens the store if it exists (reading commands must not create one).
fn existing_store(config: &Config) -> Result<Option<Arc<dyn Store>>, Failure> {
    if !config.store.path.exists() {
        return Ok(None);
    }
    open_store(config).map(Some)
}

fn open_store(config: &Config) -> Result<Arc<dyn Store>, Failure> {
    // Sessions flushing at once share one fsync (group commit).
    let store = crate::store::open_dir(&config.store.path, config.store.cache_capacity_mb)
        .map(|s| Arc::new(crate::store::GroupCommit::new(s)) as Arc<dyn Store>)
        .map_err(|e| Failure::runtime(e.to_string()))?;
    // A store written before its indexes existed is indexed once, here.
    crate::approvals::PendingApprovals::index_existing(store.as_ref())
        .and_then(|()| crate::agent::runs::RunStore::new(store.clone()).index_existing())
        .and_then(|()| crate::reminders::Reminders::index_existing(store.as_ref()))
        .and_then(|()| crate::retention::date_undated(&store, crate::clock::now_secs()))
        .and_then(|()| {
            let moved = crate::events::StoreEvents::move_into_time_order(
                store.as_ref(),
                crate::clock::now_secs(),
            )?;
            if moved > 0 {
                tracing::info!(
                    "moved {moved} audit events an older tollgate wrote into time order"
                );
            }
            Ok(())
        })
        .map_err(|e| Failure::runtime(format!("indexing the store: {e}")))?;
    Ok(store)
}

/// The agent named, or the only one configured.
fn pick_agent(config: &Config, named: Option<&str>) -> Result<String, Failure> {
    let name = match named {
        Some(name) => name.to_string(),
        None if config.agents.len() == 1 => {
            config.agents.keys().next().cloned().unwrap_or_default()
        }
        None => {
            return Err(Failure::usage(
                "several agents are configured: name one with --agent",
            ));
        }
    };
    agent(config, &name)?;
    Ok(name)
}

fn agent<'a>(config: &'a Config, name: &str) -> Result<&'a config::AgentConfig, Failure> {
    config.agents.get(name).ok_or_else(|| {
        let known: Vec<&str> = config.agents.keys().map(String::as_str).collect();
        Failure::usage(format!(
            "no agent `{name}` in the config ({})",
            if known.is_empty() {
                "no agents are configured".to_string()
            } else {
                format!("agents: {}", known.join(", "))
            }
        ))
    })
}
