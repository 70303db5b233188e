//! The approver of a chat session: each prompt becomes a durable pending record, then a card
//! with inline buttons (in the chat, or in each admin's DM), then an answer — a press, the
//! timeout, or a re-decision that withdraws it. A resumed run asks again and finds its record:
//! the card already shown stays the card that answers.

use super::bulk::refresh_bulk_row;
use super::shared::{Shared, WaitingQuestion, lock};
use crate::agent::reminders::now_secs;
use crate::approvals::{ApprovalChoice, ApprovalToken, PendingApproval, PendingState};
use crate::config::ApprovalsTo;
use crate::executor::approval::{Answer, AnswerFuture, ApprovalRequest, Approver, QuestionFuture};
use crate::policy::resolve::AlwaysOffer;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;
use tollgate_surface::{ApprovalCard, Button, CardOutcome, CardRef, ChatKind, ChatRef, Platform};
use tollgate_telegram::bot::is_unreachable_user;
use tollgate_telegram::card::render_card;

/// Characters of a command shown on an "Always" button (the card shows it whole).
const BUTTON_LABEL_CHARS: usize = 60;

/// Answers a session's prompts through cards.
pub struct CardApprover {
    pub shared: Arc<Shared>,
    pub chat: ChatRef,
    pub session: String,
    /// Who sent the message the current run answers (shown on cards; answers questions).
    pub requester: Mutex<(i64, String)>,
    /// The current run's id (records are per run: call ids repeat across runs).
    pub run: Mutex<String>,
}

fn cut(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        return text.to_string();
    }
    let mut short: String = text.chars().take(chars - 1).collect();
    short.push('…');
    short
}

/// The answer a settled record stands for.
pub fn answer_of(record: &PendingApproval) -> Option<Answer> {
    match &record.state {
        PendingState::Waiting | PendingState::Withdrawn { .. } => None,
        PendingState::TimedOut => Some(Answer::TimedOut),
        PendingState::Answered { choice, by } => {
            let by = by.clone();
            Some(match choice {
                ApprovalChoice::Approve => Answer::Approve { by },
                ApprovalChoice::Deny => Answer::Deny { by },
                ApprovalChoice::AlwaysTool => Answer::AlwaysTool { by },
                ApprovalChoice::AlwaysCommand => Answer::AlwaysCommand { by },
            })
        }
    }
}

/// The card and the choices its buttons offer.
fn build_card(
    request: &ApprovalRequest,
    requester: &str,
    token: &ApprovalToken,
) -> (ApprovalCard, Vec<ApprovalChoice>) {
    let button = |label: String, choice: ApprovalChoice| Button {
        label,
        token: token.button(choice.as_str()),
    };
    let mut choices = vec![ApprovalChoice::Approve, ApprovalChoice::Deny];
    let mut rows = vec![vec![
        button("✅ Approve".into(), ApprovalChoice::Approve),
        button("⛔ Deny".into(), ApprovalChoice::Deny),
    ]];
    // "Always" only where the mode's ceiling asked (step 13): elsewhere it would change nothing.
    match &request.decision.always {
        AlwaysOffer::Tool => {
            choices.push(ApprovalChoice::AlwaysTool);
            rows.push(vec![button(
                "Always: this tool (this session)".into(),
                ApprovalChoice::AlwaysTool,
            )]);
        }
        AlwaysOffer::Command(key) => {
            choices.push(ApprovalChoice::AlwaysCommand);
            let label = format!("Always: {} (agent {})", key.describe(), request.agent);
            rows.push(vec![button(
                cut(&label, BUTTON_LABEL_CHARS),
                ApprovalChoice::AlwaysCommand,
            )]);
        }
        AlwaysOffer::None => {}
    }
    let mut details = request.proposal.message.clone();
    if let Some(preview) = &request.proposal.preview {
        details.push('\n');
        details.push_str(preview);
    }
    if let AlwaysOffer::Command(key) = &request.decision.always {
        details.push_str(&format!(
            "\n\n\"Always\" would allow {} for agent {} from now on.",
            key.describe(),
            request.agent
        ));
    }
    let card = ApprovalCard {
        agent: request.agent.clone(),
        requester: requester.to_string(),
        tool: request.proposal.tool.clone(),
        tier: request.decision.tier.to_string(),
        reason: request.decision.reason.clone(),
        details,
        rows,
    };
    (card, choices)
}

