use super::*;
use std::path::PathBuf;

fn load(text: &str) -> Result<Config, ConfigError> {
    load_with_env(
        Some(PathBuf::from("/cfg/tollgate.toml")),
        Some(text),
        Default::default(),
    )
}

const BASE: &str = r#"
[providers.local]
kind = "openai"
base_url = "http://localhost:11434/v1"

[agents.helper]
provider = "local"
model = "m"
"#;

fn with(extra: &str) -> String {
    format!("{BASE}\n{extra}")
}

#[test]
fn the_documented_example_loads() {
    let text = include_str!("../../config/example.toml");
    let config = load(text).unwrap();
    let agent = &config.agents["helper"];
    assert_eq!(agent.tools, ["read_file", "ls", "grep", "execute_command"]);
    assert_eq!(config.store.path, PathBuf::from("/cfg/data/store"));
    assert_eq!(
        agent.workspace.as_deref(),
        Some(std::path::Path::new("/cfg/data/workspaces/helper"))
    );
    assert_eq!(
        config.telegram.as_ref().unwrap().agent.as_deref(),
        Some("helper")
    );
}

#[test]
fn defaults_fill_in() {
    let config = load(BASE).unwrap();
    let agent = &config.agents["helper"];
    assert_eq!(agent.approval_timeout_secs, 600);
    assert_eq!(agent.max_rounds, 25);
    assert_eq!(config.store.cache_capacity_mb, 64);
    assert_eq!(
        agent.workspace.as_deref(),
        Some(std::path::Path::new("/cfg/data/workspaces/helper"))
    );
    assert!(
        !agent.tools.iter().any(|t| t == "execute_command"),
        "the shell is opt-in"
    );
}

/// Each bad config is an error naming the key and the file, never a panic.
#[test]
fn bad_config_names_key_and_file() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "[agents.helper.tool_approval]\nwrite_fil = \"deny\"",
            "agents.helper.tool_approval.write_fil",
            "unknown policy key",
        ),
        (
            "[agents.helper.tool_approval]\nmcp_nope_x = \"deny\"",
            "agents.helper.tool_approval.mcp_nope_x",
            "unknown policy key",
        ),
        (
            "[agents.helper.tool_approval]\nwrite_file = \"maybe\"",
            "agents.helper.tool_approval.write_file",
            "unknown variant",
        ),
        ("[telegram]\nadmins = [\"*\"]", "telegram.admins", "refused"),
        (
            "[metrics]\nlisten = \"9464\"",
            "metrics.listen",
            "not an address and port",
        ),
        (
            "[telegram]\nagent = \"ghost\"",
            "telegram.agent",
            "not configured",
        ),
        (
            "[discord]\nagent = \"ghost\"",
            "discord.agent",
            "not configured",
        ),
        (
            "[telegram]\nallowed_users = [\"alice\"]",
            "telegram.allowed_users[0]",
            "not a numeric id",
        ),
        (
            "[agents.other]\nprovider = \"missing\"\nmodel = \"m\"",
            "agents.other.provider",
            "not configured",
        ),
        (
            "[agents.Bad]\nprovider = \"local\"\nmodel = \"m\"",
            "agents.Bad",
            "[a-z0-9_-]+",
        ),
        (
            "[agents.helper.mcp.my_fs]\ncommand = \"x\"",
            "agents.helper.mcp.my_fs",
            "[a-z0-9]+",
        ),
        (
            "[agents.helper.mcp.fs]\ncommand = \"x\"\ntier = \"read-only\"",
            "agents.helper.mcp.fs.tier",
            "trusted",
        ),
        (
            "[providers.local2]\nkind = \"openai\"\nbase_url = \"localhost\"",
            "providers.local2.base_url",
            "http(s)",
        ),
        (
            "[providers.p]\nkind = \"gemini\"\nbase_url = \"http://x\"",
            "providers.p.kind",
            "unknown variant",
        ),
        (
            "[providers.p]\nkind = \"openai\"\nbase_url = \"http://x\"\napi_key_env = \"sk-123\"",
            "providers.p.api_key_env",
            "not an environment variable name",
        ),
        (
            "[store]\npathh = \"x\"",
            "store.pathh",
            "unknown field `pathh`",
        ),
        (
            "[telegramm]\nagent = \"helper\"",
            "telegramm",
            "unknown field `telegramm`",
        ),
    ];
    for (extra, key, message) in cases {
        let err = load(&with(extra)).unwrap_err();
        assert_eq!(err.origin, "/cfg/tollgate.toml", "{extra}: {err}");
        assert_eq!(err.key.as_deref().unwrap_or(""), *key, "{extra}: {err}");
        assert!(err.message.contains(message), "{extra}: {err}");
    }
    let modes = [
        ("approval = \"sometimes\"", "agents.helper.approval"),
        ("sandbox = \"tight\"", "agents.helper.sandbox"),
        ("tools = [\"read_fil\"]", "agents.helper.tools"),
        ("denied_tools = [\"nope\"]", "agents.helper.denied_tools"),
        ("tolls = []", "agents.helper.tolls"),
        (
            "private_hosts = [\"http://10.0.0.1/\"]",
            "agents.helper.private_hosts[0]",
        ),
    ];
    for (line, key) in modes {
        let text = BASE.replace("model = \"m\"", &format!("model = \"m\"\n{line}"));
        let err = load(&text).unwrap_err();
        assert_eq!(err.key.as_deref(), Some(key), "{line}: {err}");
    }
}

