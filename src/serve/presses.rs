//! What a button press does. The token only locates a record; the presser is checked here on
//! every press (an admin of this bridge for approvals, the requester for questions). The first
//! valid press wins; others are told who answered; a card whose run is gone is expired.

use super::bulk::refresh_bulk_row;
use super::cards::answer_of;
use super::shared::{Shared, lock};
use crate::approvals::{
    ApprovalChoice, ApprovalToken, BulkChoice, ButtonData, PendingApproval, PendingState,
    PressOutcome,
};
use serde_json::json;
use tollgate_surface::CardOutcome;
use tollgate_telegram::updates::TelegramPress;

fn outcome_of(record: &PendingApproval) -> Option<CardOutcome> {
    match &record.state {
        PendingState::Answered { choice, by } => Some(match choice {
            ApprovalChoice::Deny => CardOutcome::Denied { by: by.clone() },
            _ => CardOutcome::Approved { by: by.clone() },
        }),
        _ => None,
    }
}

/// Whether the run a record belongs to still waits for this call (false: the run is gone).
fn run_waits(shared: &Shared, record: &PendingApproval) -> bool {
    if record.run.is_empty() {
        return true;
    }
    match shared.runs.load(&record.run) {
        Ok(Some(run)) => {
            run.is_open()
                && run.calls.iter().any(|c| {
                    c.call.id == record.call_id && c.state == crate::agent::runs::CallState::Pending
                })
        }
        Ok(None) => false,
        // Unsure: keep the card alive rather than expire it on a read error.
        Err(_) => true,
    }
}

async fn reply(shared: &Shared, press: &TelegramPress, text: &str, alert: bool) {
    if let Err(e) = shared
        .bot
        .answer_press(&press.callback_id, text, alert)
        .await
    {
        shared.log(&format!("answering a press: {e}"));
    }
}

/// Handles one press.
pub async fn handle_press(shared: &Shared, press: TelegramPress) {
    let data = press.press.token.clone();
    let parsed = ButtonData::parse(&data);
    if let Some(ButtonData::Question { key, index }) = &parsed {
        return answer_question(shared, &press, key, *index).await;
    }
    let presser = &press.press.presser;
    let by = format!("{} (telegram:{})", presser.display, presser.id);
    let is_admin = shared.is_admin(presser.id);
    if let Some(ButtonData::Bulk { token, choice }) = parsed {
        return answer_all(shared, &press, token, choice, &by, is_admin).await;
    }
    let record = match parsed {
        Some(ButtonData::Card { token, .. }) => shared
            .approvals
            .get(&token)
            .ok()
            .flatten()
            .map(|r| (token, r)),
        _ => None,
    };
    if let Some((token, record)) = &record
        && record.state == PendingState::Waiting
        && is_admin
        && !run_waits(shared, record)
    {
        let expired = PendingState::Withdrawn {
            outcome: "expired".into(),
        };
        if matches!(shared.approvals.settle(token, expired), Ok(true)) {
            shared.show_outcome(record, &CardOutcome::Expired).await;
        }
        reply(
            shared,
            &press,
            "This approval expired: its run is gone.",
            true,
        )
        .await;
        return;
    }
    let outcome = shared
        .approvals
        .press(&data, &by, is_admin, crate::agent::reminders::now_secs());
    match outcome {
        Ok(PressOutcome::Answered(answered)) => {
            let Some(outcome) = outcome_of(&answered) else {
                return;
            };
            let text = match &outcome {
                CardOutcome::Denied { .. } => "Denied.",
                _ => "Approved.",
            };
            reply(shared, &press, text, false).await;
            if let Some(answer) = answer_of(&answered) {
                shared.deliver(&answered.token, answer);
            }
            shared.show_outcome(&answered, &outcome).await;
            if let Some(chat) = &answered.chat {
                refresh_bulk_row(shared, chat).await;
            }
        }
        Ok(PressOutcome::NotAnAdmin) => {
            let (session, call, tool) = record
                .as_ref()
                .map(|(_, r)| (r.session.clone(), r.call_id.clone(), r.tool.clone()))
                .unwrap_or_default();
            shared.audit(
                "press_rejected",
                &session,
                json!({"presser": format!("telegram:{}", presser.id), "call": call, "tool": tool, "reason": "not one of the bridge's admins"}),
            );
            reply(shared, &press, "Only admins can answer this.", true).await;
        }
        Ok(PressOutcome::AlreadyAnswered { by }) => {
            reply(shared, &press, &format!("Already answered by {by}."), true).await;
        }
        Ok(PressOutcome::Expired) => {
            if let Some((token, _)) = &record
                && let Ok(Some(now)) = shared.approvals.get(token)
                && now.state == PendingState::TimedOut
            {
                shared.show_outcome(&now, &CardOutcome::TimedOut).await;
                shared.deliver(&now.token, crate::executor::approval::Answer::TimedOut);
            }
            reply(shared, &press, "This approval has expired.", true).await;
        }
        Ok(PressOutcome::Unknown) => {
            reply(shared, &press, "This button is no longer valid.", true).await;
        }
        Err(e) => {
            shared.log(&format!("recording a press: {e}"));
            reply(
                shared,
                &press,
                "The answer could not be saved; try again.",
                true,
            )
            .await;
        }
    }
}

