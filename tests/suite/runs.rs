//! Durable runs: a multi-step turn, a crash while a call waits for approval (resumed: it runs
//! once and the run finishes), a crash while a call runs (resumed: reported as interrupted,
//! never run again), and the round cap.

use super::executor::Scripted;
use super::fakes::llm::{FakeLlm, text, tool_calls};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tollgate::agent::error::RunError;
use tollgate::agent::llm::{OpenAiProvider, Role};
use tollgate::agent::runner::{AgentRunner, INTERRUPTED};
use tollgate::agent::runs::{CallState, RunJournal, RunStore};
use tollgate::config::{self, Config};
use tollgate::events::MemoryEvents;
use tollgate::executor::approval::{Answer, Approver};
use tollgate::executor::session::{SessionPolicy, Snapshot};
use tollgate::executor::{Executor, NoClassifier};
use tollgate::policy::mode::Dials;
use tollgate::sandbox::ShellRunner;
use tollgate::store::{MemoryStore, Store};
use tollgate::tools::{ToolRegistry, Toolset};

struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    config: Config,
    store: Arc<MemoryStore>,
}

fn world(extra: &str) -> World {
    let dir = tempfile::tempdir().unwrap();
    let root = tollgate::policy::paths::canonical_root(dir.path());
    let text = format!(
        "[store]\npath = \"store\"\n[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\ntools = [\"read_file\", \"write_file\", \"execute_command\"]\nworkspace = \"ws\"\n{extra}\n"
    );
    let file = root.join("tollgate.toml");
    std::fs::write(&file, &text).unwrap();
    let config = config::load_with_env(Some(file), Some(&text), HashMap::new()).unwrap();
    std::fs::create_dir_all(root.join("ws/console_op")).unwrap();
    World {
        _dir: dir,
        root,
        config,
        store: Arc::new(MemoryStore::new()),
    }
}

/// A fresh process's view: a new executor, journal and runner over the same store.
fn runner(
    w: &World,
    llm: &FakeLlm,
    approver: Arc<dyn Approver>,
) -> (AgentRunner, Arc<SessionPolicy>) {
    let agent = &w.config.agents["a"];
    let runs = RunStore::new(w.store.clone() as Arc<dyn Store>);
    let journal = Arc::new(RunJournal::new(runs.clone()));
    let executor = Arc::new(
        Executor::new(
            Arc::new(w.config.clone()),
            Arc::new(ToolRegistry::builtin()),
            Toolset::for_agent(agent, std::iter::empty()),
            ShellRunner::new(PathBuf::from(env!("CARGO_BIN_EXE_tollgate"))),
            approver,
            Arc::new(NoClassifier),
            Arc::new(MemoryEvents::default()),
        )
        .with_store(w.store.clone() as Arc<dyn Store>)
        .with_journal(journal.clone())
        .with_max_concurrent(10),
    );
    let session = Arc::new(SessionPolicy::new(
        "console:op",
        "a",
        agent.sandbox,
        Snapshot {
            dials: Dials {
                mode: agent.approval,
                sandbox: agent.sandbox,
            },
            tool_allowlist: BTreeSet::new(),
            command_allowlist: BTreeSet::new(),
        },
        None,
    ));
    let runner = AgentRunner {
        runs,
        journal,
        executor,
        provider: Arc::new(
            OpenAiProvider::new(&llm.url, None, Duration::from_secs(10), 1).unwrap(),
        ),
        agent: "a".into(),
        model: "m".into(),
        system_prompt: "system".into(),
        max_rounds: agent.max_rounds,
        max_tokens: None,
        classifier_usage: None,
    };
    (runner, session)
}

fn ws(w: &World, rel: &str) -> PathBuf {
    w.root.join("ws/console_op").join(rel)
}

