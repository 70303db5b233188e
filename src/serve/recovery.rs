//! What a start does with what the last process left (design.md section 4, "Durable"): records
//! that expired while it was down are resolved as timeouts and their cards edited; records
//! whose card was never sent are sent; the last process's "all N" rows are replaced; open runs
//! continue in their sessions, where their calls ask again and find the cards already shown.
//! Each card is posted and edited through the bridge of its own chat's platform; what belongs
//! to a platform this process does not run is left for the process that does.

use super::bulk::retire_on_screen;
use super::cards::{post_card, refresh_rows};
use super::sessions::Service;
use super::shared::Shared;
use crate::approvals::ApprovalToken;
use crate::clock::now_secs;
use crate::executor::approval::Answer;
use std::sync::Arc;
use std::time::Duration;
use tollgate_surface::{CardOutcome, Platform};

/// How often deadlines are checked apart from the calls waiting on them.
const EXPIRY_SWEEP: Duration = Duration::from_secs(5);

/// Settles what expired, sends what was never sent, and resumes open runs.
pub async fn recover(service: &Arc<Service>) {
    let shared = &service.shared;
    expire(shared).await;
    let runs_here =
        |platform: Option<Platform>| platform.is_some_and(|p| shared.bridge(p).is_some());
    // The rows on screen were kept by the last process: each is replaced by a fresh one.
    for row in shared.bulks.live().unwrap_or_default() {
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
    let open = match shared.runs.open_runs() {
        Ok(open) => open,
        Err(e) => {
            shared.log(&format!("reading open runs: {e}"));
            return;
        }
    };
    for run in open {
        // A subagent's run is no chat session: it is not resumed as one (it stays open in the
        // store; its parent's resumed run asks for what it needs again).
        if run.session.contains(":sub:") {
            continue;
        }
        let serving = shared.gateway.iter().any(|h| {
            run.session
                .strip_prefix(h.settings.platform.as_str())
                .is_some_and(|rest| rest.starts_with(':'))
                && run.agent == h.settings.agent
        });
        if !serving {
            continue;
        }
        let Some(chat) = service.remembered_chat(&run.session) else {
            shared.log(&format!(
                "run {} of session {} cannot resume: its chat is unknown",
                run.id, run.session
            ));
            continue;
        };
        match service.session(&run.session, &chat) {
            Ok(worker) => {
                shared.log(&format!(
                    "resuming run {} of session {}",
                    run.id, run.session
                ));
                let _ = worker.resume(run);
            }
            Err(e) => shared.log(&format!("session {} could not start: {e}", run.session)),
        }
    }
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
