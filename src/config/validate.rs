//! Checks that need more than one key: names, references between sections, tools and policy keys
//! that must exist, and relative paths resolved against the config file's directory.

use super::tool_names::BUILTIN_TOOLS;
use super::{AccessId, Config, ConfigError, Origins};
use crate::policy::tier::Tier;
use std::path::{Path, PathBuf};

/// Models a picker may offer for one role.
const MAX_COMPANION_CHOICES: usize = 12;

pub(super) fn validate(config: &mut Config, origins: &Origins) -> Result<(), ConfigError> {
    let base = config
        .source
        .as_deref()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("/"));
    config.store.path = resolve(&base, &config.store.path);
    refuse_where_every_command_reads(
        origins,
        "store.path",
        &config.store.path,
        "any chat's commands could read every session's transcripts in the store",
        "/var/lib/tollgate/store",
    )?;
    if config.store.cache_capacity_mb == 0 {
        return Err(origins.error("store.cache_capacity_mb", "must be at least 1"));
    }
    if config.store.retain_days == 0 {
        return Err(origins.error(
            "store.retain_days",
            "must be at least 1 (it is how long the audit log and finished runs are kept)",
        ));
    }

    if let Some(metrics) = &config.metrics
        && metrics.address().is_none()
    {
        return Err(origins.error(
            "metrics.listen",
            format!(
                "`{}` is not an address and port (write it like \"127.0.0.1:9464\")",
                metrics.listen
            ),
        ));
    }

    for (name, provider) in &config.providers {
        let key = format!("providers.{name}");
        check_name(origins, &key, name, "provider")?;
        if !(provider.base_url.starts_with("http://") || provider.base_url.starts_with("https://"))
        {
            return Err(origins.error(
                &format!("{key}.base_url"),
                format!("`{}` is not an http(s) URL", provider.base_url),
            ));
        }
        if let Some(env) = &provider.api_key_env {
            check_env_name(origins, &format!("{key}.api_key_env"), env)?;
        }
    }

    let agent_names: Vec<String> = config.agents.keys().cloned().collect();
    for (name, agent) in &mut config.agents {
        let key = format!("agents.{name}");
        check_name(origins, &key, name, "agent")?;
        if !config.providers.contains_key(&agent.provider) {
            return Err(origins.error(
                &format!("{key}.provider"),
                format!(
                    "names the provider `{}`, which is not configured (add [providers.{}])",
                    agent.provider, agent.provider
                ),
            ));
        }
        for tool in &agent.tools {
            if !BUILTIN_TOOLS.contains(&tool.as_str()) {
                return Err(origins.error(
                    &format!("{key}.tools"),
                    format!(
                        "unknown tool `{tool}`; built-in tools are {} (MCP tools come from [{key}.mcp.<server>])",
                        BUILTIN_TOOLS.join(", ")
                    ),
                ));
            }
        }
        let companion = |field: &str, text: &str| -> Result<(), ConfigError> {
            let parsed: crate::companions::Companion =
                text.parse().map_err(|e: String| origins.error(field, e))?;
            if !config.providers.contains_key(&parsed.provider) {
                return Err(origins.error(
                    field,
                    format!(
                        "`{text}` names the provider `{}`, which is not configured (add [providers.{}])",
                        parsed.provider, parsed.provider
                    ),
                ));
            }
            Ok(())
        };
        for (role, bound) in &agent.companions {
            let field = format!("{key}.companions.\"{role}\"");
            role.parse::<crate::companions::Role>()
                .map_err(|e| origins.error(&field, e))?;
            companion(&field, bound)?;
        }
        for (role, choices) in &agent.companion_choices {
            let field = format!("{key}.companion_choices.\"{role}\"");
            role.parse::<crate::companions::Role>()
                .map_err(|e| origins.error(&field, e))?;
            if choices.len() > MAX_COMPANION_CHOICES {
                return Err(origins.error(
                    &field,
                    format!(
                        "{} choices; a picker card offers at most {MAX_COMPANION_CHOICES} (each with its \"Bind\": Discord's select holds 25 entries)",
                        choices.len()
                    ),
                ));
            }
            for choice in choices {
                companion(&field, choice)?;
            }
        }
        if agent.media_max_mb == 0 {
            return Err(origins.error(&format!("{key}.media_max_mb"), "must be at least 1 (MiB)"));
        }
        for server in agent.mcp.keys() {
            if server.is_empty()
                || !server
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            {
                return Err(origins.error(
                    &format!("{key}.mcp.{server}"),
                    "MCP server names are lowercase letters and digits only ([a-z0-9]+)",
                ));
            }
        }
        let is_known_key = |policy_key: &str| {
            BUILTIN_TOOLS.contains(&policy_key)
                || agent.mcp.keys().any(|server| {
                    policy_key
                        .strip_prefix("mcp_")
                        .and_then(|rest| rest.strip_prefix(server.as_str()))
                        .and_then(|rest| rest.strip_prefix('_'))
                        .is_some_and(|tool| !tool.is_empty())
                })
        };
        for denied in &agent.denied_tools {
            if !is_known_key(denied) {
                return Err(origins.error(
                    &format!("{key}.denied_tools"),
                    format!(
                        "unknown tool `{denied}`: name a built-in tool or `mcp_<server>_<tool>` of a server configured for this agent"
                    ),
                ));
            }
        }
        for policy_key in agent.tool_approval.keys() {
            if !is_known_key(policy_key) {
                return Err(origins.error(
                    &format!("{key}.tool_approval.{policy_key}"),
                    format!(
                        "unknown policy key `{policy_key}`: name a built-in tool or `mcp_<server>_<tool>` of a server configured for this agent (a typo here would silently disable the rule)"
                    ),
                ));
            }
        }
        for (server, mcp) in &mut agent.mcp {
            let mkey = format!("{key}.mcp.{server}");
            if !mcp.trusted && (mcp.tier.is_some() || !mcp.tool_tiers.is_empty()) {
                return Err(origins.error(
                    &format!("{mkey}.tier"),
                    "`tier` and `tool_tiers` apply only to a server with `trusted = true`; an untrusted server's tools are high-risk",
                ));
            }
            let tiers = mcp.tier.iter().chain(mcp.tool_tiers.values());
            if tiers.into_iter().any(|t| *t == Tier::Unknown) {
                return Err(origins.error(
                    &format!("{mkey}.tier"),
                    "an MCP tier is read-only, low-risk or high-risk",
                ));
            }
            if mcp.command.trim().is_empty() {
                return Err(origins.error(&format!("{mkey}.command"), "must not be empty"));
            }
            if let Some(cwd) = &mcp.cwd {
                mcp.cwd = Some(resolve(&base, cwd));
            }
        }
        for (field, value) in [
            ("approval_timeout_secs", agent.approval_timeout_secs),
            ("max_rounds", u64::from(agent.max_rounds)),
            ("classifier_timeout_secs", agent.classifier_timeout_secs),
            ("tool_timeout_secs", agent.tool_timeout_secs),
            ("max_concurrent_tools", agent.max_concurrent_tools as u64),
            ("max_tokens", u64::from(agent.max_tokens)),
        ] {
            if value == 0 {
                return Err(origins.error(&format!("{key}.{field}"), "must be at least 1"));
            }
        }
        for variable in &agent.env_allowlist {
            check_env_name(origins, &format!("{key}.env_allowlist"), variable)?;
        }
        for dir in &agent.shell_path {
            let text = dir.display().to_string();
            if !dir.is_absolute() || text.contains(':') {
                return Err(origins.error(
                    &format!("{key}.shell_path"),
                    format!("`{text}` must be an absolute directory without `:`"),
                ));
            }
        }
        let workspace = agent
            .workspace
            .clone()
            .unwrap_or_else(|| PathBuf::from("data/workspaces").join(name));
        let workspace = resolve(&base, &workspace);
        refuse_where_every_command_reads(
            origins,
            &format!("{key}.workspace"),
            &workspace,
            "each chat's commands could read every other chat's files",
            &format!("/var/lib/tollgate/workspaces/{name}"),
        )?;
        agent.workspace = Some(workspace);
        agent.writable_roots = agent
            .writable_roots
            .iter()
            .map(|p| resolve(&base, p))
            .collect();
        agent.readable_roots = agent
            .readable_roots
            .iter()
            .map(|p| resolve(&base, p))
            .collect();
        for (field, roots) in [
            ("readable_roots", &agent.readable_roots),
            ("writable_roots", &agent.writable_roots),
        ] {
            refuse_a_root_holding_the_service(
                origins,
                &format!("{key}.{field}"),
                roots,
                &config.store.path,
            )?;
        }
    }

    if let Some(telegram) = &mut config.telegram {
        check_env_name(origins, "telegram.token_env", &telegram.token_env)?;
        telegram.agent = Some(bridge_agent(
            origins,
            "telegram",
            telegram.agent.take(),
            &agent_names,
        )?);
        check_admins(origins, "telegram.admins", &telegram.admins)?;
    }
    if let Some(discord) = &mut config.discord {
        check_env_name(origins, "discord.token_env", &discord.token_env)?;
        discord.agent = Some(bridge_agent(
            origins,
            "discord",
            discord.agent.take(),
            &agent_names,
        )?);
        check_admins(origins, "discord.admins", &discord.admins)?;
        if discord.admin_roles.contains(&AccessId::Anyone) {
            return Err(origins.error(
                "discord.admin_roles",
                "\"*\" is refused here: name the roles whose holders may approve",
            ));
        }
        if let Some(shards) = discord.shards
            && (shards.total == 0 || shards.first > shards.last || shards.last >= shards.total)
        {
            return Err(origins.error(
                "discord.shards",
                "needs first <= last < total (shards are numbered from 0)",
            ));
        }
        if discord.max_attachment_mb == 0 {
            return Err(origins.error("discord.max_attachment_mb", "must be at least 1 (MiB)"));
        }
    }
    Ok(())
}

