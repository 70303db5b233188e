//! `tollgate run` against a scripted model: unattended approvals refused with the fix, the
//! answer printed, `audit` showing the decisions, and configured secrets redacted.

use super::{stderr, stdout, tollgate};
use std::process::Command;

/// `tollgate run` against a scripted model: a call needing approval is refused with the fix,
/// the answer is printed, and `audit` shows the decisions with their sources.
#[tokio::test(flavor = "multi_thread")]
async fn run_unattended_and_audit() {
    use crate::suite::fakes::llm::{FakeLlm, text, tool_calls};
    let fake = FakeLlm::start(vec![
        tool_calls(&[("w1", "write_file", r#"{"path":"x.txt","content":"x"}"#)]),
        text("I could not write it."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tollgate.toml"),
        format!(
            "[providers.p]\nkind = \"openai\"\nbase_url = \"{}\"\nmax_retries = 1\n[agents.ops]\nprovider = \"p\"\nmodel = \"m\"\ntools = [\"write_file\"]\n",
            fake.url
        ),
    )
    .unwrap();
    let path = dir.path().to_path_buf();
    let cli = |args: Vec<String>| {
        let path = path.clone();
        tokio::task::spawn_blocking(move || {
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            tollgate(&refs, &path)
        })
    };
    let ran = cli(vec![
        "run".into(),
        "--config".into(),
        "tollgate.toml".into(),
        "write x".into(),
    ])
    .await
    .unwrap();
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    assert_eq!(stdout(&ran).trim(), "I could not write it.");
    let told = fake.requests()[1].body["messages"].to_string();
    assert!(told.contains("nobody can approve in this run"), "{told}");
    assert!(
        told.contains("tool_approval"),
        "the refusal names the fix: {told}"
    );
    assert!(
        !dir.path()
            .join("data/workspaces/ops")
            .join("x.txt")
            .exists()
    );

    let audit = cli(vec![
        "audit".into(),
        "--config".into(),
        "tollgate.toml".into(),
        "--json".into(),
    ])
    .await
    .unwrap();
    let events: Vec<serde_json::Value> = stdout(&audit)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    for expected in [
        "message_received",
        "run_started",
        "llm_usage",
        "tool_proposed",
        "permission_requested",
        "permission_denied",
        "run_completed",
    ] {
        assert!(
            kinds.contains(&expected),
            "{expected} missing from {kinds:?}"
        );
    }
    let denied = events
        .iter()
        .find(|e| e["type"] == "permission_denied")
        .unwrap();
    assert_eq!(denied["source"], "runtime");
    assert_eq!(denied["tool"], "write_file");
    assert!(denied["run"].as_str().is_some());
    let completed = events
        .iter()
        .find(|e| e["type"] == "run_completed")
        .unwrap();
    assert_eq!(completed["usage"]["input_tokens"], 31);
    assert!(completed.get("classifier_usage").is_some());
    let session = events[0]["session"].as_str().unwrap().to_string();
    assert!(session.starts_with("run:"));
    let plain = cli(vec![
        "audit".into(),
        "--config".into(),
        "tollgate.toml".into(),
        "--session".into(),
        session,
        "--since".into(),
        "2000-01-01T00:00:00Z".into(),
    ])
    .await
    .unwrap();
    assert!(
        stdout(&plain).contains("permission_denied"),
        "{}",
        stdout(&plain)
    );

    // The model endpoint down: a clear error and exit 1.
    let failed = cli(vec![
        "run".into(),
        "--config".into(),
        "tollgate.toml".into(),
        "hello".into(),
    ])
    .await
    .unwrap();
    assert_eq!(failed.status.code(), Some(1));
    assert!(
        stderr(&failed).contains("answered 500"),
        "{}",
        stderr(&failed)
    );
}

/// The leak guard: a configured secret's value never reaches the model in a tool result, nor
/// the user in an answer.
#[tokio::test(flavor = "multi_thread")]
async fn configured_secrets_are_redacted() {
    use crate::suite::fakes::llm::{FakeLlm, text, tool_calls};
    let fake = FakeLlm::start(vec![
        tool_calls(&[(
            "e1",
            "execute_command",
            r#"{"command":"echo the key is sk-canary-123456"}"#,
        )]),
        text("I found sk-canary-123456 somewhere."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tollgate.toml"),
        format!(
            "[providers.p]\nkind = \"openai\"\nbase_url = \"{}\"\nmax_retries = 1\napi_key_env = \"TOLLGATE_TEST_KEY\"\n[agents.ops]\nprovider = \"p\"\nmodel = \"m\"\ntools = [\"execute_command\"]\n[agents.ops.tool_approval]\nexecute_command = \"allow\"\n",
            fake.url
        ),
    )
    .unwrap();
    let path = dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .args(["run", "--config", "tollgate.toml", "find the key"])
            .current_dir(&path)
            .env("TOLLGATE_TEST_KEY", "sk-canary-123456")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "I found [redacted] somewhere.");
    let messages = fake.requests()[1].body["messages"].clone();
    let result = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .to_string();
    assert!(result.contains("the key is [redacted]"), "{result}");
    assert!(!result.contains("sk-canary-123456"), "{result}");
}

/// `run --json` prints the run's own events and its answer: a second run in the same store
/// prints none of the first run's.
#[tokio::test(flavor = "multi_thread")]
async fn run_json_prints_its_own_events_and_answer() {
    use crate::suite::fakes::llm::{FakeLlm, text};
    let fake = FakeLlm::start(vec![text("first."), text("second.")]).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tollgate.toml"),
        format!(
            "[providers.p]\nkind = \"openai\"\nbase_url = \"{}\"\n[agents.ops]\nprovider = \"p\"\nmodel = \"m\"\ntools = []\n",
            fake.url
        ),
    )
    .unwrap();
    let path = dir.path().to_path_buf();
    let run = |message: &'static str| {
        let path = path.clone();
        tokio::task::spawn_blocking(move || {
            tollgate(
                &["run", "--config", "tollgate.toml", "--json", message],
                &path,
            )
        })
    };
    let lines = |ran: &std::process::Output| -> Vec<serde_json::Value> {
        assert_eq!(ran.status.code(), Some(0), "{}", stderr(ran));
        stdout(ran)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let first = lines(&run("one").await.unwrap());
    let second = lines(&run("two").await.unwrap());
    for (printed, answer) in [(&first, "first."), (&second, "second.")] {
        let last = printed.last().unwrap();
        assert_eq!(
            (last["type"].as_str(), last["text"].as_str()),
            (Some("answer"), Some(answer))
        );
        let events = &printed[..printed.len() - 1];
        let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(kinds.first(), Some(&"message_received"), "{kinds:?}");
        assert!(kinds.contains(&"run_completed"), "{kinds:?}");
        let sessions: std::collections::HashSet<&str> = events
            .iter()
            .map(|e| e["session"].as_str().unwrap())
            .collect();
        assert_eq!(sessions.len(), 1, "one run's session: {sessions:?}");
    }
    assert_ne!(first[0]["session"], second[0]["session"]);
}

/// `audit` says how far back it can see: `retain_days`, and the date before which events were
/// pruned.
#[test]
fn audit_says_how_far_back_its_log_reaches() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tollgate.toml"),
        "[store]\npath = \"store\"\nretain_days = 7\n",
    )
    .unwrap();
    drop(tollgate::store::open_dir(&dir.path().join("store"), 16).unwrap());
    let week_ago = || {
        let secs = tollgate::clock::now_secs() - 7 * 86_400;
        chrono::DateTime::from_timestamp(secs as i64, 0)
            .unwrap()
            .format("%Y-%m-%d")
            .to_string()
    };
    let before = week_ago();
    let out = tollgate(&["audit", "--config", "tollgate.toml"], dir.path());
    let after = week_ago();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(
        [before, after]
            .iter()
            .any(|day| said.contains(&format!("the audit log keeps 7 days: events before {day}T"))),
        "{said}"
    );
}

/// A store whose audit log an older tollgate kept by session: the first command that opens it
/// moves the events into time order, and `audit` shows them, by session too.
#[test]
fn an_audit_log_kept_by_session_is_shown_after_the_upgrade() {
    use tollgate::store::Store;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tollgate.toml"),
        "[store]\npath = \"store\"\n",
    )
    .unwrap();
    {
        let store = tollgate::store::open_dir(&dir.path().join("store"), 16).unwrap();
        for (session, ts, tool) in [
            ("telegram:1", "2026-11-20T10:00:00.000Z", "old_one"),
            ("telegram:2", "2026-11-21T10:00:00.000Z", "old_two"),
        ] {
            let key = format!("{session}\0{ts}\0000000000001");
            let event = serde_json::json!({"ts": ts, "session": session, "type": "tool_proposed", "tool": tool});
            store
                .insert("events", key.as_bytes(), event.to_string().as_bytes())
                .unwrap();
        }
        store.flush().unwrap();
    }
    let audit = |extra: &[&str]| {
        let mut args = vec!["audit", "--config", "tollgate.toml", "--json"];
        args.extend_from_slice(extra);
        let out = tollgate(&args, dir.path());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout(&out)
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["tool"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(audit(&[]), vec!["old_one", "old_two"]);
    assert_eq!(audit(&["--session", "telegram:2"]), vec!["old_two"]);
    assert_eq!(audit(&["--since", "2026-11-21T00:00:00Z"]), vec!["old_two"]);
    let store = tollgate::store::open_dir(&dir.path().join("store"), 16).unwrap();
    assert!(store.scan_prefix("events", b"").unwrap().is_empty());
    assert_eq!(
        store
            .scan_prefix(tollgate::events::EVENTS_TREE, b"")
            .unwrap()
            .len(),
        2
    );
}
