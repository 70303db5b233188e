//! `tollgate chat`: the console surface for the trusted operator. Lines in, answers out (a
//! terminal or a pipe). Prompts are answered here: approve, deny, always this tool, always
//! this command. `! COMMAND` runs a command directly as the operator — denylist, sandbox, caps
//! and timeout still apply — and its output goes to the agent as tagged, untrusted context.
//! Runs interrupted by a crash are resumed first.

use super::{Failure, load_config_or_default, open_store};
use crate::agent::classifier::Surface;
use crate::agent::llm::{ChatMessage, Role};
use crate::agent::runs::RunStore;
use crate::agent::setup::assemble;
use crate::approvals::ApprovalChoice;
use crate::approvals::card::build_card;
use crate::executor::approval::{Answer, AnswerFuture, ApprovalRequest, Approver, WithdrawFuture};
use crate::policy::resolve::AlwaysOffer;
use crate::policy::shell::ShellAnalysis;
use crate::sandbox::{SandboxSpec, ShellRunner};
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tollgate_console::{ConsoleAnswer, Lines, parse_answer, render_card};

#[derive(Args, Debug)]
pub struct ChatArgs {
    /// The agent (default: the only one configured).
    #[arg(long)]
    pub agent: Option<String>,
}

/// The operator answers prompts at the console, one at a time.
struct ConsoleApprover {
    lines: Arc<Lines>,
    turn: tokio::sync::Mutex<()>,
    operator: String,
    redactor: crate::policy::redact::Redactor,
}

fn say(text: &str) {
    let mut out = std::io::stdout();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

impl Approver for ConsoleApprover {
    fn ask(&self, request: ApprovalRequest) -> AnswerFuture<'_> {
        Box::pin(async move {
            let _turn = self.turn.lock().await;
            // The keys the operator types stand in for the chats' button data.
            let (card, _) = build_card(&request, &self.operator, &self.redactor, |choice| {
                match choice {
                    ApprovalChoice::Approve => "a".into(),
                    ApprovalChoice::Deny => "d".into(),
                    ApprovalChoice::AlwaysTool => "t".into(),
                    ApprovalChoice::AlwaysCommand => "c".into(),
                    // A picker's options are numbered from 1; `b<n>` also binds it.
                    ApprovalChoice::Pick(i) => (u16::from(i) + 1).to_string(),
                    ApprovalChoice::Bind(i) => format!("b{}", u16::from(i) + 1),
                }
            });
            // The card offers at most MAX_OPTIONS: only those can be picked.
            let mut options = request.proposal.options.clone().unwrap_or_default();
            options.truncate(crate::approvals::MAX_OPTIONS);
            // Shown as every chat shows it: secrets out, controls escaped (an ESC sequence in a
            // command must not repaint the terminal the operator approves from).
            let card = card.map_text(&|text, layout| {
                crate::serve::guard::guard_text(&self.redactor, text, layout)
            });
            say(&render_card(&card));
            loop {
                let Some(line) = self.lines.next().await else {
                    return Answer::Unanswerable {
                        reason: "the console's input ended before the prompt was answered".into(),
                    };
                };
                let by = self.operator.clone();
                if let Some((index, bind)) = parse_pick(&line, options.len()) {
                    return Answer::Picked {
                        by,
                        option: options[index].clone(),
                        bind,
                    };
                }
                if !options.is_empty() && parse_answer(&line) == Some(ConsoleAnswer::Approve) {
                    say(
                        "pick an option by its number (b<number> also binds it), or d to cancel\n? ",
                    );
                    continue;
                }
                match parse_answer(&line) {
                    Some(ConsoleAnswer::Approve) => return Answer::Approve { by },
                    Some(ConsoleAnswer::Deny) => return Answer::Deny { by },
                    Some(ConsoleAnswer::AlwaysTool)
                        if request.decision.always == AlwaysOffer::Tool =>
                    {
                        return Answer::AlwaysTool { by };
                    }
                    Some(ConsoleAnswer::AlwaysCommand)
                        if matches!(request.decision.always, AlwaysOffer::Command(_)) =>
                    {
                        return Answer::AlwaysCommand { by };
                    }
                    _ => say("answer with one of the keys shown\n? "),
                }
            }
        })
    }

    fn withdraw(&self, call_id: &str, _asked: &str, outcome: &str) -> WithdrawFuture<'_> {
        // The operator's answer is read by the prompt's own future, which the executor
        // polls first and drops for this: no answer is kept anywhere to have come first.
        say(&format!("(call {call_id}: {outcome} without an answer)\n"));
        Box::pin(std::future::ready(None))
    }
}

