//! `--help` on every command, and `check`: the shipped examples accepted, a bad config
//! rejected naming the key and the file.

use super::{repo, stderr, stdout, tollgate};
use std::process::Command;

#[test]
fn help_on_every_command() {
    for args in [
        vec!["--help"],
        vec!["check", "--help"],
        vec!["explain", "--help"],
        vec!["allowlist", "--help"],
        vec!["allowlist", "list", "--help"],
        vec!["allowlist", "add", "--help"],
        vec!["allowlist", "revoke", "--help"],
        vec!["init", "--help"],
    ] {
        let out = tollgate(&args, &repo());
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).contains("Usage"), "{args:?}");
    }
}

#[test]
fn check_accepts_every_shipped_example() {
    for file in [
        "config/example.toml",
        "config/minimal.toml",
        "config/ops.toml",
        "config/starter.toml",
        "config/telegram.toml",
        "config/discord.toml",
        "config/both.toml",
        "config/readonly.toml",
        "docker/tollgate.toml",
    ] {
        let out = tollgate(&["check", "--config", file], &repo());
        assert_eq!(out.status.code(), Some(0), "{file}: {}", stderr(&out));
        assert!(stdout(&out).contains("agent "), "{file}");
    }
    let out = tollgate(&["check", "--config", "config/example.toml"], &repo());
    let text = stdout(&out);
    assert!(text.contains("nobody can talk to the bot"), "{text}");
    assert!(text.contains("nobody can approve"), "{text}");
}

#[test]
fn check_rejects_bad_config_naming_key_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(
        &file,
        "[providers.p]\nkind = \"openai\"\nbase_url = \"http://x\"\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\n[agents.a.tool_approval]\nwrite_fiel = \"deny\"\n",
    )
    .unwrap();
    let out = tollgate(&["check", "--config", file.to_str().unwrap()], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("bad.toml"), "{err}");
    assert!(err.contains("agents.a.tool_approval.write_fiel"), "{err}");
    let missing = tollgate(&["check", "--config", "nope.toml"], dir.path());
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("no such config file"));
}

#[test]
fn check_explains_discord_intents_shards_and_where_role_admins_answer() {
    let dir = tempfile::tempdir().unwrap();
    let base = "[providers.p]\nkind = \"openai\"\nbase_url = \"http://x\"\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\n[discord]\nallowed_guilds = [\"10\"]\nadmins = [1]\n";
    let write = |extra: &str| {
        std::fs::write(dir.path().join("t.toml"), format!("{base}{extra}")).unwrap();
        tollgate(&["check", "--config", "t.toml"], dir.path())
    };
    let plain = stdout(&write("require_mention = false\n"));
    assert!(plain.contains("without their text"), "{plain}");
    assert!(
        plain.contains("message_content = false") && plain.contains("mention or reply"),
        "{plain}"
    );
    let full = write(
        "message_content = true\nshards = { first = 2, last = 3, total = 4 }\napprovals_to = \"admins\"\nadmin_roles = [55]\n",
    );
    assert_eq!(full.status.code(), Some(0), "{}", stderr(&full));
    let text = stdout(&full);
    assert!(
        text.contains("Message Content intent in the developer portal"),
        "{text}"
    );
    assert!(
        text.contains("shards 2 to 3 of 4") && text.contains("shard 0"),
        "{text}"
    );
    assert!(text.contains("holders of admin_roles"), "{text}");
    // Anyone, in a direct message too: the guild and channel lists do not apply there.
    let anyone = stdout(&write("allowed_users = [\"*\"]\n"));
    assert!(
        anyone.contains("anyone who can message the bot can use it, in a direct message too"),
        "{anyone}"
    );
    let bad = write("shards = { first = 3, last = 2, total = 4 }\n");
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("discord.shards"), "{}", stderr(&bad));
}

/// What reaches every chat session's files is named: one MCP server serves all of an agent's
/// sessions, and a root above the workspace is open to every session's commands.
#[test]
fn check_warns_of_what_reaches_every_sessions_files() {
    let dir = tempfile::tempdir().unwrap();
    let check = |agent: &str| {
        std::fs::write(
            dir.path().join("tollgate.toml"),
            format!(
                // The store beside `data`: a root holding it is refused outright.
                "[store]\npath = \"state/store\"\n[providers.p]\nkind = \"openai\"\nbase_url = \"http://x\"\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\nworkspace = \"data/ws\"\n{agent}"
            ),
        )
        .unwrap();
        let out = tollgate(&["check", "--config", "tollgate.toml"], dir.path());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout(&out)
    };
    let every = "every chat session's files";
    let confined = check("[agents.a.mcp.fs]\ncommand = \"fs-server\"\n");
    assert!(!confined.contains(every), "{confined}");
    let unconfined = check("[agents.a.mcp.fs]\ncommand = \"fs-server\"\nsandbox = false\n");
    assert!(
        unconfined.contains("MCP server fs runs outside the sandbox") && unconfined.contains(every),
        "{unconfined}"
    );
    let full =
        check("sandbox = \"danger-full-access\"\n[agents.a.mcp.fs]\ncommand = \"fs-server\"\n");
    assert!(
        full.contains("MCP server fs runs unconfined under danger-full-access"),
        "{full}"
    );
    // The workspace itself and a directory above it; a directory beside it is fine.
    for cwd in ["data/ws", "data"] {
        let text = check(&format!(
            "[agents.a.mcp.fs]\ncommand = \"fs-server\"\ncwd = \"{cwd}\"\n"
        ));
        assert!(
            text.contains("MCP server fs's cwd /")
                && text.contains(&format!("/{cwd} holds the agent's workspace")),
            "{text}"
        );
    }
    let beside = check("[agents.a.mcp.fs]\ncommand = \"fs-server\"\ncwd = \"data/other\"\n");
    assert!(!beside.contains(every), "{beside}");
    let root = check("readable_roots = [\"data\"]\n");
    assert!(
        root.contains("readable_roots /") && root.contains("/data holds the agent's workspace"),
        "{root}"
    );
}