#[tokio::test]
async fn a_multi_step_turn_keeps_a_valid_transcript() {
    let w = world("");
    std::fs::write(ws(&w, "notes.txt"), "the notes").unwrap();
    let llm = FakeLlm::start(vec![
        tool_calls(&[("c1", "read_file", r#"{"path":"notes.txt"}"#)]),
        text("The notes say: the notes"),
    ])
    .await;
    let (runner, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let outcome = runner
        .start(
            session,
            "run-1",
            "what do my notes say?",
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.answer, "The notes say: the notes");
    assert_eq!(outcome.rounds, 2);
    let second = &llm.requests()[1].body["messages"];
    assert_eq!(second[2]["tool_calls"][0]["id"], "c1");
    assert_eq!(second[3]["role"], "tool");
    assert_eq!(second[3]["tool_call_id"], "c1");
    assert_eq!(second[3]["content"], "the notes");
    let transcript = RunStore::new(w.store.clone() as Arc<dyn Store>)
        .transcript("console:op")
        .unwrap();
    let roles: Vec<Role> = transcript.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
}

#[tokio::test]
async fn a_crash_while_waiting_for_approval_loses_nothing() {
    let w = world("");
    let llm = FakeLlm::start(vec![tool_calls(&[(
        "w1",
        "write_file",
        r#"{"path":"out.txt","content":"once"}"#,
    )])])
    .await;
    let nobody_answers = Arc::new(Scripted::default());
    let (first, session) = runner(&w, &llm, nobody_answers.clone());
    let task = tokio::spawn(async move {
        first
            .start(session, "run-7", "write it", CancellationToken::new())
            .await
    });
    for _ in 0..200 {
        if !nobody_answers.asked_ids().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(nobody_answers.asked_ids(), ["w1"]);
    task.abort(); // the process dies with the card showing
    let _ = task.await;

    let runs = RunStore::new(w.store.clone() as Arc<dyn Store>);
    let open = runs.open_runs().unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].calls[0].state, CallState::Pending);
    assert!(!ws(&w, "out.txt").exists());

    llm.push(text("Written."));
    let admin = Arc::new(Scripted::default());
    admin
        .expect("w1")
        .send(Answer::Approve {
            by: "console:op".into(),
        })
        .unwrap();
    let (second, session) = runner(&w, &llm, admin.clone());
    let outcome = second
        .resume(session, open[0].clone(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.answer, "Written.");
    assert_eq!(std::fs::read_to_string(ws(&w, "out.txt")).unwrap(), "once");
    assert!(runs.open_runs().unwrap().is_empty());
    let last = llm.requests().last().unwrap().body["messages"].clone();
    let tool = last
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(tool["tool_call_id"], "w1");
    assert!(
        tool["content"].as_str().unwrap().starts_with("wrote"),
        "{tool}"
    );
}

#[tokio::test]
async fn a_crash_while_running_is_reported_and_never_rerun() {
    let w = world("[agents.a.tool_approval]\nexecute_command = \"allow\"");
    let llm = FakeLlm::start(vec![tool_calls(&[(
        "r1",
        "execute_command",
        r#"{"command":"echo ran >> count.txt; sleep 30"}"#,
    )])])
    .await;
    let (first, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let task = tokio::spawn(async move {
        first
            .start(session, "run-9", "count", CancellationToken::new())
            .await
    });
    let runs = RunStore::new(w.store.clone() as Arc<dyn Store>);
    for _ in 0..300 {
        let running = runs.load("run-9").unwrap().is_some_and(|r| {
            r.calls
                .first()
                .is_some_and(|c| c.state == CallState::Running)
        });
        // The whole line, not just the file: `>>` creates it before `echo` writes.
        let counted = std::fs::read_to_string(ws(&w, "count.txt")).is_ok_and(|c| c == "ran\n");
        if running && counted {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task.abort(); // the process dies mid-command (its sandbox dies with it)
    let _ = task.await;
    assert_eq!(
        runs.load("run-9").unwrap().unwrap().calls[0].state,
        CallState::Running
    );

    llm.push(text("It may or may not have run."));
    let (second, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let open = runs.open_runs().unwrap();
    let outcome = second
        .resume(session, open[0].clone(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.answer, "It may or may not have run.");
    // The model was told the call was interrupted, and the resumed run has ended: a re-run
    // would have been one of its steps, awaited before that answer — not something still
    // under way.
    let last = llm.requests().last().unwrap().body["messages"].clone();
    let tool = last
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(tool["content"], INTERRUPTED);
    assert_eq!(
        std::fs::read_to_string(ws(&w, "count.txt")).unwrap(),
        "ran\n",
        "never run twice"
    );
}

#[tokio::test]
async fn a_model_that_loops_is_stopped_at_max_rounds() {
    let w = world("max_rounds = 2");
    std::fs::write(ws(&w, "a.txt"), "a").unwrap();
    let llm = FakeLlm::start(vec![
        tool_calls(&[("l1", "read_file", r#"{"path":"a.txt"}"#)]),
        tool_calls(&[("l2", "read_file", r#"{"path":"a.txt"}"#)]),
    ])
    .await;
    let (runner, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let outcome = runner
        .start(session, "run-2", "loop", CancellationToken::new())
        .await
        .unwrap();
    assert!(
        outcome.answer.contains("max_rounds = 2"),
        "{}",
        outcome.answer
    );
    assert_eq!(llm.requests().len(), 2);
    let transcript = RunStore::new(w.store.clone() as Arc<dyn Store>)
        .transcript("console:op")
        .unwrap();
    let calls = transcript
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| m.tool_calls.len())
        .sum::<usize>();
    let results = transcript.iter().filter(|m| m.role == Role::Tool).count();
    assert_eq!(calls, results, "every tool call has its result");
}

#[tokio::test]
async fn a_provider_failure_is_told_plainly() {
    let w = world("");
    let llm = FakeLlm::start(vec![]).await;
    let (first, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let err = first
        .start(session, "run-3", "hi", CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RunError::Model(m) if m.contains("answered 500")),
        "{err}"
    );
    let huge = "x".repeat(1024 * 1024);
    let (second, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let err = second
        .start(session, "run-4", &huge, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(err, RunError::MessageTooLong { .. }) && err.is_for_the_user(),
        "{err}"
    );
    assert!(err.to_string().contains("the limit is"), "{err}");
}

/// `spawn_subagent`: approving it is the authorization; the subagent runs headless in mode
/// high-risk in the parent's workspace, and a rule that still prompts is refused.
#[tokio::test]
async fn a_subagent_runs_headless_within_the_parent() {
    use tollgate::agent::classifier::Surface;
    use tollgate::agent::setup::assemble;
    let llm = FakeLlm::start(vec![
        tool_calls(&[(
            "s1",
            "spawn_subagent",
            r#"{"task":"write hello.txt and notes.txt"}"#,
        )]),
        // the subagent's turn: one write allowed by mode high-risk, one still prompting
        tool_calls(&[
            ("sw", "write_file", r#"{"path":"hello.txt","content":"hi"}"#),
            (
                "sn",
                "edit_file",
                r#"{"path":"hello.txt","old":"hi","new":"ho"}"#,
            ),
        ]),
        text("Wrote hello.txt; editing needs approval I cannot get."),
        text("The subagent wrote hello.txt."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let root = tollgate::policy::paths::canonical_root(dir.path());
    let text_config = format!(
        "[store]\npath = \"store\"\n[providers.p]\nkind = \"openai\"\nbase_url = \"{}\"\nmax_retries = 1\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\ntools = [\"write_file\", \"edit_file\", \"spawn_subagent\"]\nworkspace = \"ws\"\n[agents.a.tool_approval]\nedit_file = \"prompt\"\n",
        llm.url
    );
    let file = root.join("tollgate.toml");
    std::fs::write(&file, &text_config).unwrap();
    let config =
        Arc::new(config::load_with_env(Some(file), Some(&text_config), HashMap::new()).unwrap());
    let approver = Arc::new(Scripted::default());
    approver
        .expect("s1")
        .send(Answer::Approve {
            by: "console:op".into(),
        })
        .unwrap();
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let assembled = assemble(
        &config,
        "a",
        "console:op",
        Surface::Console,
        store,
        approver.clone(),
    )
    .unwrap();
    let outcome = assembled
        .runner
        .start(
            assembled.session.clone(),
            "run-s",
            "delegate it",
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.answer, "The subagent wrote hello.txt.");
    assert_eq!(
        approver.asked_ids(),
        ["s1"],
        "only the spawn asked the parent's approver"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("ws/console_op/hello.txt")).unwrap(),
        "hi"
    );
    let requests = llm.requests();
    let sub_tools: Vec<String> = requests[1].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        !sub_tools.contains(&"spawn_subagent".to_string()),
        "{sub_tools:?}"
    );
    let sub_results = requests[2].body["messages"].to_string();
    assert!(sub_results.contains("nobody can approve"), "{sub_results}");
    let parent_sees = requests[3].body["messages"].to_string();
    assert!(parent_sees.contains("Wrote hello.txt"), "{parent_sees}");
}

#[tokio::test]
async fn summarize_context_replaces_earlier_turns_and_keeps_this_one() {
    use tollgate::agent::classifier::Surface;
    use tollgate::agent::llm::ChatMessage;
    use tollgate::agent::setup::assemble;
    let llm = FakeLlm::start(vec![
        tool_calls(&[
            ("z1", "summarize_context", "{}"),
            ("z2", "context_info", "{}"),
        ]),
        text("The user once asked about the weather."),
        text("Done."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let root = tollgate::policy::paths::canonical_root(dir.path());
    let text_config = format!(
        "[store]\npath = \"store\"\n[providers.p]\nkind = \"openai\"\nbase_url = \"{}\"\nmax_retries = 1\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\ntools = [\"summarize_context\", \"context_info\"]\nworkspace = \"ws\"\n",
        llm.url
    );
    let file = root.join("tollgate.toml");
    std::fs::write(&file, &text_config).unwrap();
    let config =
        Arc::new(config::load_with_env(Some(file), Some(&text_config), HashMap::new()).unwrap());
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let runs = RunStore::new(store.clone());
    runs.save_transcript(
        "console:op",
        &[
            ChatMessage::new(Role::User, "what is the weather?"),
            ChatMessage::new(Role::Assistant, "sunny"),
        ],
    )
    .unwrap();
    let assembled = assemble(
        &config,
        "a",
        "console:op",
        Surface::Console,
        store,
        Arc::new(Scripted::default()),
    )
    .unwrap();
    let outcome = assembled
        .runner
        .start(
            assembled.session.clone(),
            "run-z",
            "summarize please",
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.answer, "Done.");
    let transcript = runs.transcript("console:op").unwrap();
    assert!(
        transcript[0]
            .content
            .starts_with("[Summary of the earlier conversation]")
    );
    assert!(transcript[0].content.contains("weather"));
    assert_eq!(transcript[1].content, "summarize please");
    assert!(!transcript.iter().any(|m| m.content == "sunny"));
    let roles: Vec<Role> = transcript.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::Assistant
        ]
    );
    assert!(
        transcript[4].content.contains("conversation:"),
        "{}",
        transcript[4].content
    );
}

#[tokio::test]
async fn stop_cancels_and_a_run_stored_before_its_model_call_resumes() {
    let w = world("[agents.a.tool_approval]\nexecute_command = \"allow\"");
    let llm = FakeLlm::start(vec![tool_calls(&[(
        "s1",
        "execute_command",
        r#"{"command":"touch started && sleep 30"}"#,
    )])])
    .await;
    let (first, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let token = CancellationToken::new();
    let stop = token.clone();
    let task = tokio::spawn(async move { first.start(session, "run-stop", "sleep", token).await });
    // Stopped while the command runs: the marker says it has started.
    let started = ws(&w, "started");
    for _ in 0..500 {
        if started.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(started.exists(), "the command never started");
    stop.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(outcome.answer, "Stopped.");
    let transcript = RunStore::new(w.store.clone() as Arc<dyn Store>)
        .transcript("console:op")
        .unwrap();
    let last = transcript.last().unwrap();
    assert_eq!(last.role, Role::Tool, "the dangling call got a result");
    assert!(last.content.contains("cancelled"), "{}", last.content);

    // A run stored just before its model call (the process died there) asks the model again.
    let runs = RunStore::new(w.store.clone() as Arc<dyn Store>);
    let mut stored = runs.load("run-stop").unwrap().unwrap();
    stored.id = "run-again".into();
    stored.phase = tollgate::agent::runs::RunPhase::AskingModel;
    stored.calls.clear();
    runs.save(&stored).unwrap();
    llm.push(text("Back again."));
    let (second, session) = runner(&w, &llm, Arc::new(Scripted::default()));
    let resumed = second
        .resume(session, stored, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(resumed.answer, "Back again.");
}

/// An agent's MCP servers start on the first model call of a session and their tools are
/// offered and callable through the gate.
#[tokio::test]
async fn mcp_tools_join_the_toolset_on_first_need() {
    use tollgate::agent::classifier::Surface;
    use tollgate::agent::setup::assemble;
    // SAFETY: every test sets the same value; it names the sandbox helper binary.
    unsafe { std::env::set_var("TOLLGATE_SANDBOX_HELPER", env!("CARGO_BIN_EXE_tollgate")) };
    let llm = FakeLlm::start(vec![
        tool_calls(&[("m1", "mcp_fx_add", r#"{"a":40,"b":2}"#)]),
        text("The answer is 42."),
    ])
    .await;
    let fixture = PathBuf::from(env!("CARGO_BIN_EXE_mcp-fixture"));
    let dir = tempfile::tempdir().unwrap();
    let root = tollgate::policy::paths::canonical_root(dir.path());
    let text_config = format!(
        "[store]\npath = \"store\"\n[providers.p]\nkind = \"openai\"\nbase_url = \"{}\"\nmax_retries = 1\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\ntools = [\"read_file\"]\nworkspace = \"ws\"\nreadable_roots = [{:?}]\n[agents.a.mcp.fx]\ncommand = {:?}\ntrusted = true\ntier = \"read-only\"\n",
        llm.url,
        fixture.parent().unwrap().display().to_string(),
        fixture.display().to_string(),
    );
    let file = root.join("tollgate.toml");
    std::fs::write(&file, &text_config).unwrap();
    let config =
        Arc::new(config::load_with_env(Some(file), Some(&text_config), HashMap::new()).unwrap());
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let assembled = assemble(
        &config,
        "a",
        "console:op",
        Surface::Console,
        store.clone(),
        Arc::new(Scripted::default()),
    )
    .unwrap();
    let outcome = assembled
        .runner
        .start(
            assembled.session.clone(),
            "run-m",
            "add",
            CancellationToken::new(),
        )
        .await
        .unwrap();
    let problems: Vec<String> = tollgate::events::StoreEvents::read(store.as_ref(), None, None)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "mcp_problem")
        .map(|e| format!("{:?}", e.fields))
        .collect();
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(outcome.answer, "The answer is 42.");
    let offered: Vec<String> = llm.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        offered.contains(&"mcp_fx_add".to_string()) && offered.contains(&"read_file".to_string()),
        "{offered:?}"
    );
    let result = llm.requests()[1].body["messages"].to_string();
    assert!(result.contains(r#""content":"42""#), "{result}");
}
