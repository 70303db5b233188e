//! The executor: one LLM reply's tool calls, each through the gate and — once allowed or
//! approved — its execute half, at most `max_concurrent` at a time, each with its timeout, all
//! cancellable. Prompts are queued, not raced: while a call waits for its answer, any change to
//! the session (another answer's "always", `/mode`, `/sandbox`) decides it again at once.
//! Every step is recorded as an event.

pub mod approval;
mod call;
mod decide;
mod execute;
mod hosts;
pub mod reserved;
pub mod session;
use crate::config::{AgentConfig, Config};
use crate::events::{Event, EventKind, EventSink};
use crate::gate::{Evaluation, evaluate, roots_for, workspace_for};
use crate::policy::classifier::ClassifierReport;
use crate::policy::env::{child_environment, configured_secret_names, shell_path};
use crate::policy::resolve::{GateContext, GateDecision};
use crate::policy::sandbox::SandboxSupport;
use crate::policy::tier::Decision;
use crate::sandbox::ShellRunner;
use crate::store::Store;
pub use crate::tools::hosts::{ContextHost, HostError, HostFuture, QuestionAsker, SubagentSpawner};
use crate::tools::{
    ApprovedCall, DefinitionsCache, ExecContext, Proposal, ProposeContext, Provenance,
    RuntimeReason, ToolDefinitions, ToolOutput, ToolRegistry, Toolset,
};
use approval::{Answer, ApprovalRequest, Approver, asked_of};
pub use call::{CallOutcome, MAX_ARGUMENTS, ToolCallRequest, ToolCallResult};
pub use execute::STORE_RESULT_OVER;
pub use hosts::{
    CallJournal, Classifier, ClassifyFuture, JournalError, JournalFuture, JournalStatus,
    NoClassifier, SubagentHost,
};
use serde_json::{Value, json};
use session::SessionPolicy;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

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
    /// The agent's companion models (`analyze_media`).
    pub companions: Option<Arc<dyn crate::tools::hosts::CompanionHost>>,
    /// Secrets taken out of every tool result before the model sees it.
    pub redactor: crate::policy::redact::Redactor,
    /// The agent's MCP servers, started when a session first needs their tools.
    pub mcp: Option<Arc<crate::tools::mcp::client::McpServers>>,
    /// The registry and toolset with the MCP servers' tools, once they were listed.
    pub with_mcp: std::sync::RwLock<Option<(Arc<ToolRegistry>, Toolset)>>,
    /// The definitions offered to the model, made once per agent (shared by its sessions).
    pub definitions: Arc<DefinitionsCache>,
}

impl Executor {
    /// The one way an executor is built: `config`'s agents, the tools of `registry` offered
    /// through `toolset`, commands run by `runner`, prompts asked of `approver`, unclassified
    /// commands given to `classifier`, every step recorded to `events`. Everything else starts
    /// at its default — the kernel probed for the sandbox, no store, journal, subagents,
    /// conversation or MCP servers, one call at a time, no secrets known — and is set with the
    /// `with_*` methods, so a part added later has one default, here.
    #[must_use]
    pub fn new(
        config: Arc<Config>,
        registry: Arc<ToolRegistry>,
        toolset: Toolset,
        runner: ShellRunner,
        approver: Arc<dyn Approver>,
        classifier: Arc<dyn Classifier>,
        events: Arc<dyn EventSink>,
    ) -> Self {
        Executor {
            config,
            registry,
            toolset,
            support: crate::sandbox::probe(),
            runner,
            approver,
            classifier,
            events,
            store: None,
            max_concurrent: 1,
            journal: None,
            subagents: None,
            context: None,
            redactor: crate::policy::redact::Redactor::default(),
            mcp: None,
            with_mcp: std::sync::RwLock::new(None),
            companions: None,
            definitions: Arc::default(),
        }
    }

    /// Where stored results, todos, memory and reminders live.
    #[must_use]
    pub fn with_store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Write-ahead records of each call.
    #[must_use]
    pub fn with_journal(mut self, journal: Arc<dyn CallJournal>) -> Self {
        self.journal = Some(journal);
        self
    }

    /// At most `calls` of one reply run at once.
    #[must_use]
    pub fn with_max_concurrent(mut self, calls: usize) -> Self {
        self.max_concurrent = calls.max(1);
        self
    }

    /// What the kernel allows, when it was probed already.
    #[must_use]
    pub fn with_support(mut self, support: SandboxSupport) -> Self {
        self.support = support;
        self
    }

