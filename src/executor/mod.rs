//! The executor: one LLM reply's tool calls, each through the gate and — once allowed or
//! approved — its execute half, at most `max_concurrent` at a time, each with its timeout, all
//! cancellable. Prompts are queued, not raced: while a call waits for its answer, any change to
//! the session (another answer's "always", `/mode`, `/sandbox`) decides it again at once.
//! Every step is recorded as an event.

pub mod approval;
pub mod session;

use crate::config::{AgentConfig, Config};
use crate::events::{Event, EventSink};
use crate::gate::{Evaluation, evaluate, roots_for, workspace_for};
use crate::policy::classifier::ClassifierReport;
use crate::policy::env::{child_environment, configured_secret_names, shell_path};
use crate::policy::resolve::{GateContext, GateDecision};
use crate::policy::sandbox::SandboxSupport;
use crate::policy::tier::Decision;
use crate::sandbox::ShellRunner;
use crate::store::Store;
use crate::tools::{
    Approval, ApprovedCall, ExecContext, Proposal, ProposeContext, ToolOutput, ToolRegistry,
    Toolset,
};
use approval::{Answer, ApprovalRequest, Approver};
use serde_json::{Value, json};
use session::SessionPolicy;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Arguments larger than this are refused before parsing: no tool needs them, and a model that
/// sends them is looping or confused.
pub const MAX_ARGUMENTS: usize = 1024 * 1024;

/// Results larger than this are stored and replaced by a summary and an id.
pub const STORE_RESULT_OVER: usize = 32 * 1024;
/// What the model sees of a stored result before it pages with `retrieve_tool_result`.
const STORED_PREVIEW: usize = 4 * 1024;

/// A tool call as the model wrote it.
#[derive(Clone, Debug)]
pub struct ToolCallRequest {
    pub id: String,
    pub name: String,
    /// The raw JSON text of the arguments (it may not parse).
    pub arguments: String,
}

impl ToolCallRequest {
    /// This call's result.
    #[must_use]
    pub fn result(&self, output: ToolOutput, outcome: CallOutcome) -> ToolCallResult {
        ToolCallResult {
            id: self.id.clone(),
            name: self.name.clone(),
            output,
            outcome,
        }
    }
}

/// How a call ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallOutcome {
    Executed,
    /// The gate or a person said no (`source`: denylist, sandbox, user, tool, admin, runtime…).
    Denied {
        source: String,
        reason_code: String,
    },
    /// Never reached a decision (not in the toolset, bad arguments) or nobody could answer.
    Refused,
    TimedOut,
    Cancelled,
}

/// A call's result, paired with its call.
#[derive(Clone, Debug)]
pub struct ToolCallResult {
    pub id: String,
    pub name: String,
    pub output: ToolOutput,
    pub outcome: CallOutcome,
}

pub type ClassifyFuture<'a> = Pin<Box<dyn Future<Output = ClassifierReport> + Send + 'a>>;

/// Places an unclassified command on a tier (the agent runtime brings the model-backed one).
pub trait Classifier: Send + Sync {
    fn classify<'a>(&'a self, command: &'a str) -> ClassifyFuture<'a>;
}

/// No classifier: unclassified commands ask a human.
pub struct NoClassifier;

impl Classifier for NoClassifier {
    fn classify<'a>(&'a self, _command: &'a str) -> ClassifyFuture<'a> {
        Box::pin(async { ClassifierReport::not_run("no classifier is configured here") })
    }
}

/// Where a call's progress is written ahead: pending before its card is shown, running before
/// it starts, done after. A failed write stops the call (nothing runs that was not recorded).
pub trait CallJournal: Send + Sync {
    fn record(&self, session: &str, call_id: &str, status: JournalStatus) -> Result<(), String>;
}

/// A step of one call, as the journal records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JournalStatus {
    Pending,
    Running,
    Done { output: String, is_error: bool },
}