/// A picker's answer typed at the console: `2` picks the second option, `b2` also binds it;
/// the option's index and whether to bind.
fn parse_pick(line: &str, options: usize) -> Option<(usize, bool)> {
    let line = line.trim().to_ascii_lowercase();
    let (digits, bind) = match line.strip_prefix('b') {
        Some(rest) => (rest, true),
        None => (line.as_str(), false),
    };
    let n: usize = digits.parse().ok()?;
    (1..=options).contains(&n).then_some((n - 1, bind))
}

impl crate::executor::QuestionAsker for ConsoleApprover {
    fn ask_question(
        &self,
        _session: &str,
        question: &str,
        choices: &[String],
    ) -> Option<crate::executor::approval::QuestionFuture<'_>> {
        let question = question.to_string();
        let choices = choices.to_vec();
        Some(Box::pin(async move {
            let _turn = self.turn.lock().await;
            let mut text = format!("── question ──\n{question}\n");
            if !choices.is_empty() {
                text.push_str(&format!("(suggested: {})\n", choices.join(" / ")));
            }
            text.push_str("answer: ");
            say(&text);
            self.lines.next().await
        }))
    }
}

pub fn run(config_path: Option<&Path>, args: &ChatArgs) -> Result<ExitCode, Failure> {
    let config = Arc::new(load_config_or_default(config_path)?);
    let agent = super::pick_agent(&config, args.agent.as_deref())?;
    let store = open_store(&config)?;
    let operator = std::env::var("USER").unwrap_or_else(|_| "operator".into());
    let session = format!("console:{operator}");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::runtime(format!("starting the async runtime: {e}")))?;
    runtime.block_on(async {
        let lines = Arc::new(Lines::stdin());
        let approver = Arc::new(ConsoleApprover {
            lines: lines.clone(),
            turn: tokio::sync::Mutex::new(()),
            operator: format!("console:{operator}"),
            redactor: crate::policy::redact::Redactor::from_env_names(
                crate::policy::env::configured_secret_names(&config),
            ),
        });
        let assembled = assemble(
            &config,
            &agent,
            &session,
            Surface::Console,
            store.clone(),
            approver,
        )
        .map_err(Failure::usage)?;
        let runs = RunStore::new(store.clone());
        let redactor = assembled.runner.executor.redactor.clone();
        stop_on_signals(runs.clone(), store.clone());
        if let Err(e) = runs.close_orphaned() {
            eprintln!("tollgate: ending open runs nobody resumes: {e}");
        }
        let for_reminders = reminders_assembly(&config, &agent, &session, store.clone())?;
        for open in runs
            .open_runs()
            .map_err(|e| Failure::runtime(e.to_string()))?
        {
            if open.session != session {
                continue;
            }
            say(&format!(
                "(resuming run {} that was interrupted)\n",
                open.id
            ));
            // A reminder's run stays one: unattended, without `add_reminder`.
            let resumed = if crate::reminders::is_reminder_run(&open.id, &session) {
                &for_reminders
            } else {
                &assembled
            };
            report_redacted(
                &redactor,
                resumed
                    .runner
                    .resume(resumed.session.clone(), open, CancellationToken::new())
                    .await,
            );
            let _ = store.flush();
        }
        // One run at a time in this session: the operator's turns and reminders take turns.
        let turn_lock = Arc::new(tokio::sync::Mutex::new(()));
        fire_reminders(for_reminders, &session, store.clone(), turn_lock.clone())?;
        let mut turn = 0u64;
        loop {
            say("> ");
            let Some(line) = lines.next().await else {
                break;
            };
            let line = line.trim().to_string();
            if line.is_empty() {
                continue;
            }
            if let Some(command) = line.strip_prefix('!') {
                // Not while a reminder's run writes the same transcript.
                let _turn = turn_lock.lock().await;
                operator_command(&config, &agent, &session, command.trim(), &runs).await;
                continue;
            }
            assembled
                .user_messages
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(line.clone());
            turn += 1;
            let run_id = format!("{session}:{}:{turn}", crate::clock::now_rfc3339_millis());
            // One run at a time in the session: a reminder firing now waits its turn.
            let guard = turn_lock.lock().await;
            report_redacted(
                &redactor,
                assembled
                    .runner
                    .start(
                        assembled.session.clone(),
                        &run_id,
                        &line,
                        CancellationToken::new(),
                    )
                    .await,
            );
            drop(guard);
            let _ = store.flush();
        }
        let _ = store.flush();
        Ok(ExitCode::SUCCESS)
    })
}

