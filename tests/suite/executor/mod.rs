//! The executor bench: a scripted tool batch through the executor. This module holds the
//! harness — a `Sleeper` tool that counts how many run at once, a `Scripted` approver, the
//! `Bench` and its helpers (also used by `shell_truth` and `runs`); the scenarios live in its
//! submodules.

mod approvals;
mod memory;
mod scheduling;
mod tools;

use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tollgate::config::{self, Config};
use tollgate::events::MemoryEvents;
use tollgate::executor::approval::{
    Answer, AnswerFuture, ApprovalRequest, Approver, NobodyApproves, WithdrawFuture,
};
use tollgate::executor::session::{SessionPolicy, Snapshot};
use tollgate::executor::{Classifier, Executor, NoClassifier, ToolCallRequest, ToolCallResult};
use tollgate::policy::declaration::Declaration;
use tollgate::policy::mode::{ApprovalMode, Dials, SandboxPolicy};
use tollgate::policy::tier::Tier;
use tollgate::sandbox::ShellRunner;
use tollgate::store::{MemoryStore, Store};
use tollgate::tools::{
    ApprovedCall, ExecContext, Proposal, ProposeContext, Tool, ToolError, ToolFuture, ToolOutput,
    ToolRegistry, Toolset,
};

/// A read-only tool whose propose half blocks its thread until another task lets it go (as a
/// large file's read and diff would), saying it `proposes_slowly`: it answers "let go" when
/// the other task could run meanwhile, and "stalled" when it waited 5 s in vain.
pub struct SlowProposer {
    pub proposing: Arc<std::sync::atomic::AtomicBool>,
    pub release: Mutex<std::sync::mpsc::Receiver<()>>,
}

impl Tool for SlowProposer {
    fn name(&self) -> &str {
        "slow_proposer"
    }
    fn description(&self) -> &str {
        "blocks while proposing"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn proposes_slowly(&self) -> bool {
        true
    }
    fn propose(&self, args: &Value, _: &ProposeContext) -> Result<Proposal, ToolError> {
        self.proposing.store(true, Ordering::SeqCst);
        let released = self
            .release
            .lock()
            .unwrap()
            .recv_timeout(Duration::from_secs(5))
            .is_ok();
        Ok(Proposal {
            tool: "slow_proposer".into(),
            message: if released { "let go" } else { "stalled" }.into(),
            preview: None,
            effects: vec![],
            declaration: Declaration::tier(Tier::ReadOnly),
            execute_tool: "slow_proposer".into(),
            execute_args: args.clone(),
            options: None,
            shell: None,
            mcp: None,
        })
    }
    fn execute<'a>(&'a self, call: &'a ApprovedCall, _: &'a ExecContext) -> ToolFuture<'a> {
        Box::pin(async move { ToolOutput::ok(call.proposal().message.clone()) })
    }
}

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
    /// Answers that settle a call's card before a withdrawal reaches it (a press that won the
    /// race), by call id.
    came_first: Mutex<HashMap<String, Answer>>,
}

impl Scripted {
    pub fn expect(&self, call_id: &str) -> oneshot::Sender<Answer> {
        let (tx, rx) = oneshot::channel();
        self.answers.lock().unwrap().insert(call_id.into(), rx);
        tx
    }
    /// `answer` settles `call_id`'s card just before any withdrawal of it.
    pub fn answered_before_withdrawal(&self, call_id: &str, answer: Answer) {
        self.came_first
            .lock()
            .unwrap()
            .insert(call_id.into(), answer);
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
    fn withdraw(&self, call_id: &str, _asked: &str, outcome: &str) -> WithdrawFuture<'_> {
        self.withdrawn
            .lock()
            .unwrap()
            .push((call_id.into(), outcome.into()));
        let first = self.came_first.lock().unwrap().remove(call_id);
        Box::pin(std::future::ready(first))
    }
}

pub struct Bench {
    /// Lets the `slow_proposer`'s propose half go; it says when it is proposing.
    pub release_proposal: std::sync::mpsc::Sender<()>,
    pub proposing: Arc<std::sync::atomic::AtomicBool>,
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
tools = ["read_file", "write_file", "edit_file", "ls", "find", "grep", "mkdir", "rm", "mv", "cp", "execute_command", "web_fetch", "http_request", "manage_todos", "list_todos", "view_memory", "manage_memory", "retrieve_tool_result", "get_time", "context_info", "add_reminder", "list_reminders", "cancel_reminder"]
workspace = "ws"
TIMEOUT
EXTRA
"#
    .replace("EXTRA", extra_agent_lines)
    // One second, so a sleeping tool times out quickly; a bench whose commands really run
    // in the sandbox sets its own (a loaded machine can take longer to start one).
    .replace(
        "TIMEOUT",
        if extra_agent_lines.contains("tool_timeout_secs") {
            ""
        } else {
            "tool_timeout_secs = 1"
        },
    );
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
    let (release_proposal, release) = std::sync::mpsc::channel();
    let proposing = Arc::new(std::sync::atomic::AtomicBool::new(false));
    registry
        .register(Arc::new(SlowProposer {
            proposing: proposing.clone(),
            release: Mutex::new(release),
        }))
        .unwrap();
    let toolset = Toolset::for_agent(agent, ["sleeper", "slow_proposer"]);
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
        release_proposal,
        proposing,
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
