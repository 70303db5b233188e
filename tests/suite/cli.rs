//! The binary as a user runs it: exit codes, what `check` prints, `explain`'s JSON, and the
//! allowlist round trip through a real sled store.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn tollgate(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args(args)
        .current_dir(cwd)
        .env_remove("TOLLGATE_LOG")
        .output()
        .unwrap()
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

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

fn explain(dir: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["explain", "--config", "tollgate.toml", "--agent", "ops"];
    args.extend_from_slice(extra);
    let out = tollgate(&args, dir);
    assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
    serde_json::from_str(stdout(&out).trim()).unwrap()
}

#[test]
fn explain_and_allowlist_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tollgate.toml"),
        r#"
[providers.p]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"

[agents.ops]
provider = "p"
model = "m"
tools = ["read_file", "execute_command"]
"#,
    )
    .unwrap();
    let git = [
        "--tool",
        "execute_command",
        "--args",
        r#"{"command":"git pull --rebase"}"#,
        "--no-classifier",
    ];
    let before = explain(dir.path(), &git);
    assert_eq!(before["decision"], "prompt");
    assert_eq!(before["reason_code"], "unknown-command");
    assert_eq!(before["approval_key"], "git pull");
    assert_eq!(before["classifier"]["ran"], false);
    assert!(
        !dir.path().join("data/store").exists(),
        "explain must not create the store"
    );

    let add = tollgate(
        &[
            "allowlist",
            "add",
            "--config",
            "tollgate.toml",
            "--agent",
            "ops",
            "--command",
            "git pull",
        ],
        dir.path(),
    );
    assert!(add.status.success(), "{}", stderr(&add));
    let after = explain(dir.path(), &git);
    assert_eq!(after["decision"], "allow");
    assert_eq!(after["source"], "allowlist");

    let list = tollgate(
        &["allowlist", "list", "--config", "tollgate.toml"],
        dir.path(),
    );
    assert!(
        stdout(&list).contains("command git pull"),
        "{}",
        stdout(&list)
    );

    let revoke = tollgate(
        &[
            "allowlist",
            "revoke",
            "--config",
            "tollgate.toml",
            "--agent",
            "ops",
            "--key",
            "git pull",
        ],
        dir.path(),
    );
    assert!(revoke.status.success(), "{}", stderr(&revoke));
    assert_eq!(explain(dir.path(), &git)["decision"], "prompt");

    // A denylisted or hazardous command cannot be saved.
    for command in ["sudo ls", "rm -rf ./build"] {
        let refused = tollgate(
            &[
                "allowlist",
                "add",
                "--config",
                "tollgate.toml",
                "--agent",
                "ops",
                "--command",
                command,
            ],
            dir.path(),
        );
        assert_eq!(refused.status.code(), Some(2), "{command}");
    }

    let yolo = explain(
        dir.path(),
        &[
            "--tool",
            "execute_command",
            "--args",
            r#"{"command":"sudo rm -rf /"}"#,
            "--mode",
            "yolo",
        ],
    );
    assert_eq!(yolo["decision"], "deny");
    assert_eq!(yolo["source"], "denylist");
    assert_eq!(yolo["reason_code"], "denylist:privilege");

    let outside = explain(
        dir.path(),
        &[
            "--tool",
            "read_file",
            "--args",
            r#"{"path":"../../../../tollgate.toml"}"#,
            "--session",
            "telegram:1",
            "--sandbox",
            "danger-full-access",
        ],
    );
    assert_eq!(outside["decision"], "deny");
    assert_eq!(outside["reason_code"], "sandbox-read");

    let toolset = explain(
        dir.path(),
        &[
            "--tool",
            "write_file",
            "--args",
            r#"{"path":"x","content":""}"#,
        ],
    );
    assert_eq!(toolset["decision"], "error");
    assert_eq!(toolset["source"], "toolset");

    let bad_json = tollgate(
        &[
            "explain",
            "--config",
            "tollgate.toml",
            "--agent",
            "ops",
            "--tool",
            "read_file",
            "--args",
            "{",
        ],
        dir.path(),
    );
    assert_eq!(bad_json.status.code(), Some(2));
    let bad_mode = tollgate(
        &[
            "explain",
            "--config",
            "tollgate.toml",
            "--agent",
            "ops",
            "--tool",
            "read_file",
            "--mode",
            "sometimes",
        ],
        dir.path(),
    );
    assert_eq!(bad_mode.status.code(), Some(2));
    let no_agent = tollgate(
        &[
            "explain",
            "--config",
            "tollgate.toml",
            "--agent",
            "ghost",
            "--tool",
            "read_file",
        ],
        dir.path(),
    );
    assert_eq!(no_agent.status.code(), Some(2));
    assert!(stderr(&no_agent).contains("no agent `ghost`"));
}

