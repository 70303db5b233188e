//! `tollgate init`: writes a commented starter config — a local model, one agent with the
//! default toolset, commented `[telegram]` and `[discord]` sections — that passes `check`.
//! It never overwrites a file.

use super::Failure;
use clap::Args;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// The starter config (`config/starter.toml`, checked by the tests like every shipped config).
const STARTER: &str = include_str!("../../config/starter.toml");

#[derive(Args, Debug)]
pub struct InitArgs {}

pub fn run(config_path: Option<&Path>, _args: &InitArgs) -> Result<ExitCode, Failure> {
    let path = config_path.unwrap_or(Path::new("tollgate.toml"));
    let mut file = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(Failure::usage(format!(
                "{} already exists: init never overwrites a config (check it with `tollgate check --config {}`)",
                path.display(),
                path.display()
            )));
        }
        Err(e) => {
            return Err(Failure::runtime(format!("writing {}: {e}", path.display())));
        }
    };
    file.write_all(STARTER.as_bytes())
        .map_err(|e| Failure::runtime(format!("writing {}: {e}", path.display())))?;
    println!(
        "wrote {}: a local model and agent `helper`; next: `tollgate check --config {}`, then `tollgate chat --config {}`",
        path.display(),
        path.display(),
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}