/// "Approve all N / Deny all N": each of exactly the N cards the row named, as if pressed.
async fn answer_all(
    shared: &Shared,
    press: &TelegramPress,
    token: ApprovalToken,
    choice: BulkChoice,
    by: &str,
    is_admin: bool,
) {
    if !is_admin {
        shared.audit(
            "press_rejected",
            "",
            json!({"presser": format!("telegram:{}", press.press.presser.id), "reason": "not one of the bridge's admins", "bulk": true}),
        );
        return reply(shared, press, "Only admins can answer this.", true).await;
    }
    let Ok(Some(bulk)) = shared.bulks.take(&token) else {
        return reply(
            shared,
            press,
            "This row was already used or replaced.",
            true,
        )
        .await;
    };
    let single = choice.single();
    let now = crate::agent::reminders::now_secs();
    let mut answered = 0;
    for card in &bulk.cards {
        let Some(card_token) = ApprovalToken::parse(card) else {
            continue;
        };
        if let Ok(PressOutcome::Answered(record)) =
            shared
                .approvals
                .press(&card_token.button(single.as_str()), by, true, now)
        {
            answered += 1;
            if let Some(answer) = answer_of(&record) {
                shared.deliver(&record.token, answer);
            }
            if let Some(outcome) = outcome_of(&record) {
                shared.show_outcome(&record, &outcome).await;
            }
        }
    }
    let verb = if single == ApprovalChoice::Approve {
        "Approved"
    } else {
        "Denied"
    };
    if let Some(card) = &bulk.posted_to {
        let _ = shared
            .bot
            .edit_card(
                card.chat.id,
                card.message_id,
                &format!(
                    "{verb} {answered} of {} by {}",
                    bulk.cards.len(),
                    tollgate_telegram::render::escape(by)
                ),
                &[],
            )
            .await;
        shared.bulk_rows.lock().await.remove(&card.chat.id);
        refresh_bulk_row(shared, &card.chat).await;
    }
    reply(shared, press, &format!("{verb} {answered}."), false).await;
}

/// A question card's button: only the requester answers it.
async fn answer_question(shared: &Shared, press: &TelegramPress, key: &str, index: usize) {
    let waiting = {
        let mut questions = lock(&shared.questions);
        match questions.get(key) {
            Some(q) if q.requester != press.press.presser.id => Some(None),
            Some(_) => questions.remove(key).map(Some),
            None => None,
        }
    };
    let Some(waiting) = waiting else {
        return reply(shared, press, "This question is no longer open.", true).await;
    };
    let Some(question) = waiting else {
        return reply(
            shared,
            press,
            "Only the person who asked the agent can answer this.",
            true,
        )
        .await;
    };
    let choice = question.choices.get(index).cloned().unwrap_or_default();
    finish_question(shared, question, &choice).await;
    reply(shared, press, "Answered.", false).await;
}

/// Sends a question's answer and shows it on the card.
pub async fn finish_question(
    shared: &Shared,
    question: super::shared::WaitingQuestion,
    answer: &str,
) {
    if let Some(card) = &question.card {
        let html = format!(
            "{}\n\n<b>Answered:</b> {}",
            question.html,
            tollgate_telegram::render::escape(answer)
        );
        let _ = shared
            .bot
            .edit_card(card.chat.id, card.message_id, &html, &[])
            .await;
    }
    let _ = question.answer.send(answer.to_string());
}
