//! `tollgate chat` as a live process: a kill -9 with a prompt showing, SIGTERM while a command
//! runs, reminders fired into their session, and questions answered on the console (and
//! failing unattended).

use super::{Live, stdout, tollgate};
use std::process::Command;

/// kill -9 while a call waits for approval; start again; approve: the call runs once and the
/// run finishes.
#[tokio::test(flavor = "multi_thread")]
async fn chat_survives_a_kill_with_a_prompt_showing() {
    use crate::suite::fakes::llm::{FakeLlm, text, tool_calls};
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
    use crate::suite::fakes::llm::{FakeLlm, tool_calls};
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
/// A reminder the last `chat` claimed but stopped before its run was recorded fires when the
/// next `chat` starts.
#[tokio::test(flavor = "multi_thread")]
async fn a_reminder_claimed_before_a_kill_fires_at_the_next_chat() {
    use crate::suite::fakes::llm::{FakeLlm, text};
    use tollgate::reminders::{Reminder, Reminders};
    let fake = FakeLlm::start(vec![text("Time to water the plants!")]).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tollgate.toml"),
        format!(
            "[store]\npath = \"store\"\n[providers.p]\nkind = \"openai\"\nbase_url = \"{}\"\nmax_retries = 1\n[agents.ops]\nprovider = \"p\"\nmodel = \"m\"\n",
            fake.url
        ),
    )
    .unwrap();
    {
        let store =
            std::sync::Arc::new(tollgate::store::open_dir(&dir.path().join("store"), 8).unwrap());
        let reminders = Reminders::new(store);
        reminders
            .add(&Reminder {
                id: "r9".into(),
                session: "console:tester".into(),
                agent: "ops".into(),
                message: "water the plants".into(),
                due: 100,
                created: "then".into(),
                fired: false,
            })
            .unwrap();
        assert_eq!(reminders.take_due(100, |_| true).unwrap().len(), 1);
    }
    let path = dir.path().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut chat = Live::start(&path, &["chat", "--config", "tollgate.toml"]);
        chat.wait_for("(reminder) Time to water the plants!");
        drop(chat.child.stdin.take());
        chat.child.wait().unwrap();
    })
    .await
    .unwrap();
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    let told = requests[0].body["messages"].to_string();
    assert!(told.contains("water the plants"), "{told}");
}

#[tokio::test(flavor = "multi_thread")]
async fn reminders_fire_into_their_session() {
    use crate::suite::fakes::llm::{FakeLlm, text, tool_calls};
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
    // The operator's turn is offered `add_reminder`; a reminder's run is not (it would feed
    // itself).
    let offers_adding = |i: usize| {
        requests[i].body["tools"]
            .to_string()
            .contains("add_reminder")
    };
    assert!(offers_adding(0));
    assert!(!offers_adding(2) && !offers_adding(3));
}