fn resolve(base: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

fn check_name(origins: &Origins, key: &str, name: &str, what: &str) -> Result<(), ConfigError> {
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if valid {
        return Ok(());
    }
    Err(origins.error(
        key,
        format!("{what} names are lowercase letters, digits, `_` and `-` ([a-z0-9_-]+)"),
    ))
}

fn check_env_name(origins: &Origins, key: &str, name: &str) -> Result<(), ConfigError> {
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if valid {
        return Ok(());
    }
    Err(origins.error(
        key,
        format!("`{name}` is not an environment variable name (write the variable's name, never the secret itself)"),
    ))
}

fn check_admins(origins: &Origins, key: &str, admins: &[AccessId]) -> Result<(), ConfigError> {
    if admins.contains(&AccessId::Anyone) {
        return Err(origins.error(
            key,
            "\"*\" is refused in admins: anyone could approve; list the numeric ids of the people who may",
        ));
    }
    Ok(())
}

fn bridge_agent(
    origins: &Origins,
    bridge: &str,
    named: Option<String>,
    agents: &[String],
) -> Result<String, ConfigError> {
    let key = format!("{bridge}.agent");
    match named {
        Some(agent) if agents.contains(&agent) => Ok(agent),
        Some(agent) => Err(origins.error(
            &key,
            format!("names the agent `{agent}`, which is not configured (add [agents.{agent}])"),
        )),
        None if agents.len() == 1 => Ok(agents[0].clone()),
        None => Err(origins.error(
            &key,
            format!(
                "must name the agent that answers ({})",
                if agents.is_empty() {
                    "no agent is configured".to_string()
                } else {
                    format!("one of {}", agents.join(", "))
                }
            ),
        )),
    }
}

/// Refuses `path` (config key `key`) under a system directory every confined command may read
/// (`sandbox::SYSTEM_READ`: Landlock can only allow, so nothing under it can be kept from
/// them), saying what it would expose and where to put it `instead`.
/// A root the agent's commands may read (or write) must not hold the store (every session's
/// transcripts and saved approvals) or the config file: Landlock can only allow, so nothing
/// under a root can be kept from its commands (the file tools refuse these paths, commands
/// cannot).
fn refuse_a_root_holding_the_service(
    origins: &Origins,
    key: &str,
    roots: &[PathBuf],
    store: &Path,
) -> Result<(), ConfigError> {
    use crate::policy::paths::{canonical_root, is_under};
    let store = canonical_root(store);
    let config_file = origins.file().map(canonical_root);
    for root in roots {
        let resolved = canonical_root(root);
        let held = if is_under(&store, &resolved) {
            Some(format!("the store ({})", store.display()))
        } else {
            config_file
                .as_ref()
                .filter(|file| is_under(file, &resolved))
                .map(|file| format!("the config file ({})", file.display()))
        };
        if let Some(held) = held {
            return Err(origins.error(
                key,
                format!(
                    "`{}` holds {held}, which the agent's commands would then reach: list a \
                     directory beside it instead",
                    root.display()
                ),
            ));
        }
    }
    Ok(())
}

fn refuse_where_every_command_reads(
    origins: &Origins,
    key: &str,
    path: &Path,
    exposed: &str,
    instead: &str,
) -> Result<(), ConfigError> {
    use crate::policy::paths::{canonical_root, is_under};
    let resolved = canonical_root(path);
    let Some(system) = crate::sandbox::SYSTEM_READ.iter().find(|system| {
        let system = Path::new(system);
        is_under(&resolved, system) || is_under(&resolved, &canonical_root(system))
    }) else {
        return Ok(());
    };
    Err(origins.error(
        key,
        format!(
            "`{}` is under {system}, which every sandboxed command may read (the system's \
             programs live there), so {exposed}: put it elsewhere, e.g. {instead}",
            path.display()
        ),
    ))
}
