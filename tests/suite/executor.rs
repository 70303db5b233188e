//! A scripted tool batch through the executor: the concurrency cap, timeouts, cancel, queued
//! approvals decided again when an "always" lands, write-ahead of what was approved, and the
//! events each call records.

use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tollgate::config::{self, Config};
use tollgate::events::MemoryEvents;
use tollgate::executor::approval::{
    Answer, AnswerFuture, ApprovalRequest, Approver, NobodyApproves,
};
use tollgate::executor::session::{SessionPolicy, Snapshot};
use tollgate::executor::{
    CallOutcome, Classifier, Executor, NoClassifier, ToolCallRequest, ToolCallResult,
};
use tollgate::policy::declaration::Declaration;
use tollgate::policy::mode::{ApprovalMode, Dials, SandboxPolicy};
use tollgate::policy::tier::Tier;
use tollgate::policy::{DecisionSource, ReasonCode};
use tollgate::sandbox::ShellRunner;
use tollgate::store::{MemoryStore, Store};
use tollgate::tools::Provenance;
use tollgate::tools::{
    ApprovedCall, ExecContext, Proposal, ProposeContext, Tool, ToolError, ToolFuture, ToolOutput,
    ToolRegistry, Toolset,
};

/// A read-only tool that sleeps (`ms`, or forever) and tracks how many run at once.
struct Sleeper {
    name: &'static str,
    running: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
}

impl Tool for Sleeper {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "sleeps"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn propose(&self, args: &Value, _: &ProposeContext) -> Result<Proposal, ToolError> {
        Ok(Proposal {
            tool: self.name.into(),
            message: "sleep".into(),
            preview: None,
            effects: vec![],
            declaration: Declaration::tier(Tier::ReadOnly),
            execute_tool: self.name.into(),
            execute_args: args.clone(),
            options: None,
            shell: None,
            mcp: None,
        })
    }
    fn execute<'a>(&'a self, call: &'a ApprovedCall, _: &'a ExecContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.peak.fetch_max(now, Ordering::SeqCst);
            match call.execute_args().get("ms").and_then(Value::as_u64) {
                Some(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
                None => std::future::pending::<()>().await,
            }
            self.running.fetch_sub(1, Ordering::SeqCst);
            ToolOutput::ok("slept")
        })
    }
}

/// Answers prompts from a script, and records what it was asked and what was withdrawn.
#[derive(Default)]
pub struct Scripted {
    answers: Mutex<HashMap<String, oneshot::Receiver<Answer>>>,
    asked: Mutex<Vec<ApprovalRequest>>,
    withdrawn: Mutex<Vec<(String, String)>>,
}

impl Scripted {
    pub fn expect(&self, call_id: &str) -> oneshot::Sender<Answer> {
        let (tx, rx) = oneshot::channel();
        self.answers.lock().unwrap().insert(call_id.into(), rx);
        tx
    }
    pub fn asked_ids(&self) -> Vec<String> {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.call_id.clone())
            .collect()
    }
}

impl tollgate::executor::QuestionAsker for Scripted {}

impl Approver for Scripted {
    fn ask(&self, request: ApprovalRequest) -> AnswerFuture<'_> {
        let rx = self.answers.lock().unwrap().remove(&request.call_id);
        self.asked.lock().unwrap().push(request);
        Box::pin(async move {
            match rx {
                Some(rx) => rx.await.unwrap_or(Answer::TimedOut),
                None => std::future::pending().await,
            }
        })
    }
    fn withdraw(&self, call_id: &str, outcome: &str) {
        self.withdrawn
            .lock()
            .unwrap()
            .push((call_id.into(), outcome.into()));
    }
}

pub struct Bench {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub executor: Arc<Executor>,
    pub session: Arc<SessionPolicy>,
    pub approver: Arc<Scripted>,
    pub events: Arc<MemoryEvents>,
    store: Arc<MemoryStore>,
    peak: Arc<AtomicUsize>,
}

fn bench(approver_is_nobody: bool) -> Bench {
    bench_with(approver_is_nobody, "")
}

fn bench_with(approver_is_nobody: bool, extra_agent_lines: &str) -> Bench {
    bench_classified(
        approver_is_nobody,
        extra_agent_lines,
        Arc::new(NoClassifier),
    )
}

