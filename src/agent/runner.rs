//! The agent loop over a durable run: ask the model, run the tool calls it asks for (through
//! the gate and the executor), give it the results, repeat — until it answers, the run is
//! stopped, or `max_rounds` model calls were made. Resuming a run after a restart reports calls
//! that were running as interrupted (never running them again) and asks again about calls that
//! were waiting for approval.

use super::error::RunError;
use super::llm::{ChatMessage, LlmProvider, LlmRequest, Role};
use super::runs::{CallRecord, CallState, RunJournal, RunPhase, RunRecord, RunStore};
use crate::events::Event;
use crate::events::EventKind;
use crate::executor::session::SessionPolicy;
use crate::executor::{Executor, ToolCallRequest};
use serde_json::json;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

mod transcript;
use transcript::{
    distinct_call_ids, drop_lost_calls, moved_on_without_message, restore_message, results_given,
    trim_to_step,
};

/// User messages longer than this are refused (with the reason) rather than sent on.
pub const MAX_USER_MESSAGE: usize = 256 * 1024;

/// What the model is told about a call that was running when the process stopped.
pub const INTERRUPTED: &str = "interrupted: the process stopped while this call ran; its outcome is unknown, and it was not run again";

/// How long a new run's record may wait for its answer's flush before it is flushed on its
/// own (counted from when it was written; the store's own background commit, every 500 ms, may
/// come first). A kill within that time loses the message — as a kill before the record's flush
/// always did — and never an answer, a card or a call.
pub const STAGED_FOR: std::time::Duration = std::time::Duration::from_millis(50);

/// Whether a run's stored record is durable yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Durability {
    Flushed,
    /// Written at this instant, waiting for the next flush.
    Staged(tokio::time::Instant),
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnOutcome {
    pub run_id: String,
    pub answer: String,
    pub rounds: u32,
}

/// Runs one agent's turns.
pub struct AgentRunner {
    pub runs: RunStore,
    pub journal: Arc<RunJournal>,
    pub executor: Arc<Executor>,
    pub provider: Arc<dyn LlmProvider>,
    pub agent: String,
    pub model: String,
    pub system_prompt: String,
    pub max_rounds: u32,
    pub max_tokens: Option<u32>,
    /// The classifier's usage counter, reported apart in `run_completed`.
    pub classifier_usage: Option<Arc<Mutex<super::llm::Usage>>>,
    /// How long a new run's record may wait for its answer's flush ([`STAGED_FOR`]).
    pub staged_for: std::time::Duration,
}

fn lock(run: &Mutex<RunRecord>) -> std::sync::MutexGuard<'_, RunRecord> {
    run.lock().unwrap_or_else(|p| p.into_inner())
}

impl AgentRunner {
    /// Starts a run for a user message.
    pub async fn start(
        &self,
        session: Arc<SessionPolicy>,
        run_id: &str,
        text: &str,
        cancel: CancellationToken,
    ) -> Result<TurnOutcome, RunError> {
        self.start_asked_by(session, run_id, text, None, cancel)
            .await
    }