    /// The secrets taken out of every tool result.
    #[must_use]
    pub fn with_redactor(mut self, redactor: crate::policy::redact::Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    /// Subagents for `spawn_subagent` and the conversation for `summarize_context` and
    /// `context_info` (a subagent's own executor has neither: they do not nest).
    #[must_use]
    pub fn with_hosts(
        mut self,
        subagents: Arc<dyn SubagentHost>,
        context: Arc<dyn ContextHost>,
    ) -> Self {
        self.subagents = Some(subagents);
        self.context = Some(context);
        self
    }

    /// The agent's companion models.
    #[must_use]
    pub fn with_companions(
        mut self,
        companions: Arc<dyn crate::tools::hosts::CompanionHost>,
    ) -> Self {
        self.companions = Some(companions);
        self
    }

    /// The agent's MCP servers, started when a session first needs their tools.
    #[must_use]
    pub fn with_mcp_servers(
        mut self,
        mcp: Option<Arc<crate::tools::mcp::client::McpServers>>,
    ) -> Self {
        self.mcp = mcp;
        self
    }

    /// The agent's cache of tool definitions (one per agent, shared by its sessions).
    #[must_use]
    pub fn with_definitions(mut self, definitions: Arc<DefinitionsCache>) -> Self {
        self.definitions = definitions;
        self
    }

    /// What the model is offered now, made once for this registry and toolset.
    #[must_use]
    pub fn tool_definitions(&self) -> Arc<ToolDefinitions> {
        let (registry, toolset) = self.tools();
        self.definitions.get(&registry, &toolset)
    }

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
                Err(e) => problems.push(e.to_string()),
            }
        }
        // This executor's own toolset (a reminder's run lacks `add_reminder`, which the
        // agent's configured list would bring back) plus the listed tools not denied.
        let denied: &[String] = self
            .config
            .agents
            .get(agent)
            .map_or(&[], |a| a.denied_tools.as_slice());
        let toolset = Toolset::from_names(
            self.toolset.iter().chain(
                names
                    .iter()
                    .map(String::as_str)
                    .filter(|n| !denied.iter().any(|d| d == n)),
            ),
        );
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
            // Each call's task keeps the run's span: its log lines carry the run's ids.
            tasks.spawn(tracing::Instrument::in_current_span(async move {
                let _permit = permits.acquire_owned().await;
                (index, executor.run_one(&session, call, cancel).await)
            }));
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
        kind: EventKind,
        fields: Value,
    ) {
        self.events.record(Event {
            kind,
            session: session.key.clone(),
            run: call.run.clone(),
            call_id: call.id.clone(),
            tool: call.name.clone(),
            fields,
        });
    }

    fn agent(&self, session: &SessionPolicy) -> Option<&AgentConfig> {
        self.config.agents.get(&session.agent)
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
            self.event(
                session,
                &call,
                EventKind::ToolFailed,
                json!({"error": message}),
            );
            return result(ToolOutput::error(message), CallOutcome::Refused);
        }
        let mut args: Value = match serde_json::from_str(if call.arguments.trim().is_empty() {
            "{}"
        } else {
            &call.arguments
        }) {
            Ok(v) => v,
            Err(e) => {
                let message = format!("the arguments are not valid JSON ({e}); nothing ran");
                self.event(
                    session,
                    &call,
                    EventKind::ToolFailed,
                    json!({"error": message}),
                );
                return result(ToolOutput::error(message), CallOutcome::Refused);
            }
        };
        // The model cannot answer a picker for the human: the key is taken out, and noted.
        let mut proposed = json!({"arguments": args});
        if reserved::strip_reserved(&mut args) {
            proposed["reserved_key_removed"] = json!(reserved::SELECTED_OPTION);
        }
        self.event(session, &call, EventKind::ToolProposed, proposed);
        let mut changes = session.subscribe();
        let (proposal, decision) = match self.decide_fully(session, &call, &args).await {
            Err(e) => return result(ToolOutput::error(e.to_string()), CallOutcome::Refused),
            Ok(Err(refusal)) => {
                self.event(session, &call, EventKind::PermissionDenied, json!({"source": "toolset", "reason_code": refusal.code(), "reason": refusal.message()}));
                return result(ToolOutput::error(refusal.message()), CallOutcome::Refused);
            }
            Ok(Ok(pair)) => pair,
        };
        let approval = match decision.decision {
            Decision::Allow => {
                let provenance = Provenance::Gate {
                    source: decision.source,
                    reason_code: decision.reason_code,
                };
                self.event(
                    session,
                    &call,
                    EventKind::PermissionGranted,
                    provenance.fields(),
                );
                provenance
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
}

/// For tests of execute halves outside the executor: approval is otherwise only the executor's
/// to give. Compiled only with the `test-support` feature, which only the tests enable.
#[cfg(feature = "test-support")]
pub mod testing {
    use crate::tools::{ApprovedCall, Proposal, Provenance};

    #[must_use]
    pub fn approve_for_tests(proposal: Proposal) -> ApprovedCall {
        ApprovedCall::new(proposal, Provenance::Human { by: "test".into() })
    }
}