/// A bench whose unclassified commands go to `classifier`.
pub fn bench_classified(
    approver_is_nobody: bool,
    extra_agent_lines: &str,
    classifier: Arc<dyn Classifier>,
) -> Bench {
    let dir = tempfile::tempdir().unwrap();
    let root = tollgate::policy::paths::canonical_root(dir.path());
    let text = r#"
[store]
path = "store"
[providers.p]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
[agents.a]
provider = "p"
model = "m"
tools = ["read_file", "write_file", "edit_file", "ls", "find", "grep", "mkdir", "rm", "mv", "cp", "execute_command", "web_fetch", "http_request", "manage_todos", "list_todos", "view_memory", "manage_memory", "retrieve_tool_result", "get_time", "context_info"]
workspace = "ws"
tool_timeout_secs = 1
EXTRA
"#
    .replace("EXTRA", extra_agent_lines);
    let file = root.join("tollgate.toml");
    std::fs::write(&file, &text).unwrap();
    let config: Config = config::load_with_env(Some(file), Some(&text), HashMap::new()).unwrap();
    let agent = &config.agents["a"];
    let mut registry = ToolRegistry::builtin();
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    registry
        .register(Arc::new(Sleeper {
            name: "sleeper",
            running: running.clone(),
            peak: peak.clone(),
        }))
        .unwrap();
    let toolset = Toolset::for_agent(agent, ["sleeper"]);
    let session = Arc::new(SessionPolicy::new(
        "console:tester",
        "a",
        agent.sandbox,
        Snapshot {
            dials: Dials {
                mode: ApprovalMode::LowRisk,
                sandbox: SandboxPolicy::WorkspaceWrite,
            },
            tool_allowlist: BTreeSet::new(),
            command_allowlist: BTreeSet::new(),
        },
        None,
    ));
    let approver = Arc::new(Scripted::default());
    let events = Arc::new(MemoryEvents::default());
    let store = Arc::new(MemoryStore::new());
    let approver_used: Arc<dyn tollgate::executor::approval::Approver> = if approver_is_nobody {
        Arc::new(NobodyApproves)
    } else {
        approver.clone()
    };
    let executor = Arc::new(
        Executor::new(
            Arc::new(config.clone()),
            Arc::new(registry),
            toolset,
            ShellRunner::new(PathBuf::from(env!("CARGO_BIN_EXE_tollgate"))),
            approver_used,
            classifier,
            events.clone(),
        )
        .with_store(store.clone() as Arc<dyn Store>)
        .with_max_concurrent(10),
    );
    std::fs::create_dir_all(root.join("ws/console_tester")).unwrap();
    Bench {
        _dir: dir,
        root,
        executor,
        session,
        approver,
        events,
        store,
        peak,
    }
}

pub fn call(id: &str, name: &str, args: Value) -> ToolCallRequest {
    ToolCallRequest {
        id: id.into(),
        name: name.into(),
        arguments: args.to_string(),
        run: None,
    }
}

pub async fn batch(b: &Bench, calls: Vec<ToolCallRequest>) -> Vec<ToolCallResult> {
    b.executor
        .run_batch(b.session.clone(), calls, CancellationToken::new())
        .await
}

pub fn ws(b: &Bench, rel: &str) -> PathBuf {
    b.root.join("ws/console_tester").join(rel)
}

#[tokio::test]
async fn at_most_ten_at_a_time_and_every_call_answered_in_order() {
    let b = bench(false);
    let calls: Vec<_> = (0..14)
        .map(|i| call(&format!("c{i}"), "sleeper", json!({"ms": 300})))
        .collect();
    let results = batch(&b, calls).await;
    assert_eq!(b.peak.load(Ordering::SeqCst), 10);
    let ids: Vec<_> = results.iter().map(|r| r.id.clone()).collect();
    assert_eq!(ids, (0..14).map(|i| format!("c{i}")).collect::<Vec<_>>());
    assert!(results.iter().all(|r| r.outcome == CallOutcome::Executed));
}