/// Everything the executor needs.
pub struct Executor {
    pub config: Arc<Config>,
    pub registry: Arc<ToolRegistry>,
    pub toolset: Toolset,
    pub support: SandboxSupport,
    pub runner: ShellRunner,
    pub approver: Arc<dyn Approver>,
    pub classifier: Arc<dyn Classifier>,
    pub events: Arc<dyn EventSink>,
    pub store: Option<Arc<dyn Store>>,
    pub max_concurrent: usize,
    /// Write-ahead records of each call (the durable run engine's), if any.
    pub journal: Option<Arc<dyn CallJournal>>,
    /// Runs subagents for `spawn_subagent` (absent inside a subagent: they do not nest).
    pub subagents: Option<Arc<dyn SubagentHost>>,
    /// The conversation, for `summarize_context` and `context_info`.
    pub context: Option<Arc<dyn ContextHost>>,
    /// Secrets taken out of every tool result before the model sees it.
    pub redactor: crate::policy::redact::Redactor,
    /// The agent's MCP servers, started when a session first needs their tools.
    pub mcp: Option<Arc<crate::tools::mcp::client::McpServers>>,
    /// The registry and toolset with the MCP servers' tools, once they were listed.
    pub with_mcp: std::sync::RwLock<Option<(Arc<ToolRegistry>, Toolset)>>,
}

/// The conversation a call belongs to: `summarize_context` and `context_info` reach it here.
pub trait ContextHost: Send + Sync {
    /// Replaces the conversation before the current turn with a summary; says what it did.
    fn summarize<'a>(&'a self, session: &'a str, focus: Option<&'a str>) -> SubagentFuture<'a>;
    /// How much of the conversation there is.
    fn describe(&self, session: &str) -> String;
}

pub type SubagentFuture<'a> = Pin<Box<dyn Future<Output = Result<String, String>> + Send + 'a>>;

/// Runs a subagent to completion and returns its final answer.
pub trait SubagentHost: Send + Sync {
    /// `cancel` is a child of the parent run's token: `/stop` reaches the subagent too.
    fn run<'a>(
        &'a self,
        parent: &'a SessionPolicy,
        task: &'a str,
        tools: Option<Vec<String>>,
        cancel: CancellationToken,
    ) -> SubagentFuture<'a>;
}

impl Executor {
    /// The tools offered now: the built-ins, plus the MCP servers' once they were listed.
    #[must_use]
    pub fn tools(&self) -> (Arc<ToolRegistry>, Toolset) {
        let listed = self
            .with_mcp
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        listed.unwrap_or_else(|| (self.registry.clone(), self.toolset.clone()))
    }

    /// Starts the agent's MCP servers the first time a session needs their tools, and adds
    /// what they list. Returns the problems (a server that failed, a key naming no tool): those
    /// servers' tools are left out, the rest go on.
    pub async fn prepare_tools(&self, agent: &str) -> Vec<String> {
        let Some(mcp) = &self.mcp else {
            return Vec::new();
        };
        if self
            .with_mcp
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
        {
            return Vec::new();
        }
        let listing = mcp.tools().await;
        let mut registry = (*self.registry).clone();
        let mut names = Vec::new();
        let mut problems = listing.problems;
        for tool in listing.tools {
            let name = tool.name.clone();
            match registry.register(tool) {
                Ok(()) => names.push(name),
                Err(e) => problems.push(e),
            }
        }
        let toolset = match self.config.agents.get(agent) {
            Some(agent_config) => Toolset::for_agent(
                agent_config,
                self.toolset
                    .iter()
                    .chain(names.iter().map(String::as_str))
                    .collect::<Vec<_>>(),
            ),
            None => self.toolset.clone(),
        };
        *self.with_mcp.write().unwrap_or_else(|p| p.into_inner()) =
            Some((Arc::new(registry), toolset));
        problems
    }

    /// Runs one reply's calls concurrently (at most `max_concurrent`), returning results in
    /// the calls' order: every call gets exactly one result.
    pub async fn run_batch(
        self: &Arc<Self>,
        session: Arc<SessionPolicy>,
        calls: Vec<ToolCallRequest>,
        cancel: CancellationToken,
    ) -> Vec<ToolCallResult> {
        let permits = Arc::new(tokio::sync::Semaphore::new(self.max_concurrent.max(1)));
        let mut tasks = tokio::task::JoinSet::new();
        for (index, call) in calls.iter().cloned().enumerate() {
            let executor = Arc::clone(self);
            let session = Arc::clone(&session);
            let permits = Arc::clone(&permits);
            let cancel = cancel.clone();
            tasks.spawn(async move {
                let _permit = permits.acquire_owned().await;
                (index, executor.run_one(&session, call, cancel).await)
            });
        }
        let mut results: Vec<Option<ToolCallResult>> = vec![None; calls.len()];
        while let Some(joined) = tasks.join_next().await {
            if let Ok((index, result)) = joined {
                results[index] = Some(result);
            }
        }
        // A task that panicked still leaves its call answered, so the transcript stays valid.
        results
            .into_iter()
            .zip(calls)
            .map(|(result, call)| {
                result.unwrap_or_else(|| {
                    call.result(
                        ToolOutput::error("the tool failed unexpectedly; it may not have run"),
                        CallOutcome::Refused,
                    )
                })
            })
            .collect()
    }

