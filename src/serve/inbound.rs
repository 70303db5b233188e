//! A message's way in: access (strangers ignored silently and audited), mention gating, the
//! per-user rate limit, answers to open questions, commands, attachments, then the session's
//! queue.

use super::Service;
use super::attachments::receive;
use super::commands::{parse_command, run_command};
use super::presses::finish_question;
use super::rate::RateVerdict;
use super::shared::lock;
use super::worker::Queued;
use crate::router::{Access, session_key, should_answer, telegram_access};
use serde_json::json;
use std::time::Instant;
use tollgate_telegram::updates::TelegramMessage;

/// Handles one message.
pub async fn handle_message(service: &Service, message: TelegramMessage) {
    let shared = &service.shared;
    let inbound = &message.inbound;
    let key = session_key(inbound, shared.telegram.group_sessions_per_user);
    let admin = match telegram_access(&shared.telegram, inbound) {
        Access::Admitted { admin } => admin,
        Access::Ignored(reason) => {
            // Silently: a reply would confirm the bot exists. Bots are not audited (noise).
            if !inbound.sender.is_bot {
                shared.audit(
                    "access_denied",
                    &key,
                    json!({"user": format!("telegram:{}", inbound.sender.id), "chat": inbound.chat.id, "reason": reason}),
                );
            }
            return;
        }
    };
    if !should_answer(shared.telegram.require_mention, inbound) {
        return;
    }
    let verdict = lock(&service.rate).check(inbound.sender.id, Instant::now());
    match verdict {
        RateVerdict::Accept => {}
        RateVerdict::RefuseWithNotice => {
            shared
                .notice(
                    &inbound.chat,
                    &format!(
                        "You are sending messages faster than {} a minute; I will ignore new ones for a moment.",
                        shared.telegram.rate_limit_per_minute
                    ),
                )
                .await;
            return;
        }
        RateVerdict::RefuseSilently => return,
    }
    let text = strip_mention(&inbound.text, &service.shared.bot.username);
    // An open question of this session, from its requester, is answered by text.
    let open_question = {
        let mut questions = lock(&shared.questions);
        let found = questions
            .iter()
            .find(|(_, q)| q.session == key && q.requester == inbound.sender.id)
            .map(|(k, _)| k.clone());
        found.and_then(|k| questions.remove(&k))
    };
    if let Some(question) = open_question {
        finish_question(shared, question, &text).await;
        return;
    }
    let Some(worker) = session_or_notice(service, &key, inbound).await else {
        return;
    };
    if let Some((name, args)) = parse_command(&text, &shared.bot.username) {
        let reply = run_command(shared, &worker, name, args, admin);
        shared.notice(&inbound.chat, &reply).await;
        return;
    }
    // The workspace path is resolved (and created) only for a message that brings files.
    let (mut lines, refused) = if message.files.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        receive(shared, &service.workspace(&key), &message.files).await
    };
    if !refused.is_empty() {
        shared.notice(&inbound.chat, &refused.join("\n")).await;
    }
    if text.trim().is_empty() && lines.is_empty() {
        return;
    }
    lines.insert(0, text);
    let requester = (
        inbound.sender.id,
        format!(
            "{} (telegram:{})",
            inbound.sender.display, inbound.sender.id
        ),
    );
    let text = lines.join("\n");
    let mut queued = worker.enqueue(text.clone(), requester.clone());
    if queued == Queued::Evicted {
        // Let go as idle between the lookup and now: a fresh worker takes it.
        service.forget(&key, &worker);
        let Some(fresh) = session_or_notice(service, &key, inbound).await else {
            return;
        };
        queued = fresh.enqueue(text, requester);
    }
    if let Queued::Full { announce: true } = queued {
        shared
            .notice(
                &inbound.chat,
                &format!(
                    "I am busy and {} messages are already waiting; this one was dropped. Try again when I answer.",
                    shared.telegram.queue_cap
                ),
            )
            .await;
    }
}

/// The session's worker, or a notice to the chat that it could not start.
async fn session_or_notice(
    service: &Service,
    key: &str,
    inbound: &tollgate_surface::Inbound,
) -> Option<std::sync::Arc<super::worker::SessionWorker>> {
    match service.session(key, &inbound.chat) {
        Ok(worker) => Some(worker),
        Err(e) => {
            service
                .shared
                .log(&format!("session {key} could not start: {e}"));
            service
                .shared
                .notice(
                    &inbound.chat,
                    &format!("⚠ This chat's agent could not start: {e}"),
                )
                .await;
            None
        }
    }
}

/// The text without the bot's @-mention.
fn strip_mention(text: &str, username: &str) -> String {
    if username.is_empty() {
        return text.to_string();
    }
    text.replace(&format!("@{username}"), "").trim().to_string()
}
