//! `tollgate run`: one unattended turn. Nobody can answer a prompt here, so a call that needs
//! approval is refused with a reason naming the fix; the final answer is printed (or, with
//! `--json`, every event of the run as JSON lines, then the answer), and a failure exits 1.

use super::{Failure, load_config_or_default, open_store};
use crate::agent::classifier::Surface;
use crate::agent::setup::assemble;
use crate::events::StoreEvents;
use crate::executor::approval::NobodyApproves;
use clap::Args;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The agent (default: the only one configured).
    #[arg(long)]
    pub agent: Option<String>,
    /// Print the run's events as JSON lines, then the answer as a final JSON line.
    #[arg(long)]
    pub json: bool,
    /// The message.
    pub message: String,
}

pub fn run(config_path: Option<&Path>, args: &RunArgs) -> Result<ExitCode, Failure> {
    let config = Arc::new(load_config_or_default(config_path)?);
    let agent = super::pick_agent(&config, args.agent.as_deref())?;
    let store = open_store(&config)?;
    let run_id = run_id();
    let session = format!("run:{run_id}");
    let assembled = assemble(
        &config,
        &agent,
        &session,
        Surface::Unattended,
        store.clone(),
        Arc::new(NobodyApproves),
    )
    .map_err(Failure::usage)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::runtime(format!("starting the async runtime: {e}")))?;
    // The run's session is new, so its events are all recorded from here on: reading from
    // here (with room for a clock stepped back meanwhile) reads the end of the audit log,
    // not all of it.
    let started = (chrono::Utc::now() - chrono::TimeDelta::hours(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let outcome = runtime.block_on(assembled.runner.start(
        assembled.session.clone(),
        &run_id,
        &args.message,
        CancellationToken::new(),
    ));
    // Events are written without a flush each (the run's own records flush as they go): make
    // them durable before the process ends.
    store.flush().map_err(|e| Failure::runtime(e.to_string()))?;
    if args.json {
        for event in StoreEvents::read(store.as_ref(), Some(&session), Some(&started))
            .map_err(|e| Failure::runtime(e.to_string()))?
        {
            println!("{}", serde_json::to_string(&event).unwrap_or_default());
        }
    }
    match outcome {
        Ok(mut done) => {
            done.answer = assembled.runner.executor.redactor.redact(&done.answer);
            if args.json {
                println!(
                    "{}",
                    serde_json::json!({"type": "answer", "run": done.run_id, "text": done.answer})
                );
            } else {
                println!("{}", done.answer);
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => Err(Failure::runtime(format!("the run failed: {error}"))),
    }
}

/// A run id unique enough for one machine: time and process.
fn run_id() -> String {
    let nanos = crate::clock::now_nanos();
    format!("{nanos:x}-{:x}", std::process::id())
}