#[test]
fn serve_with_discord_and_no_token_exits_2_naming_both_variables() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tollgate.toml"),
        "[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9\"\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\n[telegram]\nadmins = [1]\n[discord]\nadmins = [1]\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args(["serve", "--config", "tollgate.toml"])
        .current_dir(dir.path())
        .env_remove("TELEGRAM_BOT_TOKEN")
        .env_remove("DISCORD_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("TELEGRAM_BOT_TOKEN") && err.contains("DISCORD_TOKEN"),
        "{err}"
    );
}

#[test]
fn companions_are_checked_against_roles_and_providers() {
    let dir = tempfile::tempdir().unwrap();
    let base = "[providers.p]\nkind = \"openai\"\nbase_url = \"http://x\"\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\ntools = [\"analyze_media\"]\n";
    let write = |extra: &str| {
        std::fs::write(dir.path().join("t.toml"), format!("{base}{extra}")).unwrap();
        tollgate(&["check", "--config", "t.toml"], dir.path())
    };
    let good = write(
        "transcribe_voice = true\n[agents.a.companions]\n\"analyze:image\" = \"p/vision-1\"\n[agents.a.companion_choices]\n\"analyze:audio\" = [\"p/whisper-1\"]\n",
    );
    assert_eq!(good.status.code(), Some(0), "{}", stderr(&good));
    let text = stdout(&good);
    assert!(
        text.contains("companion analyze:image = p/vision-1"),
        "{text}"
    );
    assert!(
        text.contains("companion choices analyze:audio: p/whisper-1"),
        "{text}"
    );
    assert!(
        text.contains("transcribe_voice = true needs an analyze:audio companion"),
        "{text}"
    );
    let unbound = stdout(&write(""));
    assert!(
        unbound.contains("no analyze:* companion is bound"),
        "{unbound}"
    );
    for (extra, key, says) in [
        (
            "[agents.a.companions]\n\"analyse:image\" = \"p/v\"\n",
            "agents.a.companions.\"analyse:image\"",
            "not a companion role",
        ),
        (
            "[agents.a.companions]\n\"analyze:image\" = \"q/v\"\n",
            "agents.a.companions.\"analyze:image\"",
            "provider `q`",
        ),
        (
            "[agents.a.companions]\n\"analyze:image\" = \"vision\"\n",
            "agents.a.companions.\"analyze:image\"",
            "provider/model",
        ),
        (
            "[agents.a.companion_choices]\n\"analyze:audio\" = [\"p/w\", \"x/w\"]\n",
            "agents.a.companion_choices.\"analyze:audio\"",
            "provider `x`",
        ),
        ("media_max_mb = 0\n", "agents.a.media_max_mb", "at least 1"),
    ] {
        let out = write(extra);
        assert_eq!(out.status.code(), Some(2), "{extra}");
        let err = stderr(&out);
        assert!(err.contains(key) && err.contains(says), "{extra}: {err}");
    }
}

#[test]
fn init_writes_a_starter_that_passes_check_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let wrote = tollgate(&["init"], dir.path());
    assert_eq!(wrote.status.code(), Some(0), "{}", stderr(&wrote));
    let text = std::fs::read_to_string(dir.path().join("tollgate.toml")).unwrap();
    assert!(
        text.contains("# [telegram]") && text.contains("# [discord]"),
        "{text}"
    );
    let checked = tollgate(&["check"], dir.path());
    assert_eq!(checked.status.code(), Some(0), "{}", stderr(&checked));
    std::fs::write(dir.path().join("tollgate.toml"), "# mine\n").unwrap();
    let again = tollgate(&["init"], dir.path());
    assert_eq!(again.status.code(), Some(2));
    assert!(
        stderr(&again).contains("already exists"),
        "{}",
        stderr(&again)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("tollgate.toml")).unwrap(),
        "# mine\n"
    );
}

/// `check` runs a trial command in the sandbox where a confined shell is configured: it says
/// so when it worked, and warns naming the agents when the helper cannot confine it (a
/// container's masked `/proc`, a seccomp profile — here, a helper that is not tollgate).
#[test]
fn check_runs_a_trial_command_in_the_sandbox() {
    let ok = tollgate(&["check", "--config", "config/ops.toml"], &repo());
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    assert!(
        stdout(&ok).contains("sandbox: a trial command ran confined"),
        "{}",
        stdout(&ok)
    );
    let broken = Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args(["check", "--config", "config/ops.toml"])
        .current_dir(repo())
        .env("TOLLGATE_SANDBOX_HELPER", "/bin/false")
        .output()
        .unwrap();
    let out = stdout(&broken);
    assert!(!out.contains("ran confined"), "{out}");
    assert!(
        out.contains("the sandbox could not run a trial command here")
            && out.contains("would fail")
            && out.contains("danger-full-access"),
        "{out}"
    );
}