    fn event(
        &self,
        session: &SessionPolicy,
        call: &ToolCallRequest,
        kind: &'static str,
        fields: Value,
    ) {
        self.events.record(Event {
            kind,
            session: session.key.clone(),
            call_id: call.id.clone(),
            tool: call.name.clone(),
            fields,
        });
    }

    fn agent(&self, session: &SessionPolicy) -> Option<&AgentConfig> {
        self.config.agents.get(&session.agent)
    }

    /// Decides with the session's current state.
    fn decide(
        &self,
        session: &SessionPolicy,
        call: &ToolCallRequest,
        args: &Value,
    ) -> Result<Evaluation, String> {
        let agent = self
            .agent(session)
            .ok_or_else(|| format!("agent {} is not configured", session.agent))?;
        let snapshot = session.snapshot();
        let workspace = workspace_for(agent, Some(&session.workspace_key));
        let roots = roots_for(&self.config, agent, &workspace);
        let ctx = GateContext {
            agent_name: &session.agent,
            agent,
            dials: snapshot.dials,
            roots: &roots,
            tool_allowlist: &snapshot.tool_allowlist,
            command_allowlist: &snapshot.command_allowlist,
            support: self.support,
        };
        let propose = ProposeContext {
            workspace,
            prefix_binaries: agent.prefix_binaries.clone(),
            roots: roots.clone(),
            sandbox: snapshot.dials.sandbox,
        };
        let (registry, toolset) = self.tools();
        Ok(evaluate(
            &ctx, &toolset, &registry, &propose, &call.name, args,
        ))
    }

    /// Decides, asking the classifier when only it can finish.
    async fn decide_fully(
        &self,
        session: &SessionPolicy,
        call: &ToolCallRequest,
        args: &Value,
    ) -> Result<Result<(Proposal, GateDecision), crate::gate::Refusal>, String> {
        match self.decide(session, call, args)? {
            Evaluation::Refused(refusal) => Ok(Err(refusal)),
            Evaluation::Decided { proposal, decision } => Ok(Ok((*proposal, decision))),
            Evaluation::Classify { proposal, deferred } => {
                let started = Instant::now();
                let report = self.classifier.classify(deferred.command()).await;
                self.event(
                    session,
                    call,
                    "classified",
                    json!({
                        "verdict": report.verdict, "cached": report.cached, "ran": report.ran,
                        "latency_ms": started.elapsed().as_millis() as u64,
                    }),
                );
                Ok(Ok((*proposal, deferred.finish(report))))
            }
        }
    }

    async fn run_one(
        &self,
        session: &SessionPolicy,
        call: ToolCallRequest,
        cancel: CancellationToken,
    ) -> ToolCallResult {
        let result = |output: ToolOutput, outcome: CallOutcome| call.result(output, outcome);
        if call.arguments.len() > MAX_ARGUMENTS {
            let message = format!(
                "the arguments are {} bytes; the limit is {MAX_ARGUMENTS}; nothing ran",
                call.arguments.len()
            );
            self.event(session, &call, "tool_failed", json!({"error": message}));
            return result(ToolOutput::error(message), CallOutcome::Refused);
        }
        let args: Value = match serde_json::from_str(if call.arguments.trim().is_empty() {
            "{}"
        } else {
            &call.arguments
        }) {
            Ok(v) => v,
            Err(e) => {
                let message = format!("the arguments are not valid JSON ({e}); nothing ran");
                self.event(session, &call, "tool_failed", json!({"error": message}));
                return result(ToolOutput::error(message), CallOutcome::Refused);
            }
        };
        self.event(session, &call, "tool_proposed", json!({"arguments": args}));
        let mut changes = session.subscribe();
        let (proposal, decision) = match self.decide_fully(session, &call, &args).await {
            Err(e) => return result(ToolOutput::error(e), CallOutcome::Refused),
            Ok(Err(refusal)) => {
                self.event(session, &call, "permission_denied", json!({"source": "toolset", "reason_code": refusal.code(), "reason": refusal.message()}));
                return result(ToolOutput::error(refusal.message()), CallOutcome::Refused);
            }
            Ok(Ok(pair)) => pair,
        };
        let approval = match decision.decision {
            Decision::Allow => {
                self.event(session, &call, "permission_granted", json!({"source": decision.source, "reason_code": decision.reason_code, "by": "gate"}));
                Approval::Gate {
                    source: decision.source.to_string(),
                    reason_code: decision.reason_code.to_string(),
                }
            }
            Decision::Deny => return self.denied(session, &call, &decision),
            Decision::Prompt => {
                match self
                    .wait_for_answer(
                        session,
                        &call,
                        &args,
                        proposal.clone(),
                        decision,
                        &mut changes,
                        cancel.clone(),
                    )
                    .await
                {
                    Ok((approval, proposal)) => {
                        return self
                            .execute(
                                session,
                                &call,
                                ApprovedCall::new(proposal, approval),
                                cancel,
                            )
                            .await;
                    }
                    Err(done) => return done,
                }
            }
        };
        self.execute(
            session,
            &call,
            ApprovedCall::new(proposal, approval),
            cancel,
        )
        .await
    }

