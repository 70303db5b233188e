//! A message's way in, on its session's inbox task: access by the platform's rules (strangers
//! ignored silently and audited), mention gating, the per-user rate limit, commands, answers
//! to open questions, attachments, then the session's queue. A command a platform delivers
//! apart from messages (a Discord slash command) takes the same way and is answered through its
//! handle.

use super::attachments::receive;
use super::commands::{parse_command, run_command};
use super::presses::finish_question;
use super::rate::RateVerdict;
use super::sessions::Service;
use super::shared::lock;
use super::worker::{Queued, SessionWorker};
use crate::events::EventKind;
use crate::router::{Access, should_answer};
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;
use tollgate_surface::{ChatRef, CommandInvocation, Inbound, PressHandle};

/// Fresh workers a message is offered to after the one it found was let go meanwhile (one
/// that waited for an attachment's download, say); a fresh worker is not idle before its start
/// is over, so this is a safety net.
const ENQUEUE_ATTEMPTS: usize = 3;

/// What an inbox holds.
#[derive(Debug)]
pub enum Incoming {
    Message(Inbound),
    Command(CommandInvocation),
}

impl Incoming {
    /// The chat and the sender, which pick the session.
    #[must_use]
    pub fn origin(&self) -> (&ChatRef, i64) {
        match self {
            Incoming::Message(m) => (&m.chat, m.sender.id),
            Incoming::Command(c) => (&c.chat, c.sender.id),
        }
    }
}

/// Where replies to one incoming item go: the chat, or the command's own handle.
struct ReplyTo<'a> {
    chat: &'a ChatRef,
    command: Option<&'a PressHandle>,
}

impl ReplyTo<'_> {
    async fn say(&self, service: &Service, text: &str) {
        let shared = &service.shared;
        match self.command {
            Some(handle) => shared.reply(self.chat.platform, handle, text, false).await,
            None => shared.notice(self.chat, text).await,
        }
    }
}

/// Lets one message (or command) of session `key` in.
pub async fn handle_incoming(service: &Arc<Service>, key: &str, incoming: Incoming) {
    match incoming {
        Incoming::Message(message) => handle_message(service, key, &message, None).await,
        Incoming::Command(command) => {
            // Seen as the message `/name args`, so every rule applies the same way.
            let message = Inbound {
                chat: command.chat.clone(),
                sender: command.sender.clone(),
                roles: command.roles.clone(),
                message_id: 0,
                text: format!("/{} {}", command.name, command.args),
                mentioned: true,
                reply_to_bot: false,
                starts_thread: false,
                in_bot_thread: false,
                files: Vec::new(),
            };
            handle_message(service, key, &message, Some(&command.handle)).await;
        }
    }
}