/// The console's reminders: this session's, each run unattended (nobody answers its prompts)
/// between the operator's turns, its answer printed.
struct ConsoleReminders {
    session: String,
    unattended: crate::agent::setup::Assembled,
    store: Arc<dyn crate::store::Store>,
    turn_lock: Arc<tokio::sync::Mutex<()>>,
}

impl crate::agent::scheduler::ReminderSink for ConsoleReminders {
    fn accepts(&self, reminder: &crate::reminders::Reminder) -> bool {
        reminder.session == self.session
    }

    fn deliver(
        &self,
        reminder: crate::reminders::Reminder,
        text: String,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            let _turn = self.turn_lock.lock().await;
            let run_id = reminder.run_id();
            let outcome = self
                .unattended
                .runner
                .start(
                    self.unattended.session.clone(),
                    &run_id,
                    &text,
                    CancellationToken::new(),
                )
                .await;
            match outcome {
                Ok(done) => say(&format!("\n(reminder) {}\n> ", done.answer)),
                Err(error) => say(&format!("\n(reminder) error: {error}\n> ")),
            }
            let _ = crate::reminders::Reminders::new(self.store.clone()).delivered(&reminder.id);
            let _ = self.store.flush();
        })
    }
}

/// The session as this session's reminders run it: unattended (nobody answers its prompts)
/// and without `add_reminder` (a reminder that added reminders would feed itself).
fn reminders_assembly(
    config: &Arc<crate::config::Config>,
    agent: &str,
    session: &str,
    store: Arc<dyn crate::store::Store>,
) -> Result<crate::agent::setup::Assembled, Failure> {
    let parts = crate::agent::setup::AgentParts::new(config, agent)
        .map_err(Failure::usage)?
        .for_reminders();
    crate::agent::setup::assemble_with(
        &parts,
        config,
        agent,
        session,
        Surface::Unattended,
        store.clone(),
        RunStore::new(store),
        Arc::new(crate::executor::approval::NobodyApproves),
        None,
    )
    .map_err(Failure::usage)
}

/// Starts the scheduler for this session's reminders.
fn fire_reminders(
    unattended: crate::agent::setup::Assembled,
    session: &str,
    store: Arc<dyn crate::store::Store>,
    turn_lock: Arc<tokio::sync::Mutex<()>>,
) -> Result<(), Failure> {
    use crate::agent::scheduler::{self, ReminderSink};
    use crate::clock::now_secs;
    use crate::reminders::Reminders;
    let sink = Arc::new(ConsoleReminders {
        session: session.to_string(),
        unattended,
        store: store.clone(),
        turn_lock,
    });
    // Claimed by the last process, which stopped before their run was recorded: delivered
    // again first (one whose run was recorded was resumed above, and its mark is dropped).
    let runs = RunStore::new(store.clone());
    let undelivered = Reminders::new(store.clone())
        .undelivered(|r| sink.accepts(r), |run| runs.exists(run))
        .unwrap_or_else(|e| {
            eprintln!("tollgate: reading undelivered reminders: {e}");
            Vec::new()
        });
    tokio::spawn(async move {
        for reminder in undelivered {
            let text = reminder.firing_text(now_secs().saturating_sub(reminder.due));
            sink.deliver(reminder, text).await;
        }
        scheduler::run(
            Reminders::new(store),
            sink,
            now_secs,
            scheduler::POLL,
            |line| eprintln!("tollgate: {line}"),
        )
        .await;
    });
    Ok(())
}