    fn denied(
        &self,
        session: &SessionPolicy,
        call: &ToolCallRequest,
        decision: &GateDecision,
    ) -> ToolCallResult {
        self.event(session, call, "permission_denied", json!({"source": decision.source, "reason_code": decision.reason_code, "reason": decision.reason}));
        call.result(
            ToolOutput::error(format!(
                "denied by {} ({}): {}; nothing ran",
                decision.source, decision.reason_code, decision.reason
            )),
            CallOutcome::Denied {
                source: decision.source.to_string(),
                reason_code: decision.reason_code.to_string(),
            },
        )
    }

    /// Waits for a person's answer, deciding again whenever the session changes.
    #[allow(clippy::too_many_arguments)]
    async fn wait_for_answer(
        &self,
        session: &SessionPolicy,
        call: &ToolCallRequest,
        args: &Value,
        proposal: Proposal,
        decision: GateDecision,
        changes: &mut tokio::sync::watch::Receiver<session::Snapshot>,
        cancel: CancellationToken,
    ) -> Result<(Approval, Proposal), ToolCallResult> {
        let finish = |output: ToolOutput, outcome: CallOutcome| call.result(output, outcome);
        self.event(session, call, "permission_requested", json!({"reason_code": decision.reason_code, "reason": decision.reason, "tier": decision.tier}));
        // The card goes out only once its pending record is durable.
        if let Some(journal) = &self.journal
            && let Err(e) = journal.record(&session.key, &call.id, JournalStatus::Pending)
        {
            return Err(finish(
                ToolOutput::error(format!(
                    "the approval request could not be recorded ({e}); nothing ran"
                )),
                CallOutcome::Refused,
            ));
        }
        let request = ApprovalRequest {
            call_id: call.id.clone(),
            session: session.key.clone(),
            agent: session.agent.clone(),
            proposal: proposal.clone(),
            decision: decision.clone(),
        };
        let mut answer = self.approver.ask(request);
        changes.borrow_and_update();
        loop {
            tokio::select! {
                answer = &mut answer => {
                    let now = crate::clock::now_rfc3339();
                    let by = match &answer {
                        Answer::Approve { by } | Answer::AlwaysTool { by } | Answer::AlwaysCommand { by } | Answer::Deny { by } => by.clone(),
                        _ => String::new(),
                    };
                    match answer {
                        Answer::Approve { .. } => {}
                        Answer::AlwaysTool { .. } => {
                            if let Err(e) = session.allow_tool(&call.name, &by, &now) {
                                return Err(finish(ToolOutput::error(format!("the approval could not be saved ({e}); nothing ran")), CallOutcome::Refused));
                            }
                        }
                        Answer::AlwaysCommand { .. } => {
                            if let Some(key) = &decision.approval_key
                                && let Err(e) = session.allow_command(key, &by, &now)
                            {
                                return Err(finish(ToolOutput::error(format!("the approval could not be saved ({e}); nothing ran")), CallOutcome::Refused));
                            }
                        }
                        Answer::Deny { by } => {
                            self.event(session, call, "permission_denied", json!({"source": "admin", "by": by}));
                            return Err(finish(ToolOutput::error(format!("{by} denied this call; nothing ran")), CallOutcome::Denied { source: "admin".into(), reason_code: "denied".into() }));
                        }
                        Answer::TimedOut => {
                            self.event(session, call, "permission_denied", json!({"source": "runtime", "reason_code": "timeout"}));
                            return Err(finish(ToolOutput::error("nobody answered the approval request in time, so the call did not run (no one refused it)"), CallOutcome::Denied { source: "runtime".into(), reason_code: "timeout".into() }));
                        }
                        Answer::Unanswerable { reason } => {
                            self.event(session, call, "permission_denied", json!({"source": "runtime", "reason_code": "no-approver", "reason": reason}));
                            return Err(finish(ToolOutput::error(reason), CallOutcome::Refused));
                        }
                    }
                    self.event(session, call, "permission_granted", json!({"source": "admin", "by": by}));
                    return Ok((Approval::Human { by }, proposal));
                }
                changed = changes.changed() => {
                    if changed.is_err() {
                        continue;
                    }
                    let redecided = match self.decide_fully(session, call, args).await {
                        Ok(Ok(pair)) => pair,
                        _ => continue,
                    };
                    match redecided.1.decision {
                        Decision::Prompt => continue,
                        Decision::Allow => {
                            self.approver.withdraw(&call.id, "allowed");
                            self.event(session, call, "permission_granted", json!({"source": redecided.1.source, "reason_code": redecided.1.reason_code, "by": "gate", "redecided": true}));
                            let approval = Approval::Gate { source: redecided.1.source.to_string(), reason_code: redecided.1.reason_code.to_string() };
                            return Ok((approval, redecided.0));
                        }
                        Decision::Deny => {
                            self.approver.withdraw(&call.id, "denied");
                            return Err(self.denied(session, call, &redecided.1));
                        }
                    }
                }
                () = cancel.cancelled() => {
                    self.approver.withdraw(&call.id, "cancelled");
                    return Err(finish(ToolOutput::error("the run was stopped before this call was answered; nothing ran"), CallOutcome::Cancelled));
                }
            }
        }
    }

