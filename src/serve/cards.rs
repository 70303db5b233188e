//! The approver of a chat session: each prompt becomes a durable pending record, then a card
//! with inline buttons (in the chat, or in each admin's DM), then an answer — a press, the
//! timeout, or a re-decision that withdraws it. A resumed run asks again and finds its record:
//! the card already shown stays the card that answers.

use super::shared::{Shared, WaitingQuestion, lock};
use crate::approvals::card::{BUTTON_LABEL_CHARS, build_card, cut};
use crate::approvals::{ApprovalChoice, ApprovalToken, PendingApproval, PendingState};
use crate::clock::now_secs;
use crate::config::ApprovalsTo;
use crate::executor::approval::{
    Answer, AnswerFuture, ApprovalRequest, Approver, QuestionFuture, WithdrawFuture,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;
use tollgate_surface::{BridgeErrorKind, Button, CardOutcome, CardRef, CardView, ChatRef};
use withdrawal::Withdrawal;

mod withdrawal;

/// Answers a session's prompts through cards.
/// Withdraws a question when its wait ends unanswered — timed out, or dropped because the run
/// was stopped: the entry goes, and its card shows how it ended instead of live buttons.
struct WithdrawQuestion {
    shared: Arc<Shared>,
    key: String,
    outcome: CardOutcome,
}

impl Drop for WithdrawQuestion {
    fn drop(&mut self) {
        let Some(question) = lock(&self.shared.questions).remove(&self.key) else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (shared, outcome) = (self.shared.clone(), self.outcome.clone());
        runtime.spawn(async move {
            shared
                .settle_view(
                    &question.view,
                    std::slice::from_ref(&question.card),
                    &outcome,
                )
                .await;
        });
    }
}

pub struct CardApprover {
    pub shared: Arc<Shared>,
    pub chat: ChatRef,
    pub session: String,
    pub agent: String,
    /// Who sent the message the current run answers (shown on cards; answers questions).
    pub requester: Mutex<(i64, String)>,
    /// The current run's id (records are per run: call ids repeat across runs).
    pub run: Mutex<String>,
}

/// The answer a settled record stands for.
pub fn answer_of(record: &PendingApproval) -> Option<Answer> {
    match &record.state {
        PendingState::Waiting | PendingState::Withdrawn { .. } => None,
        PendingState::TimedOut => Some(Answer::TimedOut),
        PendingState::Answered { choice, by } => {
            let by = by.clone();
            let picked = |i: u8, bind: bool| match record.options.get(usize::from(i)) {
                Some(option) => Answer::Picked {
                    by: by.clone(),
                    option: option.clone(),
                    bind,
                },
                // A choice the record does not offer decides nothing.
                None => Answer::Deny { by: by.clone() },
            };
            Some(match choice {
                ApprovalChoice::Approve => Answer::Approve { by },
                ApprovalChoice::Deny => Answer::Deny { by },
                ApprovalChoice::AlwaysTool => Answer::AlwaysTool { by },
                ApprovalChoice::AlwaysCommand => Answer::AlwaysCommand { by },
                ApprovalChoice::Pick(i) => picked(*i, false),
                ApprovalChoice::Bind(i) => picked(*i, true),
            })
        }
    }
}

/// Posts a record's card through the bridge of its chat's platform, where `approvals_to` says;
/// returns where it landed.
pub async fn post_card(shared: &Shared, record: &PendingApproval) -> Vec<CardRef> {
    let (Some(card), Some(chat)) = (&record.card, &record.chat) else {
        return Vec::new();
    };
    let Some(handle) = shared.bridge(chat.platform) else {
        shared.log(&format!(
            "the card for call {} belongs on {}, which this service does not run: it waits there",
            record.call_id,
            chat.platform.as_str()
        ));
        return Vec::new();
    };
    let view = CardView::Approval(card.clone());
    let targets = if handle.settings.approvals_to == ApprovalsTo::Admins {
        handle.settings.admin_chats()
    } else {
        Vec::new()
    };
    let mut posted = Vec::new();
    let mut fall_back = targets.is_empty();
    for target in &targets {
        match handle.bridge.post_card(target, &view).await {
            Ok(at) => posted.push(at),
            Err(e) if e.kind == BridgeErrorKind::Unreachable => {
                shared.log(&format!(
                    "admin {} cannot be messaged (has not started a chat with the bot, or blocked it), so the card for call {} goes to chat {} instead ({e})",
                    target.id, record.call_id, chat.id
                ));
                fall_back = true;
            }
            Err(e) => shared.log(&format!("sending a card to admin {}: {e}", target.id)),
        }
    }
    if fall_back || posted.is_empty() {
        match handle.bridge.post_card(chat, &view).await {
            Ok(at) => posted.push(at),
            Err(e) => shared.log(&format!("sending a card to chat {}: {e}", chat.id)),
        }
    } else if !posted.iter().any(|p| p.chat == *chat) {
        shared
            .notice(
                chat,
                &format!("⏳ `{}` is waiting for an admin's approval.", record.tool),
            )
            .await;
    }
    posted
}

/// Brings the "all N" row of every chat in `posted` up to date.
pub fn refresh_rows(shared: &Arc<Shared>, posted: &[CardRef]) {
    let mut chats: Vec<&ChatRef> = posted.iter().map(|p| &p.chat).collect();
    chats.dedup();
    for chat in chats {
        shared.bulk_rows.refresh(shared, chat);
    }
}

impl CardApprover {
    fn current_run(&self) -> String {
        lock(&self.run).clone()
    }

    async fn ask_inner(&self, request: ApprovalRequest) -> Answer {
        let shared = &self.shared;
        let run = self.current_run();
        let existing = match shared
            .approvals
            .for_call(&self.session, &run, &request.call_id)
        {
            Ok(found) => found,
            Err(e) => {
                return Answer::Unanswerable {
                    reason: format!("the approval record could not be read ({e}); nothing ran"),
                };
            }
        };
        // Only the record of this very call: a provider may repeat an id (or leave ids out,
        // and get them numbered per reply), and an answer to another call must not run this
        // one. Another call's card still waiting (a record from before calls were
        // fingerprinted) is withdrawn, so that no card looks answerable that nothing waits on.
        let existing = match existing {
            Some(other) if other.asked != request.asked => {
                self.withdraw_superseded(&other).await;
                None
            }
            found => found,
        };
        let record = match existing {
            Some(record) if record.state == PendingState::Waiting => record,
            Some(record) if answer_of(&record).is_some() => {
                return answer_of(&record).unwrap_or(Answer::TimedOut);
            }
            _ => match self.create_record(&request, &run).await {
                Ok(record) => record,
                Err(reason) => return Answer::Unanswerable { reason },
            },
        };
        let Some(token) = ApprovalToken::parse(&record.token) else {
            return Answer::Unanswerable {
                reason: "the approval record is damaged; nothing ran".into(),
            };
        };
        let (sender, receiver) = oneshot::channel();
        lock(&shared.waiters).insert(record.token.clone(), sender);
        // A press may have landed between the lookup and the registration.
        if let Ok(Some(now)) = shared.approvals.get(&token)
            && let Some(answer) = answer_of(&now)
        {
            lock(&shared.waiters).remove(&record.token);
            return answer;
        }
        if record.posted_to.is_empty() {
            let posted = post_card(shared, &record).await;
            if let Err(e) = shared.approvals.set_posted(&token, &posted) {
                shared.log(&format!("recording where card {} went: {e}", record.token));
            }
            shared.cards_posted.notify_waiters();
            refresh_rows(shared, &posted);
        }
        let wait = Duration::from_secs(record.expires.saturating_sub(now_secs()));
        let answer = tokio::select! {
            answer = receiver => answer.ok(),
            () = tokio::time::sleep(wait) => None,
        };
        lock(&shared.waiters).remove(&record.token);
        if let Some(answer) = answer {
            return answer;
        }
        // The deadline passed (or the waiter was dropped): settle as a timeout unless a press
        // won the race, in which case that press is the answer.
        match shared.approvals.settle(&token, PendingState::TimedOut) {
            Ok(true) => {
                if let Ok(Some(settled)) = shared.approvals.get(&token) {
                    shared.show_outcome(&settled, &CardOutcome::TimedOut).await;
                    refresh_rows(shared, &settled.posted_to);
                }
                Answer::TimedOut
            }
            _ => shared
                .approvals
                .get(&token)
                .ok()
                .flatten()
                .and_then(|r| answer_of(&r))
                .unwrap_or(Answer::TimedOut),
        }
    }

    /// Settles `other`, a waiting card of another call under this call's id, as withdrawn,
    /// and says so on its card.
    async fn withdraw_superseded(&self, other: &PendingApproval) {
        let shared = &self.shared;
        let Some(token) = ApprovalToken::parse(&other.token) else {
            return;
        };
        let outcome = "asked again on a new card".to_string();
        if matches!(
            shared.approvals.settle(
                &token,
                PendingState::Withdrawn {
                    outcome: outcome.clone()
                }
            ),
            Ok(true)
        ) {
            shared
                .show_outcome(other, &CardOutcome::Redecided { decision: outcome })
                .await;
            refresh_rows(shared, &other.posted_to);
        }
    }

    async fn create_record(
        &self,
        request: &ApprovalRequest,
        run: &str,
    ) -> Result<PendingApproval, String> {
        let token = ApprovalToken::generate()
            .map_err(|e| format!("no randomness for an approval token ({e}); nothing ran"))?;
        let requester = lock(&self.requester).1.clone();
        // Stored redacted: every later rendering (edits, a resend after a restart) shows this.
        let (card, choices) = build_card(request, &requester, &self.shared.redactor, |choice| {
            token.button(&choice.to_data())
        });
        let timeout = self
            .shared
            .config
            .agents
            .get(&request.agent)
            .map_or(600, |a| a.approval_timeout_secs);
        let posted = now_secs();
        let record = PendingApproval {
            token: token.to_string(),
            session: self.session.clone(),
            call_id: request.call_id.clone(),
            agent: request.agent.clone(),
            tool: request.proposal.tool.clone(),
            posted,
            expires: posted + timeout,
            choices,
            state: PendingState::Waiting,
            run: run.to_string(),
            chat: Some(self.chat.clone()),
            card: Some(card),
            posted_to: Vec::new(),
            options: request.proposal.options.clone().unwrap_or_default(),
            asked: request.asked.clone(),
        };
        // Write ahead: the card goes out only once this record is on disk.
        self.shared
            .approvals
            .create_soon(&record)
            .await
            .map_err(|e| format!("the approval request could not be saved ({e}); nothing ran"))?;
        Ok(record)
    }
}

impl Approver for CardApprover {
    fn ask(&self, request: ApprovalRequest) -> AnswerFuture<'_> {
        Box::pin(self.ask_inner(request))
    }

    fn withdraw(&self, call_id: &str, asked: &str, outcome: &str) -> WithdrawFuture<'_> {
        let shared = self.shared.clone();
        let run = self.current_run();
        // Settled before the call goes on: a press that lands after this finds the card
        // withdrawn, and one that landed before is the answer.
        let found = withdrawal::withdraw(
            &shared.approvals,
            &self.session,
            &run,
            call_id,
            asked,
            outcome,
        );
        let outcome = outcome.to_string();
        Box::pin(async move {
            match found {
                Withdrawal::Settled(record) => {
                    lock(&shared.waiters).remove(&record.token);
                    // The call goes on now; its card is edited beside it (a slow platform
                    // must not hold up a decided call).
                    tokio::spawn(async move {
                        shared
                            .show_outcome(&record, &CardOutcome::Redecided { decision: outcome })
                            .await;
                        refresh_rows(&shared, &record.posted_to);
                    });
                    None
                }
                Withdrawal::CameFirst { token, answer } => {
                    if let Some(token) = token {
                        lock(&shared.waiters).remove(&token);
                    }
                    Some(answer)
                }
                Withdrawal::NoCard => None,
            }
        })
    }
}