async fn handle_message(
    service: &Arc<Service>,
    key: &str,
    inbound: &Inbound,
    command: Option<&PressHandle>,
) {
    let shared = &service.shared;
    let Some(handle) = shared.bridge(inbound.chat.platform) else {
        return;
    };
    let settings = &handle.settings;
    // A message that starts a thread is answered in its channel until the thread is open.
    let channel = inbound.starts_thread.then(|| ChatRef {
        thread: None,
        parent: None,
        ..inbound.chat.clone()
    });
    let reply = ReplyTo {
        chat: channel.as_ref().unwrap_or(&inbound.chat),
        command,
    };
    let platform = inbound.chat.platform.as_str();
    let counted = |outcome: &'static str| {
        crate::metrics::METRICS
            .messages
            .get_or_create(&crate::metrics::labels([
                ("platform", platform),
                ("agent", &settings.agent),
                ("outcome", outcome),
            ]))
            .inc();
    };
    let admin = match settings.access(inbound) {
        Access::Admitted { admin } => admin,
        Access::Ignored(reason) => {
            counted("denied");
            // Silently: a reply would confirm the bot exists. Bots are not audited (noise).
            if !inbound.sender.is_bot {
                shared.audit_refusal(
                    EventKind::AccessDenied,
                    key,
                    json!({"user": format!("{platform}:{}", inbound.sender.id), "chat": inbound.chat.id, "reason": reason}),
                );
            }
            // A platform's command (unlike a message) waits for an answer: it gets a bare one.
            if let Some(handle) = command {
                shared
                    .reply(inbound.chat.platform, handle, "Not available here.", true)
                    .await;
            }
            return;
        }
    };
    if command.is_none() && !should_answer(settings.require_mention, inbound) {
        counted("unaddressed");
        return;
    }
    let verdict = lock(&handle.rate).check(inbound.sender.id, Instant::now());
    if verdict != RateVerdict::Accept {
        counted("rate_limited");
    }
    match verdict {
        RateVerdict::Accept => {}
        RateVerdict::RefuseWithNotice => {
            let text = format!(
                "You are sending messages faster than {} a minute; I will ignore new ones for a moment.",
                settings.rate_limit_per_minute
            );
            return reply.say(service, &text).await;
        }
        RateVerdict::RefuseSilently => {
            if let Some(handle) = command {
                shared
                    .reply(inbound.chat.platform, handle, "Slow down.", true)
                    .await;
            }
            return;
        }
    }
    if inbound.starts_thread
        && let Err(e) = handle.bridge.open_thread(inbound).await
    {
        shared.log(&format!("opening the thread of session {key}: {e}"));
        let text = "⚠ I could not open a thread for this conversation here (the bot may lack the permission to create threads).";
        return reply.say(service, text).await;
    }
    let reply = ReplyTo {
        chat: &inbound.chat,
        command,
    };
    let text = inbound.text.trim();
    let is_command = parse_command(text).is_some();
    // An open question of this session, from its requester, is answered by text — but a
    // command stays a command (`/stop` while a question waits stops the run).
    let open_question = if is_command {
        None
    } else {
        let mut questions = lock(&shared.questions);
        let found = questions
            .iter()
            .find(|(_, q)| q.session == key && q.requester == inbound.sender.id)
            .map(|(k, _)| k.clone());
        found.and_then(|k| questions.remove(&k))
    };
    if let Some(question) = open_question {
        counted("answered_question");
        finish_question(shared, question, text).await;
        if let Some(handle) = command {
            shared
                .reply(inbound.chat.platform, handle, "Answered.", true)
                .await;
        }
        return;
    }
    let Some(worker) = session_or_notice(service, key, &reply).await else {
        return;
    };
    if let Some((name, args)) = parse_command(text) {
        counted("command");
        let answer = match name {
            "whoami" => super::commands::whoami(inbound),
            _ => {
                use super::commands::Admin;
                let admin = match (admin, settings.is_agent_admin(&inbound.sender)) {
                    (false, _) => Admin::No,
                    (true, false) => Admin::OfThisChat,
                    (true, true) => Admin::OfTheAgent,
                };
                run_command(service, &worker, name, args, admin)
            }
        };
        return reply.say(service, &answer).await;
    }
    if command.is_some() {
        return reply
            .say(service, &format!("`{text}` is not one of my commands."))
            .await;
    }
    if !inbound.files.is_empty()
        && let Some(Queued::Full { announce }) = worker.full_now()
    {
        counted("dropped_queue_full");
        return dropped_for_full_queue(service, &reply, settings.queue_cap, announce).await;
    }
    // The workspace path is resolved (and created) only for a message that brings files.
    let (mut lines, refused) = if inbound.files.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        let workspace = service.workspace(&worker.agent, key);
        let received = receive(handle, &workspace, &inbound.files).await;
        let mut lines = received.for_agent;
        lines.extend(transcripts(service, &worker, key, &workspace, &received.saved).await);
        (lines, received.refused)
    };
    if !refused.is_empty() {
        reply.say(service, &refused.join("\n")).await;
    }
    if text.is_empty() && lines.is_empty() {
        counted("empty");
        return;
    }
    lines.insert(0, text.to_string());
    let requester = (
        inbound.sender.id,
        super::requester::requester_line(inbound.chat.platform, &inbound.sender),
    );
    let text = lines.join("\n");
    let mut worker = worker;
    let mut queued = worker.enqueue(text.clone(), requester.clone());
    for _ in 0..ENQUEUE_ATTEMPTS {
        if queued != Queued::Evicted {
            break;
        }
        // Let go as idle between the lookup and now: a fresh worker takes it.
        service.forget(key, &worker);
        let Some(fresh) = session_or_notice(service, key, &reply).await else {
            return;
        };
        worker = fresh;
        queued = worker.enqueue(text.clone(), requester.clone());
    }
    if queued == Queued::Evicted {
        counted("dropped_worker_let_go");
        service.shared.log(&format!(
            "session {key}: {} workers were let go before a message could be queued; the message was dropped",
            ENQUEUE_ATTEMPTS + 1
        ));
        return reply
            .say(
                service,
                "⚠ I could not take this message (I am very busy); please send it again.",
            )
            .await;
    }
    match queued {
        Queued::Full { announce } => {
            counted("dropped_queue_full");
            dropped_for_full_queue(service, &reply, settings.queue_cap, announce).await;
        }
        _ => counted("queued"),
    }
}

