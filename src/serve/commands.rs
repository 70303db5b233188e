//! The chat commands, registered with each platform's command menu. They act on the sender's
//! current session; `/mode`, `/sandbox` and `/allowlist` are for the bridge's admins only.

use super::sessions::Service;
use super::shared::Shared;
use super::worker::SessionWorker;
use crate::policy::mode::{ApprovalMode, SandboxPolicy};
use crate::policy::shell::approval_key::ApprovalKey;
use crate::store::Allowlists;
use tollgate_surface::CommandSpec;

const fn command(name: &'static str, description: &'static str, admin_only: bool) -> CommandSpec {
    CommandSpec {
        name,
        description,
        admin_only,
        args: None,
    }
}

const fn with_args(spec: CommandSpec, args: &'static str) -> CommandSpec {
    CommandSpec {
        args: Some(args),
        ..spec
    }
}

/// The command menu.
pub const COMMANDS: [CommandSpec; 8] = [
    command("help", "What this bot does and its commands", false),
    command("new", "Start a new conversation", false),
    command(
        "stop",
        "Stop the current run and drop queued messages",
        false,
    ),
    command("status", "Agent, mode, sandbox and what is running", false),
    command(
        "whoami",
        "Your id and this chat's id, for the operator's config",
        false,
    ),
    with_args(
        command("mode", "Admins: set the approval mode of this chat", true),
        "read-only, low-risk, high-risk or always",
    ),
    with_args(
        command("sandbox", "Admins: set the sandbox of this chat", true),
        "read-only, workspace-write or danger-full-access",
    ),
    with_args(
        command("allowlist", "Admins: list or revoke saved approvals", true),
        "empty to list; `revoke tool NAME` or `revoke command KEY`",
    ),
];

/// `/whoami`: the ids an operator writes into the config (`allowed_users`, `admins`,
/// `allowed_chats`, `allowed_guilds`/`allowed_channels`). Only admitted users ever see it.
#[must_use]
pub fn whoami(message: &tollgate_surface::Inbound) -> String {
    use tollgate_surface::{ChatKind, Platform};
    let chat = &message.chat;
    let platform = chat.platform.as_str();
    let mut text = format!(
        "You are {platform} user {} ({}).\n",
        message.sender.id, message.sender.display
    );
    text.push_str(&match (chat.platform, chat.kind) {
        (_, ChatKind::Private) => {
            "This is a private chat with the bot (allowed by `allowed_users` or `admins`).".into()
        }
        (Platform::Discord, ChatKind::Group) => {
            let mut place = format!("This is channel {}", chat.parent.unwrap_or(chat.id));
            if let Some(thread) = chat.thread {
                place.push_str(&format!(" (thread {thread})"));
            }
            if let Some(guild) = chat.guild {
                place.push_str(&format!(" in guild {guild}"));
            }
            format!("{place}: `allowed_channels` or `allowed_guilds` admit it.")
        }
        (_, ChatKind::Group) => format!(
            "This is chat {}{}: `allowed_chats` admits it.",
            chat.id,
            chat.thread
                .map(|t| format!(" (topic {t})"))
                .unwrap_or_default()
        ),
    });
    text
}

/// `/name args` → (`name`, `args`). The bridge has already written a command addressed to this
/// bot without its address; one still carrying an address (`/stop@other_bot`) is for another
/// bot and is not a command here.
#[must_use]
pub fn parse_command(text: &str) -> Option<(&str, &str)> {
    let rest = text.trim().strip_prefix('/')?;
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    COMMANDS
        .iter()
        .find(|c| c.name == name)
        .map(|c| (c.name, args.trim()))
}

/// Who is asking: an admin of this chat only (a Discord admin by role, whose role makes an
/// admin of one guild) or of everything the agent serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admin {
    No,
    OfThisChat,
    OfTheAgent,
}

/// Runs a command; returns the reply.
pub fn run_command(
    service: &Service,
    worker: &SessionWorker,
    name: &str,
    args: &str,
    admin: Admin,
) -> String {
    let admin_only = COMMANDS.iter().any(|c| c.name == name && c.admin_only);
    if admin_only && admin == Admin::No {
        return format!("Only this bot's admins can use /{name}.");
    }
    let shared = &service.shared;
    let policy = &worker.assembled.session;
    match name {
        "help" => help(&worker.agent),
        "new" => {
            // The worker clears the transcript itself, after the run it stopped has closed its
            // calls (see worker.rs); an evicted worker has no run, so it is cleared here.
            if worker.reset() == super::worker::Queued::Evicted
                && let Err(e) = worker
                    .assembled
                    .runner
                    .runs
                    .save_transcript(&worker.key, &[])
            {
                shared.log(&format!(
                    "session {}: clearing the transcript: {e}",
                    worker.key
                ));
                return "The conversation could not be reset; try /new again.".into();
            }
            "Started a new conversation: earlier messages are forgotten.".into()
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
                let (whose, others) = whose(service, worker);
                format!(
                    "Approval mode of {whose} is now `{mode}`{others}; waiting approvals were decided again."
                )
            }
            Err(e) => format!("{e}. Usage: /mode MODE"),
        },
        "sandbox" => match args.parse::<SandboxPolicy>() {
            Ok(sandbox) => match policy.set_sandbox(sandbox) {
                Ok(()) if super::dials::save(shared, policy).is_err() => {
                    format!("Sandbox set to `{sandbox}` for now, but it could not be saved.")
                }
                Ok(()) => {
                    let (whose, others) = whose(service, worker);
                    format!(
                        "Sandbox of {whose} is now `{sandbox}`{others}; waiting approvals were decided again."
                    )
                }
                Err(e) => e.to_string(),
            },
            Err(e) => format!("{e}. Usage: /sandbox POLICY"),
        },
        "allowlist" => allowlist(service, worker, args, admin == Admin::OfTheAgent),
        _ => help(&worker.agent),
    }
}

