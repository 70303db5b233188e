//! `tollgate allowlist`: list, add and revoke saved approvals. Adding is how an operator lets an
//! unattended agent run a command nobody can approve at run time.

use super::{Failure, agent, existing_store, load_config, open_store};
use crate::policy::shell::ShellAnalysis;
use crate::policy::shell::approval_key::ApprovalKey;
use crate::store::{Allowlists, CommandEntry};
use clap::Subcommand;
use std::path::Path;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Subcommand, Debug)]
pub enum AllowlistCommand {
    /// List saved command keys (per agent) and tool approvals (per session).
    List {
        #[arg(long)]
        agent: Option<String>,
        #[arg(long)]
        session: Option<String>,
    },
    /// Save the approval key of a command for an agent ("Always: this command").
    Add {
        #[arg(long)]
        agent: String,
        /// The command whose key to save, e.g. `git pull` (saves the prefix key `git pull`).
        #[arg(long)]
        command: String,
    },
    /// Revoke a command key of an agent, or a tool approval of a session.
    Revoke {
        #[arg(long)]
        agent: Option<String>,
        /// The key as listed: `git status` or `=rm old.log`.
        #[arg(long)]
        key: Option<String>,
        #[arg(long)]
        session: Option<String>,
        #[arg(long)]
        tool: Option<String>,
    },
}

pub fn run(config_path: Option<&Path>, command: &AllowlistCommand) -> Result<ExitCode, Failure> {
    let config = load_config(config_path)?;
    let runtime = |e: crate::store::StoreError| Failure::runtime(e.to_string());
    match command {
        AllowlistCommand::List {
            agent: agent_name,
            session,
        } => {
            let Some(store) = existing_store(&config)? else {
                println!(
                    "(no store yet at {}: nothing saved)",
                    config.store.path.display()
                );
                return Ok(ExitCode::SUCCESS);
            };
            let lists = Allowlists::new(store);
            for entry in lists
                .command_entries(agent_name.as_deref())
                .map_err(runtime)?
            {
                println!(
                    "agent {}\tcommand {}\tcovers {}\tby {} at {}",
                    entry.agent,
                    entry.key,
                    entry.key.describe(),
                    entry.by,
                    entry.at
                );
            }
            for entry in lists.tool_entries(session.as_deref()).map_err(runtime)? {
                println!(
                    "session {}\ttool {}\tby {} at {}",
                    entry.session, entry.tool, entry.by, entry.at
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        AllowlistCommand::Add {
            agent: agent_name,
            command,
        } => {
            let agent_config = agent(&config, agent_name)?;
            let analysis = ShellAnalysis::new(command, &agent_config.prefix_binaries);
            if let Some(hit) = &analysis.denied {
                return Err(Failure::usage(format!(
                    "`{command}` is on the denylist ({hit}); no allowlist entry can run it"
                )));
            }
            let Some(key) = analysis.approval_key else {
                return Err(Failure::usage(format!(
                    "`{command}` has no approval key: only a single simple command with literal words and no high-risk shape can be saved{}",
                    analysis
                        .high_risk
                        .map(|r| format!(" (this one: {r})"))
                        .unwrap_or_default()
                )));
            };
            let lists = Allowlists::new(open_store(&config)?);
            lists
                .add_command(&CommandEntry {
                    agent: agent_name.clone(),
                    key: key.clone(),
                    by: "cli".into(),
                    at: now_rfc3339(),
                })
                .map_err(runtime)?;
            println!(
                "saved for agent {agent_name}: {key} (covers {})",
                key.describe()
            );
            Ok(ExitCode::SUCCESS)
        }
        AllowlistCommand::Revoke {
            agent: agent_name,
            key,
            session,
            tool,
        } => {
            let store = existing_store(&config)?
                .ok_or_else(|| Failure::usage("nothing is saved yet (no store)"))?;
            let lists = Allowlists::new(store);
            let removed = match (agent_name, key, session, tool) {
                (Some(a), Some(k), None, None) => {
                    let key: ApprovalKey = k.parse().map_err(Failure::usage)?;
                    lists.revoke_command(a, &key).map_err(runtime)?
                }
                (None, None, Some(s), Some(t)) => lists.revoke_tool(s, t).map_err(runtime)?,
                _ => {
                    return Err(Failure::usage(
                        "give --agent with --key, or --session with --tool",
                    ));
                }
            };
            if removed {
                println!("revoked");
                Ok(ExitCode::SUCCESS)
            } else {
                Err(Failure::runtime("no such entry"))
            }
        }
    }
}

/// Now as RFC 3339 in UTC (no date crate needed for one timestamp format).
pub(crate) fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    #[test]
    fn civil_dates() {
        assert_eq!(super::civil_from_days(0), (1970, 1, 1));
        assert_eq!(super::civil_from_days(20_786), (2026, 11, 29));
    }
}