/// Posts a record's card where `approvals_to` says; returns where it landed.
pub async fn post_card(shared: &Shared, record: &PendingApproval) -> Vec<CardRef> {
    let (Some(card), Some(chat)) = (&record.card, &record.chat) else {
        return Vec::new();
    };
    let mut card = card.clone();
    card.details = shared.redactor.redact(&card.details);
    let rendered = render_card(&card);
    let mut targets = Vec::new();
    if shared.telegram.approvals_to == ApprovalsTo::Admins {
        for admin in shared.admin_ids() {
            targets.push(ChatRef {
                platform: Platform::Telegram,
                id: admin,
                kind: ChatKind::Private,
                thread: None,
                guild: None,
                parent: None,
            });
        }
    }
    let mut posted = Vec::new();
    let mut fall_back = targets.is_empty();
    for target in &targets {
        match send_one(shared, target, &rendered, &card.rows).await {
            Ok(message_id) => posted.push(CardRef {
                chat: target.clone(),
                message_id,
            }),
            Err(e) if is_unreachable_user(&e) => {
                shared.log(&format!(
                    "admin {} has not started a chat with the bot, so the card for call {} goes to chat {} instead ({e})",
                    target.id, record.call_id, chat.id
                ));
                fall_back = true;
            }
            Err(e) => shared.log(&format!("sending a card to admin {}: {e}", target.id)),
        }
    }
    if fall_back || posted.is_empty() {
        match send_one(shared, chat, &rendered, &card.rows).await {
            Ok(message_id) => posted.push(CardRef {
                chat: chat.clone(),
                message_id,
            }),
            Err(e) => shared.log(&format!("sending a card to chat {}: {e}", chat.id)),
        }
    } else if !posted.iter().any(|p| p.chat.id == chat.id) {
        shared
            .notice(
                chat,
                &format!("⏳ `{}` is waiting for an admin's approval.", record.tool),
            )
            .await;
    }
    posted
}

async fn send_one(
    shared: &Shared,
    target: &ChatRef,
    rendered: &tollgate_telegram::card::RenderedCard,
    rows: &[Vec<Button>],
) -> Result<i64, tollgate_surface::BridgeError> {
    let message_id = shared.bot.send_card(target, &rendered.html, rows).await?;
    if let Some(full) = &rendered.full_details
        && let Err(e) = shared
            .bot
            .send_document(target, "approval-details.txt", full)
            .await
    {
        shared.log(&format!("attaching a card's full details: {e}"));
    }
    Ok(message_id)
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
        let record = match existing {
            Some(record) if record.state == PendingState::Waiting => record,
            Some(record) if answer_of(&record).is_some() => {
                return answer_of(&record).unwrap_or(Answer::TimedOut);
            }
            _ => match self.create_record(&request, &run) {
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
            refresh_bulk_row(shared, &self.chat).await;
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
                }
                refresh_bulk_row(shared, &self.chat).await;
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

    fn create_record(
        &self,
        request: &ApprovalRequest,
        run: &str,
    ) -> Result<PendingApproval, String> {
        let token = ApprovalToken::generate()
            .map_err(|e| format!("no randomness for an approval token ({e}); nothing ran"))?;
        let requester = lock(&self.requester).1.clone();
        let (mut card, choices) = build_card(request, &requester, &token);
        // Stored redacted: every later rendering (edits, a resend after a restart) shows this.
        card.details = self.shared.redactor.redact(&card.details);
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
        };
        // Write ahead: the card goes out only once this record is on disk.
        self.shared
            .approvals
            .create(&record)
            .map_err(|e| format!("the approval request could not be saved ({e}); nothing ran"))?;
        Ok(record)
    }
}

impl Approver for CardApprover {
    fn ask(&self, request: ApprovalRequest) -> AnswerFuture<'_> {
        Box::pin(self.ask_inner(request))
    }

    fn withdraw(&self, call_id: &str, outcome: &str) {
        let shared = self.shared.clone();
        let chat = self.chat.clone();
        let (session, run, call_id, outcome) = (
            self.session.clone(),
            self.current_run(),
            call_id.to_string(),
            outcome.to_string(),
        );
        tokio::spawn(async move {
            let Ok(Some(record)) = shared.approvals.for_call(&session, &run, &call_id) else {
                return;
            };
            let Some(token) = ApprovalToken::parse(&record.token) else {
                return;
            };
            lock(&shared.waiters).remove(&record.token);
            let settled = shared.approvals.settle(
                &token,
                PendingState::Withdrawn {
                    outcome: outcome.clone(),
                },
            );
            if matches!(settled, Ok(true)) {
                shared
                    .show_outcome(&record, &CardOutcome::Redecided { decision: outcome })
                    .await;
                refresh_bulk_row(&shared, &chat).await;
            }
        });
    }

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
            let html = format!(
                "❓ <b>{}</b> asks: {}\n(answer with a button, or reply with text)",
                tollgate_telegram::render::escape(&shared.agent),
                tollgate_telegram::render::escape(&shared.redactor.redact(&question))
            );
            let rows: Vec<Vec<Button>> = choices
                .iter()
                .enumerate()
                .map(|(i, choice)| {
                    vec![Button {
                        label: cut(choice, BUTTON_LABEL_CHARS),
                        token: format!("{key}:{i}"),
                    }]
                })
                .collect();
            let card = match shared.bot.send_card(&self.chat, &html, &rows).await {
                Ok(message_id) => Some(CardRef {
                    chat: self.chat.clone(),
                    message_id,
                }),
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
                    html,
                    answer: sender,
                },
            );
            let timeout = shared
                .config
                .agents
                .get(&shared.agent)
                .map_or(600, |a| a.approval_timeout_secs);
            let answer = tokio::time::timeout(Duration::from_secs(timeout), receiver).await;
            lock(&shared.questions).remove(&key);
            answer.ok().and_then(Result::ok)
        }))
    }
}