/// Whose dials a command changed: the chat's, or, in a group whose members each have a session
/// of their own (`group_sessions_per_user`), the asking admin's alone — said so, or an admin
/// tightening a group would believe its other members' sessions tightened too.
fn whose(service: &Service, worker: &SessionWorker) -> (&'static str, &'static str) {
    let per_user = service
        .shared
        .bridge(worker.chat.platform)
        .is_some_and(|b| b.settings.group_sessions_per_user);
    if per_user && worker.chat.kind == tollgate_surface::ChatKind::Group {
        (
            "your own session in this chat",
            " (each member here has a session of their own; theirs are unchanged)",
        )
    } else {
        ("this chat", "")
    }
}

fn help(agent: &str) -> String {
    let mut text = format!(
        "I am agent `{agent}`. Tell me what you need. Actions that need approval show a card that only this bot's admins can answer.\n"
    );
    for c in COMMANDS {
        text.push_str(&format!("/{} — {}\n", c.name, c.description));
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
        worker.agent,
        worker.key,
        snapshot.dials.mode,
        snapshot.dials.sandbox,
        if worker.is_busy() { "working" } else { "idle" },
    )
}

/// `/allowlist`. What holds for the whole agent (command keys, companion bindings) is listed
/// and revoked by admins of the agent only: it reaches every guild and chat the agent serves,
/// and an admin by role is an admin of one guild.
fn allowlist(service: &Service, worker: &SessionWorker, args: &str, agent_admin: bool) -> String {
    let shared = &service.shared;
    let policy = &worker.assembled.session;
    let mut words = args.split_whitespace();
    match words.next() {
        None | Some("list") => {
            let lists = Allowlists::new(shared.store.clone());
            let tools = lists.tool_entries(Some(&worker.key)).unwrap_or_default();
            let (commands, bound) = if agent_admin {
                (
                    lists
                        .command_entries(Some(&worker.agent))
                        .unwrap_or_default(),
                    crate::companions::bindings::entries(shared.store.as_ref(), &worker.agent)
                        .unwrap_or_default(),
                )
            } else {
                Default::default()
            };
            let mut text = String::new();
            if !agent_admin {
                text.push_str(AGENT_WIDE_FOR_ID_ADMINS);
                text.push('\n');
            }
            if tools.is_empty() && commands.is_empty() && bound.is_empty() {
                text.push_str("Nothing is allowed always here.");
                return text;
            }
            for (role, b) in &bound {
                text.push_str(&format!(
                    "companion {role} → `{}` (agent {}) — bound by {} at {}\n",
                    b.companion, worker.agent, b.by, b.at
                ));
            }
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
            text.push_str(if agent_admin {
                "Revoke with /allowlist revoke tool NAME, /allowlist revoke command KEY, or /allowlist revoke companion ROLE"
            } else {
                "Revoke with /allowlist revoke tool NAME"
            });
            text
        }
        Some("revoke") => {
            let kind = words.next();
            let rest: Vec<&str> = words.collect();
            let target = rest.join(" ");
            if !agent_admin && matches!(kind, Some("companion" | "command")) {
                return AGENT_WIDE_FOR_ID_ADMINS.into();
            }
            let revoked = match kind {
                Some("companion") if !target.is_empty() => crate::companions::bindings::revoke(
                    shared.store.as_ref(),
                    &worker.agent,
                    &target,
                ),
                Some("tool") if !target.is_empty() => policy.revoke_tool(&target),
                Some("command") => match target.parse::<ApprovalKey>() {
                    Ok(key) => policy.revoke_command(&key),
                    Err(e) => return format!("`{target}` is not a command key: {e}"),
                },
                _ => {
                    return "Usage: /allowlist revoke tool NAME | command KEY | companion ROLE"
                        .into();
                }
            };
            // A revoked command key is the agent's: every live session rereads its allowlists
            // before the admin is told (whatever the revoke's outcome: a reread that cannot
            // read the store keeps no grant).
            service.reload_allowlists();
            match revoked {
                Ok(true) => format!("Revoked `{target}`."),
                Ok(false) => format!("`{target}` was not allowed."),
                Err(e) => format!("The change could not be saved: {e}"),
            }
        }
        Some(other) => format!("Unknown /allowlist action `{other}`: use list or revoke."),
    }
}

/// Why an admin by role is not shown, and cannot revoke, what holds for the whole agent.
const AGENT_WIDE_FOR_ID_ADMINS: &str = "Commands and companions allowed for the whole agent \
     are listed and revoked by admins listed by id (`admins`): an admin by role is an admin of \
     one guild.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_parsed_without_an_address_only() {
        assert_eq!(parse_command("/stop"), Some(("stop", "")));
        assert_eq!(
            parse_command("/mode  high-risk "),
            Some(("mode", "high-risk"))
        );
        assert_eq!(parse_command("/stop@other_bot"), None);
        assert_eq!(parse_command("/unknown"), None);
        assert_eq!(parse_command("stop"), None);
    }
}