    async fn execute(
        &self,
        session: &SessionPolicy,
        call: &ToolCallRequest,
        approved: ApprovedCall,
        cancel: CancellationToken,
    ) -> ToolCallResult {
        let finish = |output: ToolOutput, outcome: CallOutcome| call.result(output, outcome);
        let Some(agent) = self.agent(session) else {
            return finish(
                ToolOutput::error("the agent is not configured"),
                CallOutcome::Refused,
            );
        };
        let (registry, _) = self.tools();
        let Some(tool) = registry.get(&call.name) else {
            return finish(ToolOutput::error("the tool is gone"), CallOutcome::Refused);
        };
        // A granted call runs under the sandbox current when it starts.
        let snapshot = session.snapshot();
        let workspace = workspace_for(agent, Some(&session.workspace_key));
        // Each session works in its own directory, made when its first call runs.
        if let Err(e) = std::fs::create_dir_all(&workspace) {
            return finish(
                ToolOutput::error(format!(
                    "creating the session workspace {}: {e}",
                    workspace.display()
                )),
                CallOutcome::Refused,
            );
        }
        let roots = roots_for(&self.config, agent, &workspace);
        let ctx = ExecContext {
            agent: session.agent.clone(),
            session: session.key.clone(),
            workspace: workspace.clone(),
            roots,
            sandbox: snapshot.dials.sandbox,
            network_access: agent.network_access,
            trust_git_config: agent.trust_git_config,
            runner: self.runner.clone(),
            child_env: child_environment(
                std::env::vars(),
                &configured_secret_names(&self.config),
                &agent.env_allowlist,
                &workspace,
                &std::env::temp_dir(),
                &shell_path(&agent.shell_path),
            ),
            default_timeout: Duration::from_secs(agent.tool_timeout_secs),
            cancel: cancel.clone(),
            store: self.store.clone(),
            memory: agent.memory,
            subagents: self.subagents.clone(),
            context: self.context.clone(),
            approver: Some(self.approver.clone()),
            parent: Some(Arc::new(
                SessionPolicy::new(
                    &session.key,
                    &session.agent,
                    session.agent_sandbox,
                    snapshot.clone(),
                    None,
                )
                .in_workspace_of(&session.workspace_key),
            )),
        };
        let own_timeout = approved
            .execute_args()
            .get("timeout_secs")
            .and_then(Value::as_u64)
            .map_or(ctx.default_timeout, Duration::from_secs);
        // Marked running, durably, before it starts: after a crash it is reported as
        // interrupted, never run twice.
        if let Some(journal) = &self.journal
            && let Err(e) = journal.record(&session.key, &call.id, JournalStatus::Running)
        {
            return finish(
                ToolOutput::error(format!(
                    "the call could not be recorded as running ({e}); nothing ran"
                )),
                CallOutcome::Refused,
            );
        }
        self.event(session, call, "tool_started", json!({}));
        let started = Instant::now();
        let run = tool.execute(&approved, &ctx);
        let outcome = if tool.long_running() {
            tokio::select! {
                out = run => Ok(out),
                () = cancel.cancelled() => Err(CallOutcome::Cancelled),
            }
        } else {
            // The shell runner enforces a command's own timeout and reports what it killed;
            // this bounds every other tool, and backs the runner up a little later.
            let margin = if call.name == "execute_command" {
                Duration::from_secs(5)
            } else {
                Duration::ZERO
            };
            tokio::select! {
                out = tokio::time::timeout(own_timeout + margin, run) => out.map_err(|_| CallOutcome::TimedOut),
                () = cancel.cancelled() => Err(CallOutcome::Cancelled),
            }
        };
        let duration_ms = started.elapsed().as_millis() as u64;
        match outcome {
            Ok(mut output) => {
                output.text = self.redactor.redact(&output.text);
                if output.text.len() > STORE_RESULT_OVER {
                    output = self.store_large(session, call, output);
                }
                let kind = if output.is_error {
                    "tool_failed"
                } else {
                    "tool_completed"
                };
                self.event(
                    session,
                    call,
                    kind,
                    json!({"duration_ms": duration_ms, "truncated": output.truncated}),
                );
                finish(output, CallOutcome::Executed)
            }
            Err(CallOutcome::Cancelled) => {
                self.event(
                    session,
                    call,
                    "tool_failed",
                    json!({"duration_ms": duration_ms, "cancelled": true}),
                );
                finish(
                    ToolOutput::error(
                        "cancelled: the run was stopped while this call ran; its outcome is unknown",
                    ),
                    CallOutcome::Cancelled,
                )
            }
            Err(other) => {
                self.event(
                    session,
                    call,
                    "tool_failed",
                    json!({"duration_ms": duration_ms, "timed_out": true}),
                );
                finish(
                    ToolOutput::error(format!("timed out after {}s", own_timeout.as_secs())),
                    other,
                )
            }
        }
    }

