//! The chat commands, registered with Telegram's command menu. They act on the sender's current
//! session; `/mode`, `/sandbox` and `/allowlist` are for the bridge's admins only.

use super::shared::Shared;
use super::worker::SessionWorker;
use crate::policy::mode::{ApprovalMode, SandboxPolicy};
use crate::policy::shell::approval_key::ApprovalKey;
use crate::store::Allowlists;

/// The command menu: name and description.
pub const COMMANDS: [(&str, &str); 7] = [
    ("help", "What this bot does and its commands"),
    ("new", "Start a new conversation"),
    ("stop", "Stop the current run and drop queued messages"),
    ("status", "Agent, mode, sandbox and what is running"),
    ("mode", "Admins: set the approval mode of this chat"),
    ("sandbox", "Admins: set the sandbox of this chat"),
    ("allowlist", "Admins: list or revoke saved approvals"),
];

const ADMIN_ONLY: [&str; 3] = ["mode", "sandbox", "allowlist"];

/// `/name@bot args` → (`name`, `args`), for commands addressed to this bot (or to no bot).
#[must_use]
pub fn parse_command<'a>(text: &'a str, bot_username: &str) -> Option<(&'a str, &'a str)> {
    let rest = text.trim().strip_prefix('/')?;
    let (head, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let (name, addressee) = head.split_once('@').unwrap_or((head, ""));
    if !addressee.is_empty() && !addressee.eq_ignore_ascii_case(bot_username) {
        return None;
    }
    COMMANDS
        .iter()
        .any(|(known, _)| *known == name)
        .then_some((name, args.trim()))
}

/// Runs a command; returns the reply.
pub fn run_command(
    shared: &Shared,
    worker: &SessionWorker,
    name: &str,
    args: &str,
    is_admin: bool,
) -> String {
    if ADMIN_ONLY.contains(&name) && !is_admin {
        return format!("Only this bot's admins can use /{name}.");
    }
    let policy = &worker.assembled.session;
    match name {
        "help" => help(shared),
        "new" => {
            worker.stop();
            match shared.runs.save_transcript(&worker.key, &[]) {
                Ok(()) => "Started a new conversation: earlier messages are forgotten.".into(),
                Err(e) => format!("The conversation could not be reset: {e}"),
            }
        }
        "stop" => {
            if worker.stop() {
                "Stopped: the run was cancelled and queued messages dropped.".into()
            } else {
                "Nothing was running; queued messages (if any) were dropped.".into()
            }
        }
        "status" => status(shared, worker),
        "mode" => match args.parse::<ApprovalMode>() {
            Ok(mode) => {
                policy.set_mode(mode);
                if let Err(e) = super::dials::save(shared, policy) {
                    return format!("Mode set to `{mode}` for now, but it could not be saved: {e}");
                }
                format!(
                    "Approval mode of this chat is now `{mode}`; waiting approvals were decided again."
                )
            }
            Err(e) => format!("{e}. Usage: /mode MODE"),
        },
        "sandbox" => match args.parse::<SandboxPolicy>() {
            Ok(sandbox) => match policy.set_sandbox(sandbox) {
                Ok(()) if super::dials::save(shared, policy).is_err() => {
                    format!("Sandbox set to `{sandbox}` for now, but it could not be saved.")
                }
                Ok(()) => format!(
                    "Sandbox of this chat is now `{sandbox}`; waiting approvals were decided again."
                ),
                Err(e) => e,
            },
            Err(e) => format!("{e}. Usage: /sandbox POLICY"),
        },
        "allowlist" => allowlist(shared, worker, args),
        _ => help(shared),
    }
}

fn help(shared: &Shared) -> String {
    let mut text = format!(
        "I am agent `{}`. Tell me what you need. Actions that need approval show a card that only this bot's admins can answer.\n",
        shared.agent
    );
    for (name, description) in COMMANDS {
        text.push_str(&format!("/{name} — {description}\n"));
    }
    text
}

fn status(shared: &Shared, worker: &SessionWorker) -> String {
    let snapshot = worker.assembled.session.snapshot();
    let waiting = shared
        .approvals
        .waiting()
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.session == worker.key)
        .count();
    format!(
        "Agent `{}` · session `{}`\nMode `{}` · sandbox `{}`\n{} · {waiting} approval(s) waiting",
        shared.agent,
        worker.key,
        snapshot.dials.mode,
        snapshot.dials.sandbox,
        if worker.is_busy() { "working" } else { "idle" },
    )
}

fn allowlist(shared: &Shared, worker: &SessionWorker, args: &str) -> String {
    let policy = &worker.assembled.session;
    let mut words = args.split_whitespace();
    match words.next() {
        None | Some("list") => {
            let lists = Allowlists::new(shared.store.clone());
            let tools = lists.tool_entries(Some(&worker.key)).unwrap_or_default();
            let commands = lists
                .command_entries(Some(&shared.agent))
                .unwrap_or_default();
            if tools.is_empty() && commands.is_empty() {
                return "Nothing is allowed always here.".into();
            }
            let mut text = String::new();
            for t in tools {
                text.push_str(&format!(
                    "tool `{}` (this chat) — by {} at {}\n",
                    t.tool, t.by, t.at
                ));
            }
            for c in commands {
                text.push_str(&format!(
                    "command `{}` (agent {}) — by {} at {}\n",
                    c.key, c.agent, c.by, c.at
                ));
            }
            text.push_str(
                "Revoke with /allowlist revoke tool NAME, or /allowlist revoke command KEY",
            );
            text
        }
        Some("revoke") => {
            let kind = words.next();
            let rest: Vec<&str> = words.collect();
            let target = rest.join(" ");
            let revoked = match kind {
                Some("tool") if !target.is_empty() => policy.revoke_tool(&target),
                Some("command") => match target.parse::<ApprovalKey>() {
                    Ok(key) => policy.revoke_command(&key),
                    Err(e) => return format!("`{target}` is not a command key: {e}"),
                },
                _ => {
                    return "Usage: /allowlist revoke tool NAME | /allowlist revoke command KEY"
                        .into();
                }
            };
            match revoked {
                Ok(true) => format!("Revoked `{target}`."),
                Ok(false) => format!("`{target}` was not allowed."),
                Err(e) => format!("The change could not be saved: {e}"),
            }
        }
        Some(other) => format!("Unknown /allowlist action `{other}`: use list or revoke."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_parsed_for_this_bot_only() {
        assert_eq!(parse_command("/stop", "toll_bot"), Some(("stop", "")));
        assert_eq!(
            parse_command("/mode@toll_bot  high-risk ", "toll_bot"),
            Some(("mode", "high-risk"))
        );
        assert_eq!(parse_command("/stop@other_bot", "toll_bot"), None);
        assert_eq!(parse_command("/unknown", "toll_bot"), None);
        assert_eq!(parse_command("stop", "toll_bot"), None);
    }
}