#[test]
fn toml_syntax_errors_name_the_file_and_line() {
    let err = load("[agents.helper\nprovider = 1").unwrap_err();
    assert_eq!(err.origin, "/cfg/tollgate.toml");
    assert!(err.message.contains("line 1"), "{err}");
}

#[test]
fn yolo_alias_and_env_overrides() {
    let env = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<std::collections::HashMap<_, _>>()
    };
    let file = Some(PathBuf::from("/cfg/tollgate.toml"));
    let config = load_with_env(
        file.clone(),
        Some(BASE),
        env(&[
            ("TOLLGATE__AGENTS__HELPER__APPROVAL", "yolo"),
            ("TOLLGATE__AGENTS__HELPER__TOOLS", "read_file,ls"),
            ("TOLLGATE__AGENTS__HELPER__NETWORK_ACCESS", "true"),
            ("TOLLGATE__TELEGRAM__ADMINS", "12345"),
            ("TOLLGATE__TELEGRAM__ALLOWED_USERS", "1,2"),
        ]),
    )
    .unwrap();
    let agent = &config.agents["helper"];
    assert_eq!(agent.approval, crate::policy::mode::ApprovalMode::HighRisk);
    assert_eq!(agent.tools, ["read_file", "ls"]);
    assert!(agent.network_access);
    let telegram = config.telegram.unwrap();
    assert_eq!(telegram.admins, [AccessId::Id(12345)]);
    assert_eq!(telegram.allowed_users, [AccessId::Id(1), AccessId::Id(2)]);

    let err = load_with_env(
        file,
        Some(BASE),
        env(&[("TOLLGATE__AGENTS__HELPER__SANDBOX", "nope")]),
    )
    .unwrap_err();
    assert_eq!(
        err.origin,
        "environment variable TOLLGATE__AGENTS__HELPER__SANDBOX"
    );
    assert_eq!(err.key.as_deref(), Some("agents.helper.sandbox"));
}

/// Every sandboxed command may read the system's directories (`/usr`, `/opt`, …): a store or a
/// workspace there would be open to every chat's commands, so such a config is refused.
#[test]
fn a_store_or_workspace_every_command_could_read_is_refused() {
    for (extra, key) in [
        ("[store]\npath = \"/opt/tollgate/data/store\"", "store.path"),
        ("[store]\npath = \"/usr/local/lib/tollgate\"", "store.path"),
    ] {
        let err = load(&with(extra)).unwrap_err();
        assert_eq!(err.key.as_deref(), Some(key), "{extra}: {err}");
        assert!(
            err.message.contains("every sandboxed command may read"),
            "{err}"
        );
    }
    let text = BASE.replace(
        "model = \"m\"",
        "model = \"m\"\nworkspace = \"/opt/tollgate/ws\"",
    );
    let err = load(&text).unwrap_err();
    assert_eq!(err.key.as_deref(), Some("agents.helper.workspace"), "{err}");
    assert!(err.message.contains("/opt"), "{err}");
    // Beside them, or under a directory of the same prefix, is fine.
    let config = load(&with("[store]\npath = \"/optional/store\"")).unwrap();
    assert_eq!(config.store.path, PathBuf::from("/optional/store"));
}

#[test]
fn a_root_holding_the_store_is_refused() {
    for field in ["readable_roots", "writable_roots"] {
        let text = format!(
            "[store]\npath = \"/srv/shared/store\"\n{}",
            BASE.replace(
                "model = \"m\"",
                &format!("model = \"m\"\n{field} = [\"/srv/other\", \"/srv/shared\"]")
            )
        );
        let err = load(&text).unwrap_err();
        assert_eq!(
            err.key.as_deref(),
            Some(format!("agents.helper.{field}").as_str()),
            "{err}"
        );
        assert!(err.message.contains("/srv/shared/store"), "{err}");
        // A root beside the store is fine.
        let beside = text.replace("\"/srv/shared\"]", "\"/srv/shared/docs\"]");
        load(&beside).unwrap();
    }
    // The config file (`/cfg/tollgate.toml` here), with the store elsewhere.
    let text = format!(
        "[store]\npath = \"/srv/store\"\n{}",
        BASE.replace(
            "model = \"m\"",
            "model = \"m\"\nreadable_roots = [\"/cfg\"]"
        )
    );
    let err = load(&text).unwrap_err();
    assert!(err.message.contains("the config file"), "{err}");
}
