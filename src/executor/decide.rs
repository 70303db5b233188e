//! Deciding a call: the gate's answer, the classifier when the gate asks for it, and — when a
//! human must answer — waiting for the answer while any change to the session (another
//! answer's "always", `/mode`, `/sandbox`) decides the call again at once.

use super::*;

/// A session of an agent the config no longer has (the call is refused).
#[derive(Debug, thiserror::Error)]
#[error("agent {0} is not configured")]
pub struct UnknownAgent(pub String);

impl Executor {
    /// Decides with the session's current state.
    pub(super) fn decide(
        &self,
        session: &SessionPolicy,
        call: &ToolCallRequest,
        args: &Value,
    ) -> Result<Evaluation, UnknownAgent> {
        let agent = self
            .agent(session)
            .ok_or_else(|| UnknownAgent(session.agent.clone()))?;
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
        // Only `analyze_media` looks at companions: no store read on every other call.
        let companions = if call.name == "analyze_media" {
            let stored = self
                .store
                .as_ref()
                .and_then(|s| crate::companions::bindings::of(s.as_ref(), &session.agent).ok())
                .unwrap_or_default();
            crate::tools::tool::CompanionView::for_agent(agent, stored)
        } else {
            crate::tools::tool::CompanionView::default()
        };
        let propose = ProposeContext {
            workspace,
            prefix_binaries: agent.prefix_binaries.clone(),
            roots: roots.clone(),
            sandbox: snapshot.dials.sandbox,
            companions,
        };
        let (registry, toolset) = self.tools();
        let evaluated = || evaluate(&ctx, &toolset, &registry, &propose, &call.name, args);
        Ok(
            if registry
                .get(&call.name)
                .is_some_and(|t| t.proposes_slowly())
            {
                crate::step_aside::step_aside(evaluated)
            } else {
                evaluated()
            },
        )
    }

    /// Decides, asking the classifier when only it can finish.
    pub(super) async fn decide_fully(
        &self,
        session: &SessionPolicy,
        call: &ToolCallRequest,
        args: &Value,
    ) -> Result<Result<(Proposal, GateDecision), crate::gate::Refusal>, UnknownAgent> {
        match self.decide(session, call, args)? {
            Evaluation::Refused(refusal) => Ok(Err(refusal)),
            Evaluation::Decided { proposal, decision } => Ok(Ok((*proposal, decision))),
            Evaluation::Classify { proposal, deferred } => {
                let started = Instant::now();
                let report = self.classifier.classify(deferred.command()).await;
                self.event(
                    session,
                    call,
                    EventKind::Classified,
                    json!({
                        "verdict": report.verdict, "cached": report.cached, "ran": report.ran,
                        "latency_ms": started.elapsed().as_millis() as u64,
                    }),
                );
                Ok(Ok((*proposal, deferred.finish(report))))
            }
        }
    }

    pub(super) fn denied(
        &self,
        session: &SessionPolicy,
        call: &ToolCallRequest,
        decision: &GateDecision,
    ) -> ToolCallResult {
        self.event(session, call, EventKind::PermissionDenied, json!({"source": decision.source, "reason_code": decision.reason_code, "reason": decision.reason}));
        call.result(
            ToolOutput::error(format!(
                "denied by {} ({}): {}; nothing ran",
                decision.source, decision.reason_code, decision.reason
            )),
            CallOutcome::Denied(Provenance::Gate {
                source: decision.source,
                reason_code: decision.reason_code,
            }),
        )
    }

    /// A picker's answer: the option goes into the execute arguments (where only the runtime
    /// writes it), and "Bind for this agent" stores it for the proposal's role.
    fn apply_pick(
        &self,
        session: &SessionPolicy,
        proposal: &mut Proposal,
        option: &str,
        bind: bool,
        by: &str,
    ) -> Result<(), String> {
        if !proposal
            .options
            .as_ref()
            .is_some_and(|o| o.iter().any(|x| x == option))
        {
            return Err(format!(
                "`{option}` is not one of this call's options; nothing ran"
            ));
        }
        if let Some(args) = proposal.execute_args.as_object_mut() {
            args.insert(reserved::SELECTED_OPTION.into(), Value::from(option));
        }
        if bind {
            let role = proposal.execute_args.get("role").and_then(Value::as_str);
            let (Some(role), Some(store)) = (role, &self.store) else {
                return Err(
                    "this choice cannot be bound here (no role or no store); nothing ran".into(),
                );
            };
            crate::companions::bindings::bind(store.as_ref(), &session.agent, role, option, by)
                .map_err(|e| format!("the binding could not be saved ({e}); nothing ran"))?;
            // Other calls of this session waiting on a picker for the same kind need none now.
            session.decide_again();
        }
        Ok(())
    }