    /// Stores a large result and returns its summary with the id to page through.
    fn store_large(
        &self,
        session: &SessionPolicy,
        call: &ToolCallRequest,
        output: ToolOutput,
    ) -> ToolOutput {
        let Some(store) = &self.store else {
            let mut cut = output;
            let keep = floor_char_boundary(&cut.text, STORE_RESULT_OVER);
            let total = cut.text.len();
            cut.text.truncate(keep);
            cut.text
                .push_str(&format!("\n[… {} more bytes not shown]", total - keep));
            cut.truncated = true;
            return cut;
        };
        let id = &call.id;
        if store
            .insert(
                crate::tools::builtin::RESULTS_TREE,
                &crate::tools::builtin::result_key(&session.key, id),
                output.text.as_bytes(),
            )
            .is_err()
        {
            let mut cut = output;
            cut.text
                .truncate(floor_char_boundary(&cut.text, STORE_RESULT_OVER));
            cut.truncated = true;
            return cut;
        }
        let keep = floor_char_boundary(&output.text, STORED_PREVIEW);
        ToolOutput {
            text: format!(
                "{}\n[… result is {} bytes; stored as `{id}` — call retrieve_tool_result with this id and an offset to read more]",
                &output.text[..keep],
                output.text.len()
            ),
            is_error: output.is_error,
            truncated: true,
        }
    }
}

fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// For tests of execute halves outside the executor: approval is otherwise only the executor's
/// to give. Compiled only with the `test-support` feature, which only the tests enable.
#[cfg(feature = "test-support")]
pub mod testing {
    use crate::tools::{Approval, ApprovedCall, Proposal};

    #[must_use]
    pub fn approve_for_tests(proposal: Proposal) -> ApprovedCall {
        ApprovedCall::new(proposal, Approval::Human { by: "test".into() })
    }
}