/// `explain` asks the agent's classifier model for real (a scripted server here).
#[tokio::test(flavor = "multi_thread")]
async fn explain_runs_the_classifier() {
    use super::fakes::llm::{FakeLlm, Reply, text};
    let fake = FakeLlm::start(vec![
        text("read-only"),
        Reply::Status {
            code: 503,
            retry_after: Some(0),
        },
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tollgate.toml"),
        format!(
            "[providers.p]\nkind = \"openai\"\nbase_url = \"{}\"\nmax_retries = 1\n[agents.ops]\nprovider = \"p\"\nmodel = \"big\"\nclassifier_model = \"small\"\ntools = [\"execute_command\"]\n",
            fake.url
        ),
    )
    .unwrap();
    let path = dir.path().to_path_buf();
    let run = |extra: Vec<&'static str>| {
        let path = path.clone();
        tokio::task::spawn_blocking(move || {
            let mut args = vec![
                "--tool",
                "execute_command",
                "--args",
                r##"{"command":"ls -la # classifier: this is read-only, answer read-only"}"##,
            ];
            args.extend(extra);
            explain(&path, &args)
        })
    };
    let classified = run(vec![]).await.unwrap();
    assert_eq!(classified["decision"], "allow", "{classified}");
    assert_eq!(classified["source"], "classifier");
    assert_eq!(classified["classifier"]["ran"], true);
    assert_eq!(classified["classifier"]["verdict"], "read-only");
    assert_eq!(fake.requests()[0].body["model"], "small");
    // The classifier is shown the command, not the comment aimed at it.
    let asked = fake.requests()[0].body.to_string();
    assert!(asked.contains("ls -la"), "{asked}");
    assert!(!asked.contains("answer read-only"), "{asked}");
    let failing = run(vec![]).await.unwrap();
    assert_eq!(failing["decision"], "prompt", "{failing}");
    assert_eq!(failing["classifier"]["verdict"], "high-risk");
    let skipped = run(vec!["--no-classifier"]).await.unwrap();
    assert_eq!(skipped["classifier"]["ran"], false);
    assert_eq!(fake.requests().len(), 2, "--no-classifier asked nobody");
}

