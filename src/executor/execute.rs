//! A decided call's execute half: its context (workspace, roots, sandbox, environment), its
//! timeout and cancellation, the write-ahead journal around it, and large results stored for
//! paging instead of sent whole.

use super::*;

/// Results larger than this are stored and replaced by a summary and an id.
pub const STORE_RESULT_OVER: usize = 32 * 1024;
/// What the model sees of a stored result before it pages with `retrieve_tool_result`.
const STORED_PREVIEW: usize = 4 * 1024;

impl Executor {
    pub(super) async fn execute(
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
            private_hosts: agent.private_hosts.clone(),
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
            // A subagent inherits this session's policy as of this call, and loses what the
            // session loses while it runs.
            subagents: self.subagents.clone().map(|host| {
                let parent = Arc::new(
                    SessionPolicy::new(
                        &session.key,
                        &session.agent,
                        session.agent_sandbox,
                        snapshot.clone(),
                        None,
                    )
                    .in_workspace_of(&session.workspace_key)
                    .bounded_by(session.bound()),
                );
                Arc::new(super::hosts::BoundSubagents { host, parent }) as Arc<dyn SubagentSpawner>
            }),
            context: self.context.clone(),
            approver: Some(self.approver.clone() as Arc<dyn QuestionAsker>),
            companions: self.companions.clone(),
        };
        // Only the shell's own `timeout_secs` (checked when proposed) lengthens the bound: an
        // MCP tool's argument of that name is the server's business, not the executor's.
        let own_timeout = approved
            .execute_args()
            .get("timeout_secs")
            .filter(|_| call.name == "execute_command")
            .and_then(Value::as_u64)
            .map_or(ctx.default_timeout, Duration::from_secs);
        // Marked running, durably, before it starts: after a crash it is reported as
        // interrupted, never run twice.
        if let Some(journal) = &self.journal
            && let Err(e) = journal
                .record(&session.key, &call.id, JournalStatus::Running)
                .await
        {
            return finish(
                ToolOutput::error(format!(
                    "the call could not be recorded as running ({e}); nothing ran"
                )),
                CallOutcome::Refused,
            );
        }
        self.event(session, call, EventKind::ToolStarted, json!({}));
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
                out = tokio::time::timeout(own_timeout.saturating_add(margin), run) => out.map_err(|_| CallOutcome::TimedOut),
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
                    EventKind::ToolFailed
                } else {
                    EventKind::ToolCompleted
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
                    EventKind::ToolFailed,
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
                    EventKind::ToolFailed,
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
    pub(super) fn store_large(
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
        if crate::tools::builtin::store_result(store.as_ref(), &session.key, id, &output.text)
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