/// `ask_user_question` on the console is answered by the operator; unattended it fails at once.
#[tokio::test(flavor = "multi_thread")]
async fn questions_are_answered_on_the_console_and_fail_unattended() {
    use crate::suite::fakes::llm::{FakeLlm, text, tool_calls};
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

/// The first run: no config file anywhere, the model named by `OPENAI_BASE_URL` (a local
/// server needs no key), the store under `$XDG_DATA_HOME/tollgate`; and with no model
/// anywhere, exit 2 naming the three ways.
#[tokio::test(flavor = "multi_thread")]
async fn chat_with_no_config_finds_the_model_in_the_environment() {
    use crate::suite::fakes::llm::{FakeLlm, text};
    use std::io::Write;
    let fake = FakeLlm::start(vec![text("Hello from the default agent.")]).await;
    let dir = tempfile::tempdir().unwrap();
    let run = |env: Vec<(&'static str, String)>, input: &'static str| {
        let path = dir.path().to_path_buf();
        tokio::task::spawn_blocking(move || {
            let mut child = Command::new(env!("CARGO_BIN_EXE_tollgate"))
                .arg("chat")
                .current_dir(&path)
                .env_remove("OPENAI_API_KEY")
                .env_remove("OPENAI_BASE_URL")
                .env_remove("OPENAI_MODEL")
                .env_remove("ANTHROPIC_API_KEY")
                .env("XDG_DATA_HOME", path.join("data"))
                .envs(env)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            // A run that finds no model exits before reading its input: a broken pipe here
            // is that exit, which the assertions below judge.
            if let Err(e) = child.stdin.take().unwrap().write_all(input.as_bytes()) {
                assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
            }
            child.wait_with_output().unwrap()
        })
    };
    let answered = run(
        vec![
            ("OPENAI_BASE_URL", fake.url.clone()),
            ("OPENAI_MODEL", "tiny".into()),
        ],
        "hello\n",
    )
    .await
    .unwrap();
    assert_eq!(
        answered.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&answered.stderr)
    );
    assert!(
        stdout(&answered).contains("Hello from the default agent."),
        "{}",
        stdout(&answered)
    );
    assert_eq!(fake.requests()[0].body["model"], "tiny");
    assert!(
        fake.requests()[0].authorization.is_none(),
        "a local server needs no key"
    );
    assert!(dir.path().join("data/tollgate/store").exists());

    let nothing = run(vec![("OLLAMA_HOST", "127.0.0.1:9".into())], "hello\n")
        .await
        .unwrap();
    assert_eq!(nothing.status.code(), Some(2));
    let err = String::from_utf8_lossy(&nothing.stderr);
    assert!(
        err.contains("OPENAI_API_KEY")
            && err.contains("ANTHROPIC_API_KEY")
            && err.contains("Ollama"),
        "{err}"
    );
}

/// A second `chat` while another holds the store (it is locked) says so plainly, and the first
/// goes on answering.
#[tokio::test(flavor = "multi_thread")]
async fn a_second_chat_on_a_store_in_use_says_so() {
    use crate::suite::fakes::llm::{FakeLlm, text};
    use std::io::{BufRead, Write};
    let fake = FakeLlm::start(vec![text("first answer"), text("second answer")]).await;
    let dir = tempfile::tempdir().unwrap();
    let chat = |path: &std::path::Path| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tollgate"));
        command
            .arg("chat")
            .current_dir(path)
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env("OPENAI_BASE_URL", &fake.url)
            .env("OPENAI_MODEL", "tiny")
            .env("XDG_DATA_HOME", path.join("data"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        command
    };
    let path = dir.path().to_path_buf();
    let (mut first, mut first_in, mut first_out) = tokio::task::spawn_blocking({
        let mut command = chat(&path);
        move || {
            let mut child = command.spawn().unwrap();
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(b"hello\n").unwrap();
            let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
            // Answered: its store is open (and stays open while stdin does).
            let mut line = String::new();
            while !line.contains("first answer") {
                line.clear();
                assert!(
                    out.read_line(&mut line).unwrap() > 0,
                    "the first chat ended"
                );
            }
            (child, stdin, out)
        }
    })
    .await
    .unwrap();
    let second = tokio::task::spawn_blocking({
        let mut command = chat(&path);
        move || {
            // Its stdin closes as it is waited for: it never gets as far as reading it.
            command.spawn().unwrap().wait_with_output().unwrap()
        }
    })
    .await
    .unwrap();
    assert_ne!(second.status.code(), Some(0));
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(
        err.contains("another tollgate process") && err.contains("holds this store"),
        "{err}"
    );
    // The first is unharmed.
    let rest = tokio::task::spawn_blocking(move || {
        first_in.write_all(b"again\n").unwrap();
        drop(first_in);
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut first_out, &mut rest).unwrap();
        assert!(first.wait().unwrap().success());
        rest
    })
    .await
    .unwrap();
    assert!(rest.contains("second answer"), "{rest}");
}
