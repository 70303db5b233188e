//! Runs through a fully assembled agent (`assemble`): a subagent running headless within its
//! parent, `summarize_context` replacing earlier turns, and MCP tools joining the toolset on
//! first need.

use crate::suite::executor::Scripted;
use crate::suite::fakes::llm::{Condition, FakeLlm, Reply, text, tool_calls};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tollgate::agent::llm::Role;
use tollgate::agent::runs::RunStore;
use tollgate::config;
use tollgate::executor::approval::Answer;
use tollgate::store::{MemoryStore, Store};

/// Agent `a` (the lines of its section `agent_lines`, its workspace `ws`) assembled for
/// `console:op` over a memory store, in a fresh directory (kept alive by the first value,
/// whose canonical path is the second); its approver approves the spawn `s1`.
fn parent_that_spawns(
    llm: &FakeLlm,
    agent_lines: &str,
) -> (
    tempfile::TempDir,
    PathBuf,
    tollgate::agent::setup::Assembled,
    Arc<Scripted>,
    Arc<dyn Store>,
) {
    use tollgate::agent::classifier::Surface;
    let dir = tempfile::tempdir().unwrap();
    let root = tollgate::policy::paths::canonical_root(dir.path());
    let text_config = format!(
        "[store]\npath = \"store\"\n[providers.p]\nkind = \"openai\"\nbase_url = \"{}\"\nmax_retries = 1\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\nworkspace = \"ws\"\n{agent_lines}",
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
    let assembled = tollgate::agent::setup::assemble(
        &config,
        "a",
        "console:op",
        Surface::Console,
        store.clone(),
        approver.clone(),
    )
    .unwrap();
    (dir, root, assembled, approver, store)
}

/// `spawn_subagent`: approving it is the authorization; the subagent runs headless in mode
/// high-risk in the parent's workspace, and a rule that still prompts is refused.
#[tokio::test]
async fn a_subagent_runs_headless_within_the_parent() {
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
    let (_dir, root, assembled, approver, _store) = parent_that_spawns(
        &llm,
        "tools = [\"write_file\", \"edit_file\", \"spawn_subagent\", \"add_reminder\", \"list_reminders\", \"cancel_reminder\"]\n[agents.a.tool_approval]\nedit_file = \"prompt\"\n",
    );
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
    // Nor reminders: a subagent's session ends with it and has no chat to fire into, and a
    // fresh session key per spawn would escape the per-session cap.
    for absent in [
        "spawn_subagent",
        "add_reminder",
        "list_reminders",
        "cancel_reminder",
    ] {
        assert!(!sub_tools.contains(&absent.to_string()), "{sub_tools:?}");
    }
    assert!(
        sub_tools.contains(&"write_file".to_string()),
        "{sub_tools:?}"
    );
    let sub_results = requests[2].body["messages"].to_string();
    assert!(sub_results.contains("nobody can approve"), "{sub_results}");
    let parent_sees = requests[3].body["messages"].to_string();
    assert!(parent_sees.contains("Wrote hello.txt"), "{parent_sees}");
}

/// A sandbox the parent is narrowed to while a subagent runs narrows the subagent too: after
/// `/sandbox read-only` its next write is refused, where before the fix the subagent kept the
/// sandbox the parent had when it started (its mode is high-risk: the sandbox is what bounds
/// it).
#[tokio::test]
async fn a_narrower_sandbox_reaches_a_subagent_already_running() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use tollgate::policy::mode::SandboxPolicy;
    let narrowed = Arc::new(AtomicBool::new(false));
    let seen = narrowed.clone();
    let llm = FakeLlm::start(vec![
        tool_calls(&[("s1", "spawn_subagent", r#"{"task":"write two files"}"#)]),
        // The subagent: one write, then another after the parent's sandbox is narrowed.
        tool_calls(&[("w1", "write_file", r#"{"path":"one.txt","content":"1"}"#)]),
        Reply::Until(
            Condition(Arc::new(move || seen.load(Ordering::SeqCst))),
            Box::new(tool_calls(&[(
                "w2",
                "write_file",
                r#"{"path":"two.txt","content":"2"}"#,
            )])),
        ),
        text("Wrote one of two."),
        text("The subagent wrote one file."),
    ])
    .await;
    let (_dir, root, assembled, approver, store) =
        parent_that_spawns(&llm, "tools = [\"write_file\", \"spawn_subagent\"]\n");
    // The subagent's second request carries w1's result: w1 was decided and ran. Then the
    // narrowing, then the subagent's second write.
    let narrow_after_w1 = async {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while llm.requests().len() < 3 {
            assert!(
                std::time::Instant::now() < deadline,
                "the subagent never asked again"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assembled
            .session
            .set_sandbox(SandboxPolicy::ReadOnly)
            .unwrap();
        narrowed.store(true, Ordering::SeqCst);
    };
    let (outcome, ()) = tokio::join!(
        assembled.runner.start(
            assembled.session.clone(),
            "run-n",
            "delegate it",
            CancellationToken::new(),
        ),
        narrow_after_w1
    );
    assert_eq!(outcome.unwrap().answer, "The subagent wrote one file.");
    let workspace = root.join("ws/console_op");
    assert_eq!(
        std::fs::read_to_string(workspace.join("one.txt")).unwrap(),
        "1"
    );
    assert!(!workspace.join("two.txt").exists());
    let audit = tollgate::events::StoreEvents::read(store.as_ref(), None, None).unwrap();
    let decisions = |id: &str| -> Vec<String> {
        audit
            .iter()
            .filter(|e| e.call_id == id && e.kind.starts_with("permission_"))
            .map(|e| e.kind.clone())
            .collect()
    };
    assert_eq!(decisions("w1"), ["permission_granted"]);
    assert_eq!(decisions("w2"), ["permission_denied"]);
    assert_eq!(approver.asked_ids(), ["s1"]);
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