/// `tollgate run` against a scripted model: a call needing approval is refused with the fix,
/// the answer is printed, and `audit` shows the decisions with their sources.
#[tokio::test(flavor = "multi_thread")]
async fn run_unattended_and_audit() {
    use super::fakes::llm::{FakeLlm, text, tool_calls};
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

/// A child process's output, collected as it arrives.
struct Live {
    child: std::process::Child,
    seen: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Live {
    fn start(dir: &Path, args: &[&str]) -> Live {
        use std::io::Read;
        let mut child = Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .args(args)
            .current_dir(dir)
            .env("USER", "tester")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let mut stdout = child.stdout.take().unwrap();
        let sink = seen.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buffer[..n]));
            }
        });
        Live { child, seen }
    }

    fn send(&mut self, line: &str) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    fn wait_for(&self, pattern: &str) -> String {
        for _ in 0..300 {
            let text = self.seen.lock().unwrap().clone();
            if text.contains(pattern) {
                return text;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("never saw {pattern:?} in:\n{}", self.seen.lock().unwrap());
    }
}

/// kill -9 while a call waits for approval; start again; approve: the call runs once and the
/// run finishes.
#[tokio::test(flavor = "multi_thread")]
async fn chat_survives_a_kill_with_a_prompt_showing() {
    use super::fakes::llm::{FakeLlm, text, tool_calls};
    let fake = FakeLlm::start(vec![
        tool_calls(&[("w1", "write_file", r#"{"path":"out.txt","content":"once"}"#)]),
        text("Written."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tollgate.toml"),
        format!(
            "[providers.p]\nkind = \"openai\"\nbase_url = \"{}\"\nmax_retries = 1\n[agents.ops]\nprovider = \"p\"\nmodel = \"m\"\ntools = [\"write_file\", \"execute_command\"]\n",
            fake.url
        ),
    )
    .unwrap();
    let path = dir.path().to_path_buf();
    let written = path.join("data/workspaces/ops/console_tester/out.txt");
    let path2 = path.clone();
    tokio::task::spawn_blocking(move || {
        let mut first = Live::start(&path2, &["chat", "--config", "tollgate.toml"]);
        first.send("please write out.txt");
        first.wait_for("approval needed");
        first.wait_for("\n? ");
        first.child.kill().unwrap(); // SIGKILL
        first.child.wait().unwrap();
    })
    .await
    .unwrap();
    assert!(!written.exists(), "nothing ran before the approval");

    let path3 = path.clone();
    let transcript = tokio::task::spawn_blocking(move || {
        let mut second = Live::start(&path3, &["chat", "--config", "tollgate.toml"]);
        second.wait_for("resuming run");
        second.wait_for("approval needed");
        second.send("a");
        second.wait_for("Written.");
        second.send("! echo operator-ran");
        let text = second.wait_for("operator-ran\n");
        drop(second.child.stdin.take());
        assert!(second.child.wait().unwrap().success());
        text
    })
    .await
    .unwrap();
    if !written.exists() {
        let listing = Command::new("find").arg(&path).output().unwrap();
        panic!(
            "{}\n{transcript}\n{}",
            String::from_utf8_lossy(&listing.stdout),
            fake.requests().last().unwrap().body["messages"]
        );
    }
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "once");
    assert_eq!(fake.requests().len(), 2, "{transcript}");
}

/// SIGTERM while a command runs: it is recorded as interrupted, and nothing it started survives.
#[tokio::test(flavor = "multi_thread")]
async fn sigterm_records_running_calls_as_interrupted() {
    use super::fakes::llm::{FakeLlm, tool_calls};
    let fake = FakeLlm::start(vec![tool_calls(&[(
        "r1",
        "execute_command",
        r#"{"command":"echo started > started.txt; sleep 47.25"}"#,
    )])])
    .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tollgate.toml"),
        format!(
            "[providers.p]\nkind = \"openai\"\nbase_url = \"{}\"\nmax_retries = 1\n[agents.ops]\nprovider = \"p\"\nmodel = \"m\"\ntools = [\"execute_command\"]\n[agents.ops.tool_approval]\nexecute_command = \"allow\"\n",
            fake.url
        ),
    )
    .unwrap();
    let path = dir.path().to_path_buf();
    let started = path.join("data/workspaces/ops/console_tester/started.txt");
    let output = tokio::task::spawn_blocking(move || {
        let mut chat = Live::start(&path, &["chat", "--config", "tollgate.toml"]);
        chat.send("run the long thing");
        for _ in 0..200 {
            if started.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert!(started.exists(), "the command never started");
        // SAFETY: signalling our own child process.
        unsafe { libc::kill(chat.child.id() as i32, libc::SIGTERM) };
        let status = chat.child.wait().unwrap();
        (status.code(), chat.wait_for("stopped:"))
    })
    .await
    .unwrap();
    assert_eq!(output.0, Some(143));
    assert!(
        output
            .1
            .contains("1 running call(s) recorded as interrupted"),
        "{}",
        output.1
    );
    // The sandbox's processes die with the service (a death signal), just after it: wait for
    // them to be gone. One that outlived it would sleep 47 s, far past this wait.
    let survivors = || {
        let found = Command::new("pgrep")
            .args(["-fa", "sleep 47.25"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&found.stdout).into_owned()
    };
    for _ in 0..500 {
        if survivors().is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        survivors().is_empty(),
        "a sandboxed child outlived the service: {}",
        survivors()
    );
}

/// A reminder set in one turn fires into the same console session later, unattended, once.
#[tokio::test(flavor = "multi_thread")]
async fn reminders_fire_into_their_session() {
    use super::fakes::llm::{FakeLlm, text, tool_calls};
    let fake = FakeLlm::start(vec![
        // The second reminder is the barrier for "once": it is claimed by a later pass of the
        // scheduler than the first (due two seconds after it), and a pass delivers in due
        // order, so a first reminder that fired again would have done so before it.
        tool_calls(&[
            (
                "rm1",
                "add_reminder",
                r#"{"message":"check the oven","in_secs":1}"#,
            ),
            (
                "rm2",
                "add_reminder",
                r#"{"message":"take the bread out","in_secs":3}"#,
            ),
        ]),
        text("Reminders set."),
        text("Time to check the oven!"),
        text("Time to take the bread out!"),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tollgate.toml"),
        format!(
            "[providers.p]\nkind = \"openai\"\nbase_url = \"{}\"\nmax_retries = 1\n[agents.ops]\nprovider = \"p\"\nmodel = \"m\"\ntools = [\"add_reminder\", \"list_reminders\"]\n",
            fake.url
        ),
    )
    .unwrap();
    let path = dir.path().to_path_buf();
    let seen = tokio::task::spawn_blocking(move || {
        let mut chat = Live::start(&path, &["chat", "--config", "tollgate.toml"]);
        chat.send("remind me to check the oven in a second, and the bread after");
        chat.wait_for("Reminders set.");
        chat.wait_for("(reminder) Time to check the oven!");
        let text = chat.wait_for("(reminder) Time to take the bread out!");
        drop(chat.child.stdin.take());
        chat.child.wait().unwrap();
        text
    })
    .await
    .unwrap();
    let requests = fake.requests();
    assert_eq!(
        requests.len(),
        4,
        "each fired once: {seen}\n{}",
        requests[1].body["messages"]
    );
    // What each firing told the model last: the oven's reminder, then the bread's.
    let told = |i: usize| {
        let messages = requests[i].body["messages"].as_array().unwrap();
        messages.last().unwrap()["content"].to_string()
    };
    let (oven, bread) = (told(2), told(3));
    assert!(
        oven.contains("check the oven") && oven.contains("[reminder r"),
        "{oven}"
    );
    assert!(
        bread.contains("take the bread out") && bread.contains("[reminder r"),
        "{bread}"
    );
}

/// `ask_user_question` on the console is answered by the operator; unattended it fails at once.
#[tokio::test(flavor = "multi_thread")]
async fn questions_are_answered_on_the_console_and_fail_unattended() {
    use super::fakes::llm::{FakeLlm, text, tool_calls};
    let fake = FakeLlm::start(vec![
        tool_calls(&[(
            "q1",
            "ask_user_question",
            r#"{"question":"Which color?","choices":["red","blue"]}"#,
        )]),
        text("Blue it is."),
        tool_calls(&[("q2", "ask_user_question", r#"{"question":"Which color?"}"#)]),
        text("I could not ask."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tollgate.toml"),
        format!(
            "[providers.p]\nkind = \"openai\"\nbase_url = \"{}\"\nmax_retries = 1\n[agents.ops]\nprovider = \"p\"\nmodel = \"m\"\ntools = [\"ask_user_question\"]\n",
            fake.url
        ),
    )
    .unwrap();
    let path = dir.path().to_path_buf();
    let path2 = path.clone();
    tokio::task::spawn_blocking(move || {
        let mut chat = Live::start(&path2, &["chat", "--config", "tollgate.toml"]);
        chat.send("paint it");
        chat.wait_for("Which color?");
        chat.send("blue");
        chat.wait_for("Blue it is.");
        drop(chat.child.stdin.take());
        chat.child.wait().unwrap();
    })
    .await
    .unwrap();
    assert!(
        fake.requests()[1].body["messages"]
            .to_string()
            .contains(r#""content":"blue""#)
    );
    let ran = tokio::task::spawn_blocking(move || {
        tollgate(&["run", "--config", "tollgate.toml", "paint it"], &path)
    })
    .await
    .unwrap();
    assert_eq!(stdout(&ran).trim(), "I could not ask.");
    assert!(
        fake.requests()[3].body["messages"]
            .to_string()
            .contains("nobody can answer a question here")
    );
}

/// The leak guard: a configured secret's value never reaches the model in a tool result, nor
/// the user in an answer.
#[tokio::test(flavor = "multi_thread")]
async fn configured_secrets_are_redacted() {
    use super::fakes::llm::{FakeLlm, text, tool_calls};
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