    /// Waits for a person's answer, deciding again whenever the session changes.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn wait_for_answer(
        &self,
        session: &SessionPolicy,
        call: &ToolCallRequest,
        args: &Value,
        proposal: Proposal,
        decision: GateDecision,
        changes: &mut tokio::sync::watch::Receiver<session::Snapshot>,
        cancel: CancellationToken,
    ) -> Result<(Provenance, Proposal), ToolCallResult> {
        let finish = |output: ToolOutput, outcome: CallOutcome| call.result(output, outcome);
        self.event(session, call, EventKind::PermissionRequested, json!({"reason_code": decision.reason_code, "reason": decision.reason, "tier": decision.tier}));
        // The card goes out only once its pending record is durable.
        if let Some(journal) = &self.journal
            && let Err(e) = journal
                .record(&session.key, &call.id, JournalStatus::Pending)
                .await
        {
            return Err(finish(
                ToolOutput::error(format!(
                    "the approval request could not be recorded ({e}); nothing ran"
                )),
                CallOutcome::Refused,
            ));
        }
        let asked = asked_of(call, &proposal, &decision);
        let request = ApprovalRequest {
            call_id: call.id.clone(),
            asked: asked.clone(),
            session: session.key.clone(),
            agent: session.agent.clone(),
            proposal: proposal.clone(),
            decision: decision.clone(),
        };
        let mut answer = self.approver.ask(request);
        changes.borrow_and_update();
        loop {
            tokio::select! {
                // In this order: a stopped run runs nothing, whatever a press said meanwhile;
                // an answer already given wins over a change seen at the same time.
                biased;
                () = cancel.cancelled() => {
                    let _ = self.approver.withdraw(&call.id, &asked, "cancelled").await;
                    return Err(finish(ToolOutput::error("the run was stopped before this call was answered; nothing ran"), CallOutcome::Cancelled));
                }
                answer = &mut answer => {
                    return self.take_answer(session, call, &decision, proposal, answer);
                }
                changed = changes.changed() => {
                    if changed.is_err() {
                        continue;
                    }
                    let redecided = match self.decide_fully(session, call, args).await {
                        Ok(Ok(pair)) => pair,
                        _ => continue,
                    };
                    // A press (or the deadline) that settled the card before this
                    // withdrawal is the answer: the card says so, and a call a person denied
                    // never runs, one they approved is never retroactively denied.
                    let outcome = match redecided.1.decision {
                        Decision::Prompt => continue,
                        Decision::Allow => "allowed",
                        Decision::Deny => "denied",
                    };
                    let first = self.approver.withdraw(&call.id, &asked, outcome).await;
                    if let Some(first) = first {
                        return self.take_answer(session, call, &decision, proposal, first);
                    }
                    if redecided.1.decision == Decision::Deny {
                        return Err(self.denied(session, call, &redecided.1));
                    }
                    let provenance = Provenance::Gate { source: redecided.1.source, reason_code: redecided.1.reason_code };
                    let mut fields = provenance.fields();
                    fields["redecided"] = Value::Bool(true);
                    self.event(session, call, EventKind::PermissionGranted, fields);
                    return Ok((provenance, redecided.0));
                }
            }
        }
    }

    /// What a person's answer (or the deadline) means for `call`: the grant it saves, and
    /// whether the call runs, with what.
    fn take_answer(
        &self,
        session: &SessionPolicy,
        call: &ToolCallRequest,
        decision: &GateDecision,
        mut proposal: Proposal,
        answer: Answer,
    ) -> Result<(Provenance, Proposal), ToolCallResult> {
        let finish = |output: ToolOutput, outcome: CallOutcome| call.result(output, outcome);
        let now = crate::clock::now_rfc3339();
        let mut picked: Option<(String, bool)> = None;
        let by = match &answer {
            Answer::Approve { by }
            | Answer::AlwaysTool { by }
            | Answer::AlwaysCommand { by }
            | Answer::Deny { by }
            | Answer::Picked { by, .. } => by.clone(),
            _ => String::new(),
        };
        // An "always" is saved before the call runs: unsaved, nothing runs.
        let saved = match (&answer, &decision.approval_key) {
            (Answer::AlwaysTool { .. }, _) => session.allow_tool(&call.name, &by, &now),
            (Answer::AlwaysCommand { .. }, Some(key)) => session.allow_command(key, &by, &now),
            _ => Ok(()),
        };
        if let Err(e) = saved {
            return Err(finish(
                ToolOutput::error(format!(
                    "the approval could not be saved ({e}); nothing ran"
                )),
                CallOutcome::Refused,
            ));
        }
        match answer {
            Answer::Approve { .. } | Answer::AlwaysTool { .. } | Answer::AlwaysCommand { .. } => {}
            Answer::Picked { option, bind, .. } => {
                if let Err(refused) = self.apply_pick(session, &mut proposal, &option, bind, &by) {
                    return Err(finish(ToolOutput::error(refused), CallOutcome::Refused));
                }
                picked = Some((option, bind));
            }
            Answer::Deny { by } => {
                let provenance = Provenance::Human { by };
                self.event(
                    session,
                    call,
                    EventKind::PermissionDenied,
                    provenance.fields(),
                );
                return Err(finish(
                    ToolOutput::error(format!("{provenance} denied this call; nothing ran")),
                    CallOutcome::Denied(provenance),
                ));
            }
            Answer::TimedOut => {
                let provenance = Provenance::Runtime(RuntimeReason::Timeout);
                self.event(
                    session,
                    call,
                    EventKind::PermissionDenied,
                    provenance.fields(),
                );
                return Err(finish(
                    ToolOutput::error(
                        "nobody answered the approval request in time, so the call did not run (no one refused it)",
                    ),
                    CallOutcome::Denied(provenance),
                ));
            }
            Answer::Unanswerable { reason } => {
                let mut fields = Provenance::Runtime(RuntimeReason::NoApprover).fields();
                fields["reason"] = Value::from(reason.as_str());
                self.event(session, call, EventKind::PermissionDenied, fields);
                return Err(finish(ToolOutput::error(reason), CallOutcome::Refused));
            }
        }
        let provenance = Provenance::Human { by };
        let mut fields = provenance.fields();
        // What a picker's answer chose, and whether it bound it for the agent.
        if let Some((option, bind)) = picked {
            fields["picked"] = Value::from(option);
            fields["bound"] = Value::Bool(bind);
        }
        self.event(session, call, EventKind::PermissionGranted, fields);
        Ok((provenance, proposal))
    }
}