#[tokio::test]
async fn a_timeout_is_a_failed_result_not_a_crash() {
    let b = bench(false);
    let started = Instant::now();
    let results = batch(
        &b,
        vec![
            call("t", "sleeper", json!({})),
            call("q", "sleeper", json!({"ms": 10})),
        ],
    )
    .await;
    assert_eq!(results[0].outcome, CallOutcome::TimedOut);
    assert!(results[0].output.is_error);
    assert_eq!(results[1].outcome, CallOutcome::Executed);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn cancel_answers_running_and_waiting_calls() {
    let b = bench(false);
    let token = CancellationToken::new();
    let canceller = token.clone();
    let executor = b.executor.clone();
    let session = b.session.clone();
    let run = tokio::spawn(async move {
        executor
            .run_batch(
                session,
                vec![
                    call("run", "sleeper", json!({})),
                    call(
                        "wait",
                        "write_file",
                        json!({"path": "x.txt", "content": "x"}),
                    ),
                ],
                token,
            )
            .await
    });
    // Cancelled once one call runs and the other waits for its answer (the sleeper counts
    // itself in when it starts; the approver records the prompt).
    for _ in 0..250 {
        if b.peak.load(Ordering::SeqCst) == 1 && b.approver.asked_ids() == ["wait"] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert_eq!(b.peak.load(Ordering::SeqCst), 1, "the sleeper started");
    assert_eq!(b.approver.asked_ids(), ["wait"]);
    canceller.cancel();
    let results = tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(results[0].outcome, CallOutcome::Cancelled);
    assert_eq!(results[1].outcome, CallOutcome::Cancelled);
    assert!(results[1].output.text.contains("nothing ran"));
    assert!(!ws(&b, "x.txt").exists());
}

#[tokio::test]
async fn an_always_answer_decides_the_waiting_calls_again() {
    let b = bench(false);
    let first = b.approver.expect("w1");
    let executor = b.executor.clone();
    let session = b.session.clone();
    let run = tokio::spawn(async move {
        executor
            .run_batch(
                session,
                vec![
                    call(
                        "w1",
                        "write_file",
                        json!({"path": "one.txt", "content": "1"}),
                    ),
                    call(
                        "w2",
                        "write_file",
                        json!({"path": "two.txt", "content": "2"}),
                    ),
                    call("r", "read_file", json!({"path": "missing.txt"})),
                ],
                CancellationToken::new(),
            )
            .await
    });
    // Both writes wait with their own card; the read ran unasked.
    for _ in 0..100 {
        if b.approver.asked_ids().len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut asked = b.approver.asked_ids();
    asked.sort();
    assert_eq!(asked, ["w1", "w2"]);
    first
        .send(Answer::AlwaysTool {
            by: "telegram:42".into(),
        })
        .unwrap();
    let results = tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        results[0].outcome,
        CallOutcome::Executed,
        "{:?}",
        results[0]
    );
    assert_eq!(
        results[1].outcome,
        CallOutcome::Executed,
        "{:?}",
        results[1]
    );
    assert_eq!(std::fs::read_to_string(ws(&b, "one.txt")).unwrap(), "1");
    assert_eq!(std::fs::read_to_string(ws(&b, "two.txt")).unwrap(), "2");
    assert_eq!(
        *b.approver.withdrawn.lock().unwrap(),
        [("w2".to_string(), "allowed".to_string())]
    );
    assert!(
        results[2].output.is_error,
        "reading a missing file is an error result"
    );
    // The second call's grant names the allowlist that answered it.
    let events = b.events.all();
    let w2: Vec<_> = events
        .iter()
        .filter(|e| e.call_id == "w2")
        .map(|e| (e.kind.as_str(), e.fields.get("source").cloned()))
        .collect();
    assert_eq!(
        w2,
        [
            ("tool_proposed", None),
            ("permission_requested", None),
            ("permission_granted", Some(json!("allowlist"))),
            ("tool_started", None),
            ("tool_completed", None),
        ]
    );
}

#[tokio::test]
async fn what_was_approved_is_what_runs() {
    let b = bench(false);
    std::fs::write(ws(&b, "notes.txt"), "alpha\n").unwrap();
    let answer = b.approver.expect("e");
    let executor = b.executor.clone();
    let session = b.session.clone();
    let run = tokio::spawn(async move {
        executor
            .run_batch(
                session,
                vec![call(
                    "e",
                    "edit_file",
                    json!({"path": "notes.txt", "old": "alpha", "new": "beta"}),
                )],
                CancellationToken::new(),
            )
            .await
    });
    for _ in 0..100 {
        if !b.approver.asked_ids().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let preview = b.approver.asked.lock().unwrap()[0]
        .proposal
        .preview
        .clone()
        .unwrap();
    assert!(
        preview.contains("-alpha") && preview.contains("+beta"),
        "{preview}"
    );
    // The file changes after its diff was shown: the approved edit must not land.
    std::fs::write(ws(&b, "notes.txt"), "alpha\ngamma\n").unwrap();
    answer
        .send(Answer::Approve {
            by: "telegram:42".into(),
        })
        .unwrap();
    let results = run.await.unwrap();
    assert!(
        results[0]
            .output
            .text
            .contains("changed since the approved preview"),
        "{:?}",
        results[0]
    );
    assert_eq!(
        std::fs::read_to_string(ws(&b, "notes.txt")).unwrap(),
        "alpha\ngamma\n"
    );
}

#[tokio::test]
async fn denials_refusals_and_bad_arguments_are_results() {
    let b = bench(false);
    let results = batch(
        &b,
        vec![
            call("d", "execute_command", json!({"command": "sudo reboot"})),
            call("j", "read_file", json!("{not json")),
            ToolCallRequest {
                id: "raw".into(),
                name: "read_file".into(),
                arguments: "{\"path\": ".into(),
                run: None,
            },
            call("t", "web_fetch", json!({"url": "http://x/"})),
            call("s", "read_file", json!({"path": "/etc/shadow"})),
        ],
    )
    .await;
    assert_eq!(
        results[0].outcome,
        CallOutcome::Denied(Provenance::Gate {
            source: DecisionSource::Denylist,
            reason_code: ReasonCode::Denylist("privilege")
        })
    );
    assert!(results[0].output.text.contains("nothing ran"));
    assert_eq!(results[1].outcome, CallOutcome::Refused);
    assert_eq!(results[2].outcome, CallOutcome::Refused);
    assert!(results[2].output.text.contains("not valid JSON"));
    assert_eq!(
        results[3].outcome,
        CallOutcome::Denied(Provenance::Gate {
            source: DecisionSource::Sandbox,
            reason_code: ReasonCode::NetworkRequest
        })
    );
    assert_eq!(
        results[4].outcome,
        CallOutcome::Denied(Provenance::Gate {
            source: DecisionSource::Sandbox,
            reason_code: ReasonCode::SandboxRead
        })
    );
}

#[tokio::test]
async fn unattended_prompts_are_refused_with_the_fix() {
    let b = bench(true);
    let results = batch(
        &b,
        vec![call(
            "g",
            "execute_command",
            json!({"command": "git status"}),
        )],
    )
    .await;
    assert_eq!(results[0].outcome, CallOutcome::Refused);
    assert!(
        results[0]
            .output
            .text
            .contains("allowlist `git status` for agent a"),
        "{}",
        results[0].output.text
    );
}

#[tokio::test]
async fn approved_shell_commands_run_sandboxed_and_big_results_are_stored() {
    let b = bench(false);
    let go = b.approver.expect("sh");
    go.send(Answer::Approve {
        by: "console:op".into(),
    })
    .unwrap();
    std::fs::write(ws(&b, "big.txt"), "x".repeat(100_000)).unwrap();
    let mut results = batch(
        &b,
        vec![call(
            "sh",
            "execute_command",
            json!({"command": "echo hello > greeting.txt; cat greeting.txt; touch /etc/nope"}),
        )],
    )
    .await;
    // One reply's calls run concurrently: look at what the command made in the next reply.
    results.extend(
        batch(
            &b,
            vec![
                call("big", "read_file", json!({"path": "big.txt"})),
                call("ls", "ls", json!({})),
                call("f", "find", json!({"pattern": "*.txt"})),
                call("g", "grep", json!({"pattern": "hel+o"})),
            ],
        )
        .await,
    );
    assert_eq!(results[0].outcome, CallOutcome::Executed);
    assert!(
        results[0].output.text.contains("hello"),
        "{}",
        results[0].output.text
    );
    assert!(
        results[0].output.text.contains("exit code 1"),
        "touch /etc must fail: {}",
        results[0].output.text
    );
    assert!(!std::path::Path::new("/etc/nope").exists());
    assert!(results[1].output.truncated);
    assert!(
        results[1].output.text.contains("stored as `big`"),
        "{}",
        &results[1].output.text[results[1].output.text.len() - 200..]
    );
    let stored = b
        .store
        .get(
            "tool_results",
            &tollgate::tools::builtin::result_key("console:tester", "big"),
        )
        .unwrap()
        .unwrap();
    assert_eq!(stored.len(), 100_000);
    assert!(
        results[2].output.text.contains("greeting.txt"),
        "{}",
        results[2].output.text
    );
    assert!(
        results[3].output.text.contains("big.txt")
            && results[3].output.text.contains("greeting.txt"),
        "{}",
        results[3].output.text
    );
    assert!(
        results[4].output.text.contains("greeting.txt:1:hello"),
        "{}",
        results[4].output.text
    );
}

#[tokio::test]
async fn web_tools_talk_to_a_loopback_server() {
    let b = bench_with(false, "network_access = true");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let record = seen.clone();
    let server = tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let mut buffer = vec![0u8; 65536];
            let n = socket.read(&mut buffer).await.unwrap_or(0);
            let request = String::from_utf8_lossy(&buffer[..n]).into_owned();
            let html = request.starts_with("GET");
            record.lock().unwrap().push(request);
            let (kind, body) = if html {
                (
                    "text/html",
                    "<html><script>x()</script><body><h1>Docs</h1><p>a &amp; b</p></body></html>",
                )
            } else {
                ("application/json", "{\"ok\":true}")
            };
            let reply = format!(
                "HTTP/1.1 201 Created\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(reply.as_bytes()).await;
        }
    });
    let go = b.approver.expect("post");
    go.send(Answer::Approve {
        by: "console:op".into(),
    })
    .unwrap();
    let results = batch(&b, vec![
        call("get", "web_fetch", json!({"url": format!("http://127.0.0.1:{port}/docs")})),
        call("post", "http_request", json!({"method": "POST", "url": format!("http://127.0.0.1:{port}/api"), "headers": {"x-probe": "1"}, "body": "{\"n\":1}"})),
    ]).await;
    assert_eq!(results[0].output.text, "Docs\na & b", "{:?}", results[0]);
    assert_eq!(
        b.approver.asked_ids(),
        ["post"],
        "POST is high-risk: it asked"
    );
    assert!(
        results[1].output.text.starts_with("HTTP 201"),
        "{:?}",
        results[1]
    );
    let requests = seen.lock().unwrap().clone();
    let post = requests
        .iter()
        .find(|r| r.starts_with("POST /api"))
        .unwrap();
    assert!(
        post.contains("x-probe: 1") && post.ends_with("{\"n\":1}"),
        "{post}"
    );
    server.abort();
}

#[tokio::test]
async fn todos_memory_and_stored_results_live_in_the_store() {
    let b = bench(false);
    std::fs::write(ws(&b, "big.txt"), "y".repeat(50_000)).unwrap();
    let first = batch(
        &b,
        vec![
            call(
                "t1",
                "manage_todos",
                json!({"action": "add", "text": "write tests"}),
            ),
            call(
                "m1",
                "manage_memory",
                json!({"action": "set", "key": "lang", "value": "rust"}),
            ),
            call("big", "read_file", json!({"path": "big.txt"})),
        ],
    )
    .await;
    assert!(first.iter().all(|r| !r.output.is_error), "{first:?}");
    // A forum topic's session extends this session's key: its results stay its own.
    b.store
        .insert(
            "tool_results",
            &tollgate::tools::builtin::result_key("console:tester:7", "topic"),
            b"the topic's result",
        )
        .unwrap();
    let second = batch(
        &b,
        vec![
            call(
                "t2",
                "manage_todos",
                json!({"action": "add", "text": "ship"}),
            ),
            call("v", "view_memory", json!({"key": "lang"})),
            call(
                "r",
                "retrieve_tool_result",
                json!({"id": "big", "offset": 49990}),
            ),
            call("x", "retrieve_tool_result", json!({"id": "telegram:1:big"})),
            call(
                "y",
                "retrieve_tool_result",
                json!({"id": "console:tester:7:topic"}),
            ),
            call("z", "retrieve_tool_result", json!({"id": "7:topic"})),
            call("time", "get_time", json!({})),
        ],
    )
    .await;
    assert_eq!(second[1].output.text, "rust");
    assert_eq!(second[2].output.text, "y".repeat(10));
    for other in &second[3..=5] {
        assert!(
            other.output.is_error && !other.output.text.contains("topic's result"),
            "another session's result is not readable: {:?}",
            other.output
        );
    }
    assert!(
        second[6].output.text.ends_with('Z') && second[6].output.text.len() == 20,
        "{}",
        second[6].output.text
    );
    let third = batch(
        &b,
        vec![call(
            "c",
            "manage_todos",
            json!({"action": "complete", "id": 1}),
        )],
    )
    .await;
    assert_eq!(third[0].output.text, "1. [x] write tests\n2. [ ] ship");
}

#[tokio::test]
async fn huge_inputs_and_outputs_stay_bounded() {
    let b = bench(false);
    let lines: String = (0..20_000).map(|i| format!("match line {i}\n")).collect();
    std::fs::write(ws(&b, "many.txt"), &lines).unwrap();
    let huge = json!({"path": "x", "pad": "z".repeat(2 * 1024 * 1024)});
    let results = batch(
        &b,
        vec![
            call("g", "grep", json!({"pattern": "match", "path": "many.txt"})),
            call("h", "read_file", huge),
        ],
    )
    .await;
    assert!(
        results[0].output.truncated,
        "grep output over 256 KB is cut and marked"
    );
    assert!(results[0].output.text.len() <= 300 * 1024);
    assert_eq!(results[1].outcome, CallOutcome::Refused);
    assert!(results[1].output.text.contains("the limit is"));
}

#[test]
fn only_the_toolset_is_offered() {
    let b = bench(false);
    let definitions = b.executor.registry.definitions(&b.executor.toolset);
    let names: Vec<&str> = definitions.iter().map(|d| d.name.as_str()).collect();
    assert!(names.contains(&"read_file") && names.contains(&"sleeper"));
    assert!(
        !names.contains(&"spawn_subagent"),
        "not in the agent's tools: never offered"
    );
    let read = definitions.iter().find(|d| d.name == "read_file").unwrap();
    assert_eq!(read.parameters["required"], json!(["path"]));
}

#[tokio::test]
async fn file_moves_copies_and_removals_happen_where_approved() {
    let b = bench(false);
    std::fs::write(ws(&b, "a.txt"), "A").unwrap();
    for id in ["cp", "mv", "rm"] {
        b.approver
            .expect(id)
            .send(Answer::Approve {
                by: "console:op".into(),
            })
            .unwrap();
    }
    let made = batch(&b, vec![call("mk", "mkdir", json!({"path": "d/e"}))]).await;
    assert_eq!(made[0].outcome, CallOutcome::Executed, "{:?}", made[0]);
    let copied = batch(
        &b,
        vec![call(
            "cp",
            "cp",
            json!({"from": "a.txt", "to": "d/e/b.txt"}),
        )],
    )
    .await;
    assert_eq!(copied[0].outcome, CallOutcome::Executed, "{:?}", copied[0]);
    let moved = batch(
        &b,
        vec![call(
            "mv",
            "mv",
            json!({"from": "d/e/b.txt", "to": "c.txt"}),
        )],
    )
    .await;
    assert_eq!(moved[0].outcome, CallOutcome::Executed, "{:?}", moved[0]);
    let removed = batch(&b, vec![call("rm", "rm", json!({"path": "a.txt"}))]).await;
    assert_eq!(
        removed[0].outcome,
        CallOutcome::Executed,
        "{:?}",
        removed[0]
    );
    assert!(ws(&b, "d/e").is_dir());
    assert_eq!(std::fs::read_to_string(ws(&b, "c.txt")).unwrap(), "A");
    assert!(!ws(&b, "a.txt").exists() && !ws(&b, "d/e/b.txt").exists());
    let info = batch(&b, vec![call("ci", "context_info", json!({}))]).await;
    assert!(
        info[0].output.text.contains("session console:tester"),
        "{}",
        info[0].output.text
    );
}

#[tokio::test]
async fn session_memory_is_not_shared_between_sessions() {
    let b = bench(false);
    batch(
        &b,
        vec![call(
            "m",
            "manage_memory",
            json!({"action": "set", "key": "k", "value": "mine"}),
        )],
    )
    .await;
    let other = Arc::new(SessionPolicy::new(
        "console:someone-else",
        "a",
        SandboxPolicy::WorkspaceWrite,
        b.session.snapshot(),
        None,
    ));
    let seen = b
        .executor
        .run_batch(
            other,
            vec![call("v", "view_memory", json!({"key": "k"}))],
            CancellationToken::new(),
        )
        .await;
    assert!(
        seen[0].output.text.contains("nothing saved"),
        "{}",
        seen[0].output.text
    );
}