    /// Starts a run for a chat user's message, keeping who asked in the run's record.
    pub async fn start_asked_by(
        &self,
        session: Arc<SessionPolicy>,
        run_id: &str,
        text: &str,
        requester: Option<(i64, String)>,
        cancel: CancellationToken,
    ) -> Result<TurnOutcome, RunError> {
        if text.len() > MAX_USER_MESSAGE {
            return Err(RunError::MessageTooLong {
                bytes: text.len(),
                limit: MAX_USER_MESSAGE,
            });
        }
        // Active from its first message, dated before its transcript is read: retention
        // claims a session by its date, so it cannot take this one between the two (and a
        // session's worker that keeps the transcript forgets it right after retention deletes
        // it).
        self.runs
            .note_activity(&session.key, &self.agent, crate::clock::now_secs())?;
        let mut transcript = self.runs.transcript(&session.key)?;
        if drop_lost_calls(&mut transcript) {
            // The run's step counts from the transcript without it.
            self.runs.stage_transcript(&session.key, &transcript)?;
        }
        // The message goes into the run's record; the transcript is written once, with the
        // answer (`ask_model`), not here as well.
        let run = RunRecord {
            requester,
            id: run_id.to_string(),
            session: session.key.clone(),
            agent: self.agent.clone(),
            round: 0,
            phase: RunPhase::AskingModel,
            calls: Vec::new(),
            usage: super::llm::Usage::default(),
            transcript_len: Some(transcript.len() + 1),
            message: Some(text.to_string()),
        };
        // Not flushed yet: nothing that leaves the process depends on it before the model
        // answers (see `ask_model`), and the answer's own flush makes it durable.
        self.runs.stage(&run)?;
        self.event(
            &session.key,
            EventKind::MessageReceived,
            json!({"chars": text.chars().count()}),
        );
        self.event(&session.key, EventKind::RunStarted, json!({"run": run_id}));
        let staged = Durability::Staged(tokio::time::Instant::now());
        self.drive(session, run, cancel, staged).await
    }

    /// Continues a stored run (after a restart).
    pub async fn resume(
        &self,
        session: Arc<SessionPolicy>,
        run: RunRecord,
        cancel: CancellationToken,
    ) -> Result<TurnOutcome, RunError> {
        self.drive(session, run, cancel, Durability::Flushed).await
    }

    async fn drive(
        &self,
        session: Arc<SessionPolicy>,
        run: RunRecord,
        cancel: CancellationToken,
        stored: Durability,
    ) -> Result<TurnOutcome, RunError> {
        let shared = Arc::new(Mutex::new(run));
        self.journal.activate(shared.clone());
        let outcome = self.drive_active(&session, &shared, cancel, stored).await;
        let run = lock(&shared).clone();
        if outcome.is_err() {
            self.keep_message_of_unanswered(&session.key, &run);
        }
        let classifier = self
            .classifier_usage
            .as_ref()
            .map(|u| *u.lock().unwrap_or_else(|p| p.into_inner()));
        match &outcome {
            Ok(done) => self.event(&session.key, EventKind::RunCompleted, json!({
                "run": done.run_id, "rounds": done.rounds, "usage": run.usage, "classifier_usage": classifier,
            })),
            Err(error) => self.event(&session.key, EventKind::RunInterrupted, json!({
                "run": run.id, "error": error.to_string(), "usage": run.usage, "classifier_usage": classifier,
            })),
        }
        self.journal.deactivate(&session.key);
        outcome
    }

    /// A run that ended in an error before its first answer (the store failed, say) leaves
    /// its message in the conversation as a failed model call does: the start wrote it into
    /// the run's record only. Best effort: the error that ended the run is the one reported.
    fn keep_message_of_unanswered(&self, session: &str, run: &RunRecord) {
        if run.round != 0 || run.message.is_none() {
            return;
        }
        let kept = self.runs.transcript(session).and_then(|mut transcript| {
            if restore_message(&mut transcript, run) {
                self.runs.stage_transcript(session, &transcript)?;
            }
            Ok(())
        });
        if let Err(e) = kept {
            tracing::warn!("run {}: its message is only in its record: {e}", run.id);
        }
    }

    fn event(&self, session: &str, kind: EventKind, fields: serde_json::Value) {
        self.executor.events.record(Event {
            kind,
            session: session.to_string(),
            run: None,
            call_id: String::new(),
            tool: String::new(),
            fields,
        });
    }

    async fn save(&self, run: &Mutex<RunRecord>) -> Result<(), RunError> {
        let snapshot = lock(run).clone();
        Ok(self.runs.save_soon(&snapshot).await?)
    }

