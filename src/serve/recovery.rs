//! What a start does with what the last process left (design.md section 4, "Durable"): records
//! that expired while it was down are resolved as timeouts and their cards edited; records
//! whose card was never sent are sent; the last process's "all N" rows are replaced; answers
//! it wrote down but may not have sent are sent; open runs continue in their sessions, where
//! their calls ask again and find the cards already shown.
//! Each card is posted and edited through the bridge of its own chat's platform; what belongs
//! to a platform this process does not run is left for the process that does.

use super::bulk::retire_on_screen;
use super::cards::{post_card, refresh_rows};
use super::sessions::Service;
use super::shared::Shared;
use super::worker::SessionWorker;
use crate::agent::runs::{RunPhase, RunRecord};
use crate::approvals::ApprovalToken;
use crate::clock::now_secs;
use crate::executor::approval::Answer;
use std::sync::Arc;
use std::time::Duration;
use tollgate_surface::{CardOutcome, Platform};

/// What a chat is told of a run that failed just before the last process stopped.
const FAILED_BEFORE_THE_RESTART: &str =
    "⚠ The run failed before tollgate restarted. The operator's log has the details.";

/// How often deadlines are checked apart from the calls waiting on them.
const EXPIRY_SWEEP: Duration = Duration::from_secs(5);

/// Settles what expired, sends what was never sent, and resumes open runs.
pub async fn recover(service: &Arc<Service>) {
    let shared = &service.shared;
    match shared.runs.close_orphaned() {
        Ok(0) => {}
        Ok(closed) => shared.log(&format!(
            "ended {closed} open run(s) nobody resumes (subagents' and one-off runs' of the last process)"
        )),
        Err(e) => shared.log(&format!("ending open runs nobody resumes: {e}")),
    }
    expire(shared).await;
    let runs_here =
        |platform: Option<Platform>| platform.is_some_and(|p| shared.bridge(p).is_some());
    // The rows on screen were kept by the last process: each is replaced by a fresh one.
    for row in shared.bulks.live().unwrap_or_default() {
        // Saved, but the last process stopped before it noted where the row went (or before
        // it went out): nothing to edit, and no press on it is taken any more — retired, so it
        // is not read at every start and retention can prune it.
        if row.posted_to.is_none() {
            if let Some(token) = ApprovalToken::parse(&row.token) {
                let _ = shared.bulks.retire(&token);
            }
            continue;
        }
        if !runs_here(row.posted_to.as_ref().map(|p| p.chat.platform)) {
            continue;
        }
        if let Some(token) = ApprovalToken::parse(&row.token)
            && matches!(shared.bulks.retire(&token), Ok(true))
        {
            retire_on_screen(shared, &row).await;
        }
    }
    for record in shared.approvals.waiting().unwrap_or_default() {
        if !runs_here(record.chat.as_ref().map(|c| c.platform)) {
            continue;
        }
        if record.posted_to.is_empty() {
            let posted = post_card(shared, &record).await;
            if let Some(token) = ApprovalToken::parse(&record.token)
                && let Err(e) = shared.approvals.set_posted(&token, &posted)
            {
                shared.log(&format!("recording where card {} went: {e}", record.token));
            }
            refresh_rows(shared, &posted);
        } else {
            refresh_rows(shared, &record.posted_to);
        }
    }
    // A run of a session this service answers, by session and agent (a subagent's run is no
    // chat session: it is not resumed as one — it stays open in the store, and its parent's
    // resumed run asks for what it needs again).
    let serving = |run: &RunRecord| {
        !run.session.contains(":sub:")
            && shared.gateway.iter().any(|h| {
                run.session
                    .strip_prefix(h.settings.platform.as_str())
                    .is_some_and(|rest| rest.starts_with(':'))
                    && run.agent == h.settings.agent
            })
    };
    // Answers the last process wrote down but may not have sent go first (a session's later
    // work comes after them in its queue).
    let unanswered = shared.runs.unanswered().unwrap_or_else(|e| {
        shared.log(&format!("reading unanswered runs: {e}"));
        Vec::new()
    });
    for run in unanswered.into_iter().filter(|run| serving(run)) {
        if let Some(worker) = worker_for(service, &run, "answer") {
            let answer = match run.phase {
                RunPhase::Finished { answer } => answer,
                // Its error stays in the log: the chat is untrusted, and a provider's error
                // carries its endpoint and response.
                RunPhase::Failed { .. } => FAILED_BEFORE_THE_RESTART.to_string(),
                _ => continue,
            };
            shared.log(&format!(
                "sending the answer of run {} of session {} (the last process stopped before it could)",
                run.id, run.session
            ));
            let _ = worker.send_answer(run.id, answer);
        }
    }
    let open = shared.runs.open_runs().unwrap_or_else(|e| {
        shared.log(&format!("reading open runs: {e}"));
        Vec::new()
    });
    for run in open.into_iter().filter(|run| serving(run)) {
        if let Some(worker) = worker_for(service, &run, "resume") {
            shared.log(&format!(
                "resuming run {} of session {}",
                run.id, run.session
            ));
            let _ = worker.resume(run);
        }
    }
    redeliver_reminders(service).await;
}

/// Delivers again the reminders the last process claimed but stopped before their run was
/// recorded (a reminder's run has a fixed id: one that was recorded is resumed or answered
/// above instead).
async fn redeliver_reminders(service: &Arc<Service>) {
    use crate::agent::scheduler::ReminderSink;
    let shared = &service.shared;
    let sink = super::reminders::ServeReminders {
        service: service.clone(),
    };
    let undelivered = crate::reminders::Reminders::new(shared.store.clone())
        .undelivered(|r| sink.accepts(r), |run| shared.runs.exists(run));
    match undelivered {
        Ok(undelivered) => {
            for reminder in undelivered {
                shared.log(&format!(
                    "delivering reminder {} of session {} again (the last process stopped before its run was recorded)",
                    reminder.id, reminder.session
                ));
                let text = reminder.firing_text(now_secs().saturating_sub(reminder.due));
                sink.deliver(reminder, text).await;
            }
        }
        Err(e) => shared.log(&format!("reading undelivered reminders: {e}")),
    }
}

/// The worker of a stored run's session, started if need be; `None` (logged, saying what
/// could not be done) when its chat is unknown or it cannot start.
fn worker_for(service: &Arc<Service>, run: &RunRecord, to: &str) -> Option<Arc<SessionWorker>> {
    let shared = &service.shared;
    let Some(chat) = service.remembered_chat(&run.session) else {
        shared.log(&format!(
            "run {} of session {}: cannot {to}: its chat is unknown",
            run.id, run.session
        ));
        return None;
    };
    service
        .session(&run.session, &chat)
        .map_err(|e| shared.log(&format!("session {} could not start: {e}", run.session)))
        .ok()
}

/// Resolves records past their deadline as timeouts and edits their cards.
async fn expire(shared: &Arc<Shared>) {
    match shared.approvals.expire_due(now_secs()) {
        Ok(expired) => {
            for record in expired {
                shared.deliver(&record.token, Answer::TimedOut);
                shared.show_outcome(&record, &CardOutcome::TimedOut).await;
                // An "all N" row that named it no longer answers what it shows.
                refresh_rows(shared, &record.posted_to);
            }
        }
        Err(e) => shared.log(&format!("expiring approvals: {e}")),
    }
}

/// Checks deadlines every few seconds.
pub async fn expire_periodically(shared: Arc<Shared>) {
    loop {
        tokio::time::sleep(EXPIRY_SWEEP).await;
        expire(&shared).await;
    }
}