/// Says a message was dropped for a full queue, the first time in a row.
async fn dropped_for_full_queue(
    service: &Service,
    reply: &ReplyTo<'_>,
    queue_cap: usize,
    announce: bool,
) {
    if announce {
        let text = format!(
            "I am busy and {queue_cap} messages are already waiting; this one was dropped. Try again when I answer."
        );
        reply.say(service, &text).await;
    }
}

/// Audio files of one message transcribed at most.
const TRANSCRIPTIONS_PER_MESSAGE: usize = 1;

/// With `transcribe_voice` on the agent and `analyze:audio` bound, the transcript of the
/// message's first saved audio file, so a spoken request works like a typed one. A transcription that fails says so
/// (the file stays attached).
async fn transcripts(
    service: &Service,
    worker: &SessionWorker,
    key: &str,
    workspace: &std::path::Path,
    saved: &[std::path::PathBuf],
) -> Vec<String> {
    let config = &service.shared.config;
    let Some(agent) = config.agents.get(&worker.agent) else {
        return Vec::new();
    };
    // Bound in the config, or on a picker card.
    let bound = agent.companions.contains_key("analyze:audio")
        || crate::companions::bindings::of(service.shared.store.as_ref(), &worker.agent)
            .is_ok_and(|b| b.contains_key("analyze:audio"));
    let Some(companions) = worker.assembled.runner.executor.companions.clone() else {
        return Vec::new();
    };
    if !agent.transcribe_voice || !bound || saved.is_empty() {
        return Vec::new();
    }
    let cap = companions.max_bytes();
    let mut lines = Vec::new();
    let mut transcribed = 0;
    for relative in saved {
        // Read as saved, through no link and never blocking: the workspace is the agent's, and
        // a command of a run in progress could plant something under the name meanwhile.
        let (root, rel) = (workspace.to_path_buf(), relative.clone());
        let read = tokio::task::spawn_blocking(move || {
            crate::tools::fs::beneath::Beneath::open(&root)
                .and_then(|beneath| beneath.read_regular(&rel, cap.saturating_add(1)))
        })
        .await;
        let Ok(Ok(bytes)) = read else { continue };
        let is_audio = crate::companions::detect(&bytes)
            .is_some_and(|k| k.modality == crate::companions::role::Modality::Audio);
        if !is_audio {
            continue;
        }
        let name = relative.display().to_string();
        if bytes.len() as u64 > cap {
            lines.push(format!(
                "[voice note {name} not transcribed: larger than media_max_mb]"
            ));
            continue;
        }
        // Each transcription is paid for: a message carrying ten audio files (Discord allows
        // ten) must not cost ten. The rest stay attached for the agent.
        if transcribed >= TRANSCRIPTIONS_PER_MESSAGE {
            lines.push(format!(
                "[voice note {name} not transcribed: one voice note a message is transcribed]"
            ));
            continue;
        }
        transcribed += 1;
        let file = crate::tools::hosts::MediaFile {
            name: name.clone(),
            bytes,
        };
        match companions.analyze(key, file, "", None).await {
            Ok(text) => lines.push(text),
            Err(e) => lines.push(format!("[voice note {name} could not be transcribed: {e}]")),
        }
    }
    lines
}

/// The session's worker, or a notice to the chat that it could not start.
async fn session_or_notice(
    service: &Service,
    key: &str,
    reply: &ReplyTo<'_>,
) -> Option<Arc<SessionWorker>> {
    match service.session(key, reply.chat) {
        Ok(worker) => Some(worker),
        // The chat is untrusted: it gets no paths or internal errors, the log gets them.
        Err(e) => {
            service
                .shared
                .log(&format!("session {key} could not start: {e}"));
            reply
                .say(
                    service,
                    "⚠ This chat's agent could not start; the operator's log says why.",
                )
                .await;
            None
        }
    }
}