    async fn drive_active(
        &self,
        session: &Arc<SessionPolicy>,
        shared: &Arc<Mutex<RunRecord>>,
        cancel: CancellationToken,
        mut stored: Durability,
    ) -> Result<TurnOutcome, RunError> {
        loop {
            let run = lock(shared).clone();
            match run.phase {
                RunPhase::Finished { answer } => {
                    return Ok(TurnOutcome {
                        run_id: run.id,
                        answer,
                        rounds: run.round,
                    });
                }
                // Only the model's failures are recorded as a phase.
                RunPhase::Failed { error } => return Err(RunError::Model(error)),
                RunPhase::AskingModel => {
                    // Every save after the first round's flushes; only the start is staged.
                    let start = std::mem::replace(&mut stored, Durability::Flushed);
                    self.ask_model(session, shared, &run, &cancel, start)
                        .await?;
                }
                RunPhase::RunningTools => self.run_tools(session, shared, &cancel).await?,
            }
        }
    }

    async fn ask_model(
        &self,
        session: &SessionPolicy,
        shared: &Mutex<RunRecord>,
        run: &RunRecord,
        cancel: &CancellationToken,
        stored: Durability,
    ) -> Result<(), RunError> {
        let mut transcript = self.runs.transcript(&session.key)?;
        if !moved_on_without_message(&transcript, run)
            && trim_to_step(&mut transcript, run.transcript_len)
        {
            // Kept trimmed even if this call fails or is stopped: the reply was never shown.
            self.runs.stage_transcript(&session.key, &transcript)?;
        }
        // Written with the answer; a run that ends without one writes it first, before the
        // ending's record, so the message stays in the conversation either way.
        let unwritten = restore_message(&mut transcript, run);
        let end_without_answer = |phase: RunPhase| -> Result<(), RunError> {
            if unwritten {
                self.runs.stage_transcript(&session.key, &transcript)?;
            }
            let mut run = lock(shared);
            run.phase = phase;
            run.message = None;
            Ok(())
        };
        if run.round >= self.max_rounds {
            let answer = format!(
                "I stopped after {} model calls in this turn (max_rounds = {} for agent {}); ask me to continue if there is more to do.",
                run.round, self.max_rounds, self.agent
            );
            end_without_answer(RunPhase::Finished { answer })?;
            return self.save(shared).await;
        }
        // A session's first need of its tool list starts the agent's MCP servers.
        for problem in self.executor.prepare_tools(&self.agent).await {
            tracing::warn!("{problem}");
            self.event(
                &session.key,
                EventKind::McpProblem,
                json!({"problem": problem}),
            );
        }
        let mut messages = vec![ChatMessage::new(Role::System, self.system_prompt.clone())];
        messages.extend(transcript.iter().cloned());
        let request = LlmRequest {
            model: self.model.clone(),
            messages,
            tools: self.executor.tool_definitions(),
            max_tokens: self.max_tokens,
        };
        // `/stop` does not wait for a slow model: the request is dropped (nothing of it was
        // stored yet) and the run ends.
        let completed = tokio::select! {
            completed = self.complete_durably(&request, stored) => completed?,
            () = cancel.cancelled() => {
                end_without_answer(RunPhase::Finished {
                    answer: "Stopped.".into(),
                })?;
                return self.save(shared).await;
            }
        };
        let mut reply = match completed {
            Ok(reply) => reply,
            Err(e) => {
                // Audited (and counted) like a call that answered: which model, and why not.
                self.event(
                    &session.key,
                    EventKind::LlmUsage,
                    json!({"purpose": "agent", "model": self.model, "usage": null, "error": e.message}),
                );
                end_without_answer(RunPhase::Failed {
                    error: e.message.clone(),
                })?;
                self.save(shared).await?;
                return Err(RunError::Model(e.message));
            }
        };
        self.event(
            &session.key,
            EventKind::LlmUsage,
            json!({"purpose": "agent", "model": self.model, "usage": reply.usage}),
        );
        distinct_call_ids(&mut reply.tool_calls, &transcript);
        transcript.push(ChatMessage {
            role: Role::Assistant,
            content: reply.content.clone(),
            tool_calls: reply.tool_calls.clone(),
            tool_call_id: None,
        });
        // Flushed with the run record at the end of this step.
        self.runs.stage_transcript(&session.key, &transcript)?;
        {
            let mut run = lock(shared);
            run.round += 1;
            run.usage.add(reply.usage);
            run.transcript_len = Some(transcript.len());
            // In the transcript now, staged above and durable with this step.
            run.message = None;
            if reply.tool_calls.is_empty() {
                run.phase = RunPhase::Finished {
                    answer: reply.content,
                };
                run.calls.clear();
            } else {
                run.calls = reply
                    .tool_calls
                    .into_iter()
                    .map(|call| CallRecord {
                        call,
                        state: CallState::Proposed,
                    })
                    .collect();
                run.phase = RunPhase::RunningTools;
            }
        }
        self.save(shared).await
    }

