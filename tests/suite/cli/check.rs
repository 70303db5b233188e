//! `--help` on every command, and `check`: the shipped examples accepted, a bad config
//! rejected naming the key and the file.

use super::{repo, stderr, stdout, tollgate};

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
