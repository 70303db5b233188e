//! `tollgate check`: validates the config, prints what it resolved per provider, agent and
//! bridge, and warns about what will not work (nobody can talk, nobody can approve, a sandbox
//! this kernel cannot enforce, secrets missing from the environment).

use super::{Failure, load_config};
use crate::config::{AccessId, AgentConfig, Config};
use crate::policy::mode::SandboxPolicy;
use crate::policy::sandbox::SandboxSupport;
use clap::Args;
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct CheckArgs {}

pub fn run(config_path: Option<&Path>, _args: &CheckArgs) -> Result<ExitCode, Failure> {
    let config = load_config(config_path)?;
    let support = crate::sandbox::probe();
    let (report, mut warnings) =
        describe(&config, support, |name| std::env::var_os(name).is_some());
    print!("{report}");
    // What the kernel says it allows is not the whole story (a container may still refuse a
    // step): where a confined shell is configured and looks possible, run one.
    let confined: Vec<&String> = config
        .agents
        .iter()
        .filter(|(_, a)| {
            a.sandbox != SandboxPolicy::DangerFullAccess
                && a.tools.iter().any(|t| t == "execute_command")
                && support.shortfall(a.sandbox).is_none()
        })
        .map(|(name, _)| name)
        .collect();
    if !confined.is_empty() {
        match crate::sandbox::confined_true(crate::agent::setup::helper_binary()) {
            Ok(()) => println!("sandbox: a trial command ran confined (namespaces, Landlock, seccomp)"),
            Err(why) => warnings.push(format!(
                "the sandbox could not run a trial command here, so shell commands of {} would fail: {why} (in a container, see docs/operating.md, \"Docker\"; or set sandbox = \"danger-full-access\" and let the container be the boundary)",
                confined.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", ")
            )),
        }
    }
    if warnings.is_empty() {
        println!("no warnings");
    } else {
        println!("warnings:");
        for warning in &warnings {
            println!("  - {warning}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn ids(list: &[AccessId]) -> String {
    if list.is_empty() {
        return "(none)".into();
    }
    list.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The report and its warnings; `is_set` says whether an environment variable exists.
pub fn describe(
    config: &Config,
    support: SandboxSupport,
    is_set: impl Fn(&str) -> bool,
) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut warnings = Vec::new();
    let set = |name: &str| if is_set(name) { "set" } else { "NOT SET" };
    let _ = writeln!(
        out,
        "config: {}",
        config.source.as_ref().map_or_else(
            || "(built-in defaults only)".to_string(),
            |p| p.display().to_string()
        )
    );
    let _ = writeln!(
        out,
        "store: {} (cache {} MB)",
        config.store.path.display(),
        config.store.cache_capacity_mb
    );
    if let Some(metrics) = &config.metrics {
        let _ = writeln!(
            out,
            "metrics: http://{0}/metrics and http://{0}/healthz (serve)",
            metrics.listen
        );
    }
    let _ = writeln!(
        out,
        "shell: {}",
        crate::sandbox::bash_path().map_or_else(
            || "none (bash is not installed: the shell tool is unavailable)".to_string(),
            |bash| format!("{} --noprofile --norc -c", bash.display())
        )
    );
    for (name, provider) in &config.providers {
        let key = match &provider.api_key_env {
            Some(env) => {
                if !is_set(env) {
                    warnings.push(format!(
                        "provider {name}: the key variable {env} is not set in this environment"
                    ));
                }
                format!("key from {env} ({})", set(env))
            }
            None => "no key".into(),
        };
        let _ = writeln!(
            out,
            "provider {name}: {} at {}, {key}",
            provider.kind.as_str(),
            provider.base_url
        );
    }
    if config.agents.is_empty() {
        warnings.push("no agents are configured: add an [agents.<name>] section".into());
    }
    for (name, agent) in &config.agents {
        describe_agent(&mut out, &mut warnings, name, agent, support);
    }
    if let Some(t) = &config.telegram {
        let agent = t.agent.as_deref().unwrap_or("?");
        let _ = writeln!(
            out,
            "telegram: agent {agent}, token from {} ({}), api {}",
            t.token_env,
            set(&t.token_env),
            t.api_url
        );
        let _ = writeln!(
            out,
            "  allowed_users {} · allowed_chats {} · admins {} · require_mention {} · approvals to {}",
            ids(&t.allowed_users),
            ids(&t.allowed_chats),
            ids(&t.admins),
            t.require_mention,
            t.approvals_to.as_str()
        );
        if !is_set(&t.token_env) {
            warnings.push(format!(
                "telegram: {} is not set, so the Telegram bridge will not start",
                t.token_env
            ));
        }
        access_warnings(&mut warnings, "telegram", &t.allowed_users, &t.admins, &[]);
        if t.allowed_chats.is_empty() {
            warnings.push(
                "telegram: allowed_chats is empty: only private chats are admitted, no groups"
                    .into(),
            );
        }
        if t.approvals_to == crate::config::ApprovalsTo::Admins {
            warnings.push(
                "telegram: approvals_to = \"admins\": Telegram lets a bot message only admins who have started a chat with it; each admin should send the bot /start, or their cards go to the requesting chat instead (the log names them)"
                    .into(),
            );
        }
    }
    if let Some(d) = &config.discord {
        let agent = d.agent.as_deref().unwrap_or("?");
        let _ = writeln!(
            out,
            "discord: agent {agent}, token from {} ({}), api {}",
            d.token_env,
            set(&d.token_env),
            d.api_url
        );
        let _ = writeln!(
            out,
            "  allowed_users {} · allowed_guilds {} · allowed_channels {} · admins {} · admin_roles {} · approvals to {}",
            ids(&d.allowed_users),
            ids(&d.allowed_guilds),
            ids(&d.allowed_channels),
            ids(&d.admins),
            ids(&d.admin_roles),
            d.approvals_to.as_str()
        );
        if !is_set(&d.token_env) {
            warnings.push(format!(
                "discord: {} is not set, so the Discord bridge will not start",
                d.token_env
            ));
        }
        access_warnings(
            &mut warnings,
            "discord",
            &d.allowed_users,
            &d.admins,
            &d.admin_roles,
        );
        if d.allowed_guilds.is_empty() && d.allowed_channels.is_empty() {
            warnings.push("discord: allowed_guilds and allowed_channels are empty: only direct messages are admitted".into());
        }
        let _ = writeln!(out, "  {}", message_content_note(d.message_content));
        if !d.require_mention && !d.message_content {
            warnings.push(
                "discord: require_mention = false without message_content = true: Discord delivers unaddressed guild messages without their text, so they are not answered; enable the Message Content intent and set message_content = true"
                    .into(),
            );
        }
        if let Some(shards) = d.shards {
            let _ = writeln!(
                out,
                "  shards {} to {} of {}",
                shards.first, shards.last, shards.total
            );
            if shards.first != 0 {
                warnings.push(format!(
                    "discord: this process runs shards {} to {}, not shard 0: Discord delivers every DM on shard 0, so DM sessions and approvals_to = \"admins\" cards belong to the process that runs it",
                    shards.first, shards.last
                ));
            }
        }
        if d.approvals_to == crate::config::ApprovalsTo::Admins && !d.admin_roles.is_empty() {
            warnings.push(
                "discord: approvals_to = \"admins\" sends cards to the DMs of the users in `admins` only: holders of admin_roles cannot be listed without the privileged members intent, so they answer cards in the channel"
                    .into(),
            );
        }
    }
    if config.telegram.is_none() && config.discord.is_none() {
        warnings.push(
            "no bridge is configured ([telegram] or [discord]): `serve` has nothing to run".into(),
        );
    }
    (out, warnings)
}

/// What the Message Content setting means for who the bot hears.
fn message_content_note(enabled: bool) -> &'static str {
    if enabled {
        "message_content = true: every message in a thread the bot opened continues it (enable the privileged Message Content intent in the developer portal, or Discord refuses the connection)"
    } else {
        "message_content = false: the bot reads DMs, messages that mention it and replies to it (no privileged intent); in its threads, users mention or reply to continue"
    }
}

/// The agent's companion models: what is bound (consent to send that kind of file there), what
/// a picker may offer, and what cannot work.
fn describe_companions(
    out: &mut String,
    warnings: &mut Vec<String>,
    name: &str,
    agent: &AgentConfig,
) {
    for (role, companion) in &agent.companions {
        let _ = writeln!(
            out,
            "  companion {role} = {companion} (bound: files of this kind are sent there)"
        );
        if role.starts_with("generate:") {
            warnings.push(format!(
                "agents.{name}.companions: {role} is reserved: no tool generates media yet"
            ));
        }
    }
    for (role, choices) in &agent.companion_choices {
        let _ = writeln!(out, "  companion choices {role}: {}", choices.join(", "));
    }
    let has_tool = agent.tools.iter().any(|t| t == "analyze_media");
    let analyzes = |r: &String| r.starts_with("analyze:");
    if has_tool && !agent.companions.keys().any(analyzes) {
        let fix = if agent.companion_choices.keys().any(analyzes) {
            "each call asks an admin to pick from companion_choices (and fails where nobody can pick)"
        } else {
            "every call fails"
        };
        warnings.push(format!(
            "agents.{name}: analyze_media is offered but no analyze:* companion is bound: {fix} until one is bound in [agents.{name}.companions]"
        ));
    }
    if agent.transcribe_voice && !agent.companions.contains_key("analyze:audio") {
        warnings.push(format!(
            "agents.{name}: transcribe_voice = true needs an analyze:audio companion in [agents.{name}.companions]; voice notes arrive untranscribed until one is bound"
        ));
    }
}

fn describe_agent(
    out: &mut String,
    warnings: &mut Vec<String>,
    name: &str,
    agent: &AgentConfig,
    support: SandboxSupport,
) {
    let _ = writeln!(
        out,
        "agent {name}: provider {}, model {}, classifier {}",
        agent.provider,
        agent.model,
        agent.classifier_model.as_deref().unwrap_or(&agent.model)
    );
    let _ = writeln!(
        out,
        "  approval {}, sandbox {}, network {}, approval timeout {}s, max rounds {}",
        agent.approval,
        agent.sandbox,
        if agent.network_access { "on" } else { "off" },
        agent.approval_timeout_secs,
        agent.max_rounds
    );
    if let Some(ws) = &agent.workspace {
        let _ = writeln!(out, "  workspace {}", ws.display());
    }
    for (label, roots) in [
        ("writable_roots", &agent.writable_roots),
        ("readable_roots", &agent.readable_roots),
    ] {
        if !roots.is_empty() {
            let list: Vec<String> = roots.iter().map(|p| p.display().to_string()).collect();
            let _ = writeln!(out, "  {label} {}", list.join(", "));
        }
    }
    if !agent.private_hosts.is_empty() {
        let hosts: Vec<String> = agent
            .private_hosts
            .iter()
            .map(ToString::to_string)
            .collect();
        let _ = writeln!(out, "  private_hosts {}", hosts.join(", "));
    }
    let _ = writeln!(out, "  tools {}", agent.tools.join(", "));
    describe_companions(out, warnings, name, agent);
    if !agent.denied_tools.is_empty() {
        let _ = writeln!(out, "  denied_tools {}", agent.denied_tools.join(", "));
    }
    for (key, policy) in &agent.tool_approval {
        let _ = writeln!(out, "  tool_approval {key} = {}", policy.decision());
    }
    for (server, mcp) in &agent.mcp {
        let trust = if mcp.trusted {
            format!(
                "trusted, tier {}",
                mcp.tier
                    .map_or("high-risk (none given)".to_string(), |t| t.to_string())
            )
        } else {
            "untrusted: every tool high-risk".into()
        };
        let _ = writeln!(
            out,
            "  mcp {server}: {} {} ({trust}; {}; starts when a session first needs it)",
            mcp.command,
            mcp.args.join(" "),
            if mcp.sandbox {
                "sandboxed"
            } else {
                "NOT sandboxed"
            }
        );
        if !mcp.sandbox {
            warnings.push(format!(
                "agent {name}: MCP server {server} runs outside the sandbox (`sandbox = false`): it can read and write every chat session's files"
            ));
        } else if agent.sandbox == SandboxPolicy::DangerFullAccess {
            warnings.push(format!(
                "agent {name}: MCP server {server} runs unconfined under danger-full-access: it can read and write every chat session's files"
            ));
        }
        if let Some(cwd) = &mcp.cwd
            && holds_the_sessions(agent, cwd)
        {
            warnings.push(format!(
                "agent {name}: MCP server {server}'s cwd {} holds the agent's workspace, so the server can read every chat session's files; leave cwd unset (the server then works in <workspace>/.mcp/{server})",
                cwd.display()
            ));
        }
    }
    for (label, roots) in [
        ("writable_roots", &agent.writable_roots),
        ("readable_roots", &agent.readable_roots),
    ] {
        for root in roots.iter().filter(|root| holds_the_sessions(agent, root)) {
            warnings.push(format!(
                "agent {name}: {label} {} holds the agent's workspace, so each chat session's commands and MCP servers can reach every other session's files",
                root.display()
            ));
        }
    }
    let has_shell = agent.tools.iter().any(|t| t == "execute_command")
        && !agent.denied_tools.iter().any(|t| t == "execute_command");
    if has_shell && !support.bash {
        warnings.push(format!(
            "agent {name}: {}; looked in {}",
            crate::policy::sandbox::NO_BASH,
            crate::sandbox::BASH_LOCATIONS.join(", ")
        ));
    }
    if let Some(shortfall) = support.shortfall(agent.sandbox)
        && (has_shell || !agent.mcp.is_empty())
    {
        warnings.push(format!(
            "agent {name}: {shortfall}; until then its shell commands are denied"
        ));
    }
    if agent.sandbox == SandboxPolicy::DangerFullAccess && has_shell {
        warnings.push(format!(
            "agent {name}: sandbox danger-full-access runs shell commands unconfined (approval is the only guard)"
        ));
    }
}

/// Whether `path` is the agent's workspace or a directory above it: whatever may read it may
/// read every session's directory.
fn holds_the_sessions(agent: &AgentConfig, path: &std::path::Path) -> bool {
    crate::gate::workspace_for(agent, None).starts_with(crate::policy::paths::canonical_root(path))
}

fn access_warnings(
    warnings: &mut Vec<String>,
    bridge: &str,
    allowed_users: &[AccessId],
    admins: &[AccessId],
    admin_roles: &[AccessId],
) {
    if allowed_users.is_empty() && admins.is_empty() && admin_roles.is_empty() {
        warnings.push(format!(
            "{bridge}: allowed_users and admins are both empty: nobody can talk to the bot"
        ));
    }
    if admins.is_empty() && admin_roles.is_empty() {
        warnings.push(format!(
            "{bridge}: no admins: nobody can approve, so every prompt waits until it times out"
        ));
    }
    if allowed_users.contains(&AccessId::Anyone) {
        warnings.push(format!(
            "{bridge}: allowed_users is [\"*\"]: anyone who can message the bot can use it, in a direct message too (the chat and channel lists do not apply there)"
        ));
    }
}
