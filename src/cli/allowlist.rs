//! `tollgate allowlist`: list, add and revoke saved approvals. Adding is how an operator lets an
//! unattended agent run a command nobody can approve at run time.

use super::{Failure, Io, agent, load_config};
use crate::clock::now_rfc3339;
use crate::policy::shell::ShellAnalysis;
use crate::policy::shell::approval_key::ApprovalKey;
use crate::store::{Allowlists, CommandEntry};
use clap::Subcommand;
use std::path::Path;
use std::process::ExitCode;

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
    /// Revoke a command key of an agent, a companion bound on a picker card, or a tool
    /// approval of a session.
    Revoke {
        #[arg(long)]
        agent: Option<String>,
        /// The key as listed: `git status` or `=rm old.log`.
        #[arg(long)]
        key: Option<String>,
        /// A companion role bound on a card (`analyze:image`), with --agent.
        #[arg(long)]
        companion: Option<String>,
        #[arg(long)]
        session: Option<String>,
        #[arg(long)]
        tool: Option<String>,
    },
}

pub fn run(
    config_path: Option<&Path>,
    command: &AllowlistCommand,
    io: &mut Io,
) -> Result<ExitCode, Failure> {
    let config = load_config(config_path)?;
    let runtime = |e: crate::store::StoreError| Failure::runtime(e.to_string());
    match command {
        AllowlistCommand::List {
            agent: agent_name,
            session,
        } => {
            let Some(store) = io.existing_store(&config)? else {
                io_say!(
                    io,
                    "(no store yet at {}: nothing saved)",
                    config.store.path.display()
                );
                return Ok(ExitCode::SUCCESS);
            };
            for name in config.agents.keys() {
                if agent_name.as_ref().is_some_and(|a| a != name) {
                    continue;
                }
                let bound =
                    crate::companions::bindings::entries(store.as_ref(), name).map_err(runtime)?;
                for (role, b) in bound {
                    io_say!(
                        io,
                        "agent {name}\tcompanion {role}\tbound to {} by {} at {}",
                        b.companion,
                        b.by,
                        b.at
                    );
                }
            }
            let lists = Allowlists::new(store);
            for entry in lists
                .command_entries(agent_name.as_deref())
                .map_err(runtime)?
            {
                io_say!(
                    io,
                    "agent {}\tcommand {}\tcovers {}\tby {} at {}",
                    entry.agent,
                    entry.key,
                    entry.key.describe(),
                    entry.by,
                    entry.at
                );
            }
            for entry in lists.tool_entries(session.as_deref()).map_err(runtime)? {
                io_say!(
                    io,
                    "session {}\ttool {}\tby {} at {}",
                    entry.session,
                    entry.tool,
                    entry.by,
                    entry.at
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
            let lists = Allowlists::new(io.open_store(&config)?);
            lists
                .add_command(&CommandEntry {
                    agent: agent_name.clone(),
                    key: key.clone(),
                    by: "cli".into(),
                    at: now_rfc3339(),
                })
                .map_err(runtime)?;
            io_say!(
                io,
                "saved for agent {agent_name}: {key} (covers {})",
                key.describe()
            );
            Ok(ExitCode::SUCCESS)
        }
        AllowlistCommand::Revoke {
            agent: agent_name,
            key,
            companion,
            session,
            tool,
        } => {
            let store = io
                .existing_store(&config)?
                .ok_or_else(|| Failure::usage("nothing is saved yet (no store)"))?;
            if let (Some(a), Some(role), None, None, None) =
                (agent_name, companion, key, session, tool)
            {
                let removed = crate::companions::bindings::revoke(store.as_ref(), a, role)
                    .map_err(runtime)?;
                return if removed {
                    io_say!(io, "revoked");
                    Ok(ExitCode::SUCCESS)
                } else {
                    Err(Failure::runtime("no such entry"))
                };
            }
            let lists = Allowlists::new(store);
            let removed = match (agent_name, key, session, tool) {
                (Some(a), Some(k), None, None) => {
                    let key: ApprovalKey = k.parse().map_err(Failure::usage)?;
                    lists.revoke_command(a, &key).map_err(runtime)?
                }
                (None, None, Some(s), Some(t)) => lists.revoke_tool(s, t).map_err(runtime)?,
                _ => {
                    return Err(Failure::usage(
                        "give --agent with --key or --companion, or --session with --tool",
                    ));
                }
            };
            if removed {
                io_say!(io, "revoked");
                Ok(ExitCode::SUCCESS)
            } else {
                Err(Failure::runtime("no such entry"))
            }
        }
    }
}