/// Ends a question's posting (it is open, or its card was never sent, or the run stopped
/// meanwhile) and wakes the presses waiting for it.
struct QuestionPosted {
    shared: Arc<Shared>,
    key: String,
}

impl Drop for QuestionPosted {
    fn drop(&mut self) {
        lock(&self.shared.questions_posting).remove(&self.key);
        self.shared.cards_posted.notify_waiters();
    }
}

impl crate::executor::QuestionAsker for CardApprover {
    fn ask_question(
        &self,
        _session: &str,
        question: &str,
        choices: &[String],
    ) -> Option<QuestionFuture<'_>> {
        let question = question.to_string();
        let choices = choices.to_vec();
        Some(Box::pin(async move {
            let shared = &self.shared;
            let token = ApprovalToken::generate().ok()?;
            let requester = lock(&self.requester).0;
            // A question's buttons carry `q…` (an approval's carry `t1…`): presses tell them apart.
            let key = crate::approvals::question_key(&token);
            let rows: Vec<Vec<Button>> = choices
                .iter()
                .enumerate()
                .map(|(i, choice)| {
                    vec![Button {
                        label: cut(&shared.redactor.redact(choice), BUTTON_LABEL_CHARS),
                        token: format!("{key}:{i}"),
                    }]
                })
                .collect();
            let view = CardView::Question {
                agent: self.agent.clone(),
                question,
                rows,
            };
            let handle = shared.bridge(self.chat.platform)?;
            // Marked while its card is posted: a press read before the card's `sendMessage`
            // is answered waits for the question instead of finding it gone.
            lock(&shared.questions_posting).insert(key.clone(), (requester, self.session.clone()));
            let posting = QuestionPosted {
                shared: shared.clone(),
                key: key.clone(),
            };
            let card = match handle.bridge.post_card(&self.chat, &view).await {
                Ok(at) => at,
                Err(e) => {
                    shared.log(&format!("sending a question card: {e}"));
                    return None;
                }
            };
            let (sender, receiver) = oneshot::channel();
            lock(&shared.questions).insert(
                key.clone(),
                WaitingQuestion {
                    session: self.session.clone(),
                    requester,
                    choices,
                    card,
                    view,
                    answer: sender,
                },
            );
            drop(posting);
            // Dropped with this future (the run stopped) or at its end: a question nobody
            // answered is withdrawn, its card settled.
            let mut withdraw = WithdrawQuestion {
                shared: self.shared.clone(),
                key: key.clone(),
                outcome: CardOutcome::Expired,
            };
            let timeout = shared
                .config
                .agents
                .get(&self.agent)
                .map_or(600, |a| a.approval_timeout_secs);
            let answer = tokio::time::timeout(Duration::from_secs(timeout), receiver).await;
            if answer.is_err() {
                withdraw.outcome = CardOutcome::TimedOut;
            }
            answer.ok().and_then(Result::ok)
        }))
    }
}