/// On SIGTERM or SIGINT: calls that are running are recorded as interrupted (the process exit
/// kills them, and their sandboxes with them); calls waiting for approval stay pending and are
/// asked again on the next start.
fn stop_on_signals(runs: RunStore, store: Arc<dyn crate::store::Store>) {
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return;
        };
        let code = tokio::select! {
            _ = term.recv() => 143,
            _ = int.recv() => 130,
        };
        let marked = runs
            .interrupt_running(crate::agent::runner::INTERRUPTED)
            .unwrap_or(0);
        let _ = store.flush();
        say(&format!(
            "\n(stopped: {marked} running call(s) recorded as interrupted; prompts stay pending until the next start)\n"
        ));
        std::process::exit(code);
    });
}

fn report(outcome: Result<crate::agent::runner::TurnOutcome, String>) {
    match outcome {
        Ok(done) => say(&format!("{}\n", done.answer)),
        Err(error) => say(&format!("error: {error}\n")),
    }
}

/// Says an outcome with the configured secrets taken out, and the controls that would rewrite
/// the terminal (ESC, CR, bidi overrides) shown escaped.
fn report_redacted(
    redactor: &crate::policy::redact::Redactor,
    outcome: Result<crate::agent::runner::TurnOutcome, crate::agent::error::RunError>,
) {
    let shown = |text: &str| tollgate_surface::text::show_prose(&redactor.redact(text));
    report(
        outcome
            .map(|mut done| {
                done.answer = shown(&done.answer);
                done
            })
            .map_err(|e| shown(&e.to_string())),
    );
}

/// `! COMMAND`: run as the operator, under the denylist and the agent's sandbox; the output
/// joins the conversation as untrusted context.
async fn operator_command(
    config: &crate::config::Config,
    agent: &str,
    session: &str,
    command: &str,
    runs: &RunStore,
) {
    let Some(agent_config) = config.agents.get(agent) else {
        return;
    };
    let analysis = ShellAnalysis::new(command, &agent_config.prefix_binaries);
    if let Some(why) = &analysis.too_complex {
        say(&format!("refused: too complex to judge: {why}\n"));
        return;
    }
    if let Some(hit) = &analysis.denied {
        say(&format!("refused: {hit}\n"));
        return;
    }
    let workspace = crate::gate::workspace_for(agent_config, Some(session));
    let runner = ShellRunner::new(crate::agent::setup::helper_binary());
    let spec = SandboxSpec {
        sandbox: agent_config.sandbox,
        workspace: workspace.clone(),
        writable_roots: agent_config.writable_roots.clone(),
        readable_roots: agent_config.readable_roots.clone(),
        tmpdir: PathBuf::new(),
        setup_errors: PathBuf::new(),
        network: agent_config.network_access,
        shell: PathBuf::new(),
        trust_git_config: agent_config.trust_git_config,
    };
    let env = crate::policy::env::child_environment(
        std::env::vars(),
        &crate::policy::env::configured_secret_names(config),
        &agent_config.env_allowlist,
        &workspace,
        &std::env::temp_dir(),
        &crate::policy::env::shell_path(&agent_config.shell_path),
    );
    let timeout = std::time::Duration::from_secs(agent_config.tool_timeout_secs);
    let output = match runner
        .run(command, &spec, &env, timeout, std::future::pending())
        .await
    {
        Ok(run) => format!(
            "exit {:?}\n{}{}",
            run.exit_code,
            run.stdout.text(),
            run.stderr.text()
        ),
        Err(e) => format!("error: {e}"),
    };
    say(&output);
    if !output.ends_with('\n') {
        say("\n");
    }
    let mut transcript = runs.transcript(session).unwrap_or_default();
    transcript.push(ChatMessage::new(
        Role::User,
        format!(
            "<operator_command>{}</operator_command>\n<output untrusted=\"true\">\n{}\n</output>",
            crate::agent::classifier::escape(command),
            crate::agent::classifier::escape(&output)
        ),
    ));
    let _ = runs.save_transcript(session, &transcript);
}