    /// The model's answer to `request`. A run whose start is only staged is flushed once
    /// `staged_for` has passed since it was written — a slow model's run (or a first turn
    /// that starts MCP servers) survives a restart and is asked again — while a prompt
    /// answer's save makes both durable with one flush.
    async fn complete_durably(
        &self,
        request: &LlmRequest,
        stored: Durability,
    ) -> Result<Result<super::llm::LlmReply, super::llm::LlmError>, RunError> {
        let quiet = |_: &str| {};
        let call = self.provider.complete(request, &quiet);
        let Durability::Staged(written) = stored else {
            return Ok(call.await);
        };
        tokio::pin!(call);
        tokio::select! {
            biased;
            completed = &mut call => return Ok(completed),
            () = tokio::time::sleep_until(written + self.staged_for) => {}
        }
        let (flushed, completed) = tokio::join!(self.runs.flush_soon(), call);
        flushed?;
        Ok(completed)
    }

    async fn run_tools(
        &self,
        session: &Arc<SessionPolicy>,
        shared: &Mutex<RunRecord>,
        cancel: &CancellationToken,
    ) -> Result<(), RunError> {
        // A call recorded as running when the process stopped: never run it again.
        let todo: Vec<ToolCallRequest> = {
            let mut run = lock(shared);
            for record in &mut run.calls {
                if record.state == CallState::Running {
                    record.state = CallState::Done {
                        output: INTERRUPTED.into(),
                        is_error: true,
                    };
                }
            }
            run.calls
                .iter()
                .filter(|c| matches!(c.state, CallState::Proposed | CallState::Pending))
                .map(|c| ToolCallRequest {
                    id: c.call.id.clone(),
                    name: c.call.name.clone(),
                    arguments: c.call.arguments.clone(),
                    run: Some(run.id.clone()),
                })
                .collect()
        };
        self.save(shared).await?;
        if !todo.is_empty() {
            let results = self
                .executor
                .run_batch(session.clone(), todo, cancel.clone())
                .await;
            let mut run = lock(shared);
            for result in results {
                if let Some(record) = run.calls.iter_mut().find(|c| c.call.id == result.id) {
                    record.state = CallState::Done {
                        output: result.output.text,
                        is_error: result.output.is_error,
                    };
                }
            }
        }
        self.save(shared).await?;
        // Give the model every call's result, in order, exactly once.
        let mut transcript = self.runs.transcript(&session.key)?;
        let calls = lock(shared).calls.clone();
        let already = calls
            .first()
            .is_some_and(|first| results_given(&transcript, &first.call.id));
        if !already {
            for record in &calls {
                let output = match &record.state {
                    CallState::Done { output, .. } => output.clone(),
                    _ => "not run: the run ended first".to_string(),
                };
                transcript.push(ChatMessage::tool_result(&record.call.id, output));
            }
            // Flushed with the run record just below.
            self.runs.stage_transcript(&session.key, &transcript)?;
        }
        {
            let mut run = lock(shared);
            run.transcript_len = Some(transcript.len());
            run.phase = if cancel.is_cancelled() {
                RunPhase::Finished {
                    answer: "Stopped.".into(),
                }
            } else {
                RunPhase::AskingModel
            };
        }
        self.save(shared).await
    }
}
