//! What a button press does. The token only locates a record; the presser is checked here on
//! every press, by the rules of the platform the press came from (an admin of that bridge for
//! approvals — never a bot, never someone of another platform — the requester for questions).
//! The first valid press wins; every press gets an answer, so no button keeps spinning; every
//! refused press is audited under the session it touched.

use super::bulk::row_view;
use super::cards::{answer_of, refresh_rows};
use super::shared::{Shared, WaitingQuestion, lock};
use crate::approvals::{
    ApprovalChoice, ApprovalToken, BulkApproval, BulkChoice, ButtonData, PendingApproval,
    PendingState, PressOutcome, Taken,
};
use crate::events::EventKind;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tollgate_surface::{CardOutcome, CardRef, Platform, Press};

/// How long a press that arrived before its card's record says where the card went waits for
/// it (the card's `sendMessage` answered, the record not yet written: milliseconds, longer
/// under load).
const POSTING_WAIT: Duration = Duration::from_secs(5);

fn outcome_of(record: &PendingApproval) -> Option<CardOutcome> {
    let picked = |i: &u8, by: &str, bound: &str| {
        let option = record
            .options
            .get(usize::from(*i))
            .map_or("?", String::as_str);
        CardOutcome::Approved {
            by: format!("{by}, who picked {option}{bound}"),
        }
    };
    match &record.state {
        PendingState::Answered { choice, by } => Some(match choice {
            ApprovalChoice::Deny => CardOutcome::Denied { by: by.clone() },
            ApprovalChoice::Pick(i) => picked(i, by, ""),
            ApprovalChoice::Bind(i) => picked(i, by, " (now bound for the agent)"),
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

/// The platform a record's cards live on.
fn platform_of(record: &PendingApproval) -> Option<Platform> {
    record
        .chat
        .as_ref()
        .map(|c| c.platform)
        .or_else(|| record.posted_to.first().map(|p| p.chat.platform))
}

/// One press being handled: who pressed, and how to answer and audit it.
struct Pressed<'a> {
    shared: &'a Arc<Shared>,
    press: &'a Press,
    /// `telegram:42`: the presser as audit entries name them.
    presser: String,
    /// The presser as cards show who answered.
    by: String,
}

impl Pressed<'_> {
    async fn answer(&self, text: &str, private: bool) {
        self.shared
            .reply(self.press.chat.platform, &self.press.handle, text, private)
            .await;
    }

    /// Whether the presser is an admin of the bridge the press came from, for a card of
    /// `platform` (ids of one platform mean nothing on another).
    fn is_admin_for(&self, platform: Option<Platform>) -> bool {
        let chat = &self.press.chat;
        platform == Some(chat.platform)
            && self.shared.bridge(chat.platform).is_some_and(|h| {
                h.settings
                    .is_admin(&self.press.presser, &self.press.roles, chat)
            })
    }

    /// Whether the presser may grant what holds for the whole agent (see
    /// [`super::settings::BridgeSettings::is_agent_admin`]).
    fn is_agent_admin(&self) -> bool {
        self.shared
            .bridge(self.press.chat.platform)
            .is_some_and(|h| h.settings.is_agent_admin(&self.press.presser))
    }

    /// The session of the chat the press came from (for a press that locates no record).
    fn chat_session(&self) -> String {
        self.shared
            .bridge(self.press.chat.platform)
            .map_or_else(String::new, |h| {
                h.settings
                    .session_key(&self.press.chat, self.press.presser.id)
            })
    }

    /// Whether the press came from one of `posted` — the button is on that card. Data from
    /// elsewhere (another message, a press without its message) answers nothing.
    fn on(&self, posted: &[CardRef]) -> bool {
        self.press.message.as_ref().is_some_and(|m| {
            posted.iter().any(|p| {
                p.message_id == m.message_id
                    && p.chat.platform == m.chat.platform
                    && p.chat.id == m.chat.id
            })
        })
    }

    /// Refuses a press by someone who is not an admin of the card's platform.
    async fn not_an_admin(&self, session: &str, about: Value) {
        self.refuse(
            session,
            "not one of the bridge's admins",
            about,
            "Only admins can answer this.",
        )
        .await;
    }

    /// Audits a refused press under `session`, and tells the presser why.
    async fn refuse(&self, session: &str, reason: &str, fields: Value, answer: &str) {
        let mut entry = json!({"presser": self.presser, "reason": reason});
        if let (Some(entry), Value::Object(more)) = (entry.as_object_mut(), fields) {
            entry.extend(more);
        }
        self.shared
            .audit_refusal(EventKind::PressRejected, session, entry);
        self.answer(answer, true).await;
    }
}

/// Handles one press.
pub async fn handle_press(shared: &Arc<Shared>, press: Press) {
    let platform = press.chat.platform.as_str();
    let presser = format!("{platform}:{}", press.presser.id);
    let pressed = Pressed {
        shared,
        by: super::requester::requester_line(press.chat.platform, &press.presser),
        presser,
        press: &press,
    };
    match ButtonData::parse(&press.token) {
        Some(ButtonData::Question { key, index }) => answer_question(&pressed, &key, index).await,
        Some(ButtonData::Bulk { token, choice }) => answer_all(&pressed, &token, choice).await,
        Some(ButtonData::Card { token, choice }) => answer_card(&pressed, &token, choice).await,
        None => {
            let session = pressed.chat_session();
            pressed
                .refuse(
                    &session,
                    "the button's data is not one of ours",
                    json!({}),
                    "This button is no longer valid.",
                )
                .await;
        }
    }
}

/// `current` once `unposted` no longer holds of it — the card, row or question it is knows
/// where it was posted, or was settled — read again by `read` at each notice that a posting
/// was recorded, waiting at most [`POSTING_WAIT`]; as it stands then otherwise (and as last
/// read if `read` fails).
async fn once_posted<T>(
    shared: &Shared,
    mut current: T,
    read: impl Fn() -> Option<T>,
    unposted: impl Fn(&T) -> bool,
) -> T {
    if !unposted(&current) {
        return current;
    }
    let deadline = tokio::time::Instant::now() + POSTING_WAIT;
    loop {
        // Listening before the record is read again: a post recorded in between is not missed.
        let posted = shared.cards_posted.notified();
        tokio::pin!(posted);
        posted.as_mut().enable();
        match read() {
            Some(now) => current = now,
            None => return current,
        }
        if !unposted(&current) || tokio::time::timeout_at(deadline, posted).await.is_err() {
            return current;
        }
    }
}

/// One approval card's button.
async fn answer_card(pressed: &Pressed<'_>, token: &ApprovalToken, choice: ApprovalChoice) {
    let shared = pressed.shared;
    let record = shared.approvals.get(token).ok().flatten();
    let session = record
        .as_ref()
        .map_or_else(|| pressed.chat_session(), |r| r.session.clone());
    let about = record
        .as_ref()
        .map_or_else(|| json!({}), |r| json!({"call": r.call_id, "tool": r.tool}));
    // A record on another platform is refused; a press locating none has nothing to protect.
    let platform = record
        .as_ref()
        .map_or(Some(pressed.press.chat.platform), platform_of);
    if !pressed.is_admin_for(platform) {
        return pressed.not_an_admin(&session, about).await;
    }
    let Some(record) = record else {
        return pressed
            .refuse(
                &session,
                "no such card",
                about,
                "This button is no longer valid.",
            )
            .await;
    };
    // A press read while the card's own `sendMessage` was being answered: the record does
    // not say where the card went yet. Refused, it was lost (the admin saw "Answer on the card
    // itself." on the card itself).
    let record = once_posted(
        shared,
        record,
        || shared.approvals.get(token).ok().flatten(),
        |r| r.state == PendingState::Waiting && r.posted_to.is_empty(),
    )
    .await;
    if !pressed.on(&record.posted_to) {
        return pressed
            .refuse(
                &session,
                "pressed somewhere other than the card",
                about,
                "Answer on the card itself.",
            )
            .await;
    }
    if record.state == PendingState::Waiting && !run_waits(shared, &record) {
        let expired = PendingState::Withdrawn {
            outcome: "expired".into(),
        };
        let settled = matches!(shared.approvals.settle(token, expired), Ok(true));
        pressed
            .answer("This approval expired: its run is gone.", true)
            .await;
        if settled {
            shared.show_outcome(&record, &CardOutcome::Expired).await;
            refresh_rows(shared, &record.posted_to);
        }
        return;
    }
    // Only where the choice would count (a card still waiting that offered it): an answered,
    // expired or unoffered choice gets the answer any admin gets.
    if matches!(
        choice,
        ApprovalChoice::AlwaysCommand | ApprovalChoice::Bind(_)
    ) && record.state == PendingState::Waiting
        && record.choices.contains(&choice)
        && !pressed.is_agent_admin()
    {
        return pressed
            .refuse(
                &session,
                "a grant for the whole agent by an admin by role",
                about,
                "Only admins listed by id can save this for the whole agent (it would hold in every server and chat it serves); approve once instead.",
            )
            .await;
    }
    let now = crate::clock::now_secs();
    match shared
        .approvals
        .press(&pressed.press.token, &pressed.by, true, now)
    {
        Ok(PressOutcome::Answered(answered)) => {
            let outcome = outcome_of(&answered);
            let text = match &outcome {
                Some(CardOutcome::Denied { .. }) => "Denied.",
                _ => "Approved.",
            };
            if let Some(answer) = answer_of(&answered) {
                shared.deliver(&answered.token, answer);
            }
            // Answered first: the edits below may wait out a platform's rate limit.
            pressed.answer(text, false).await;
            if let Some(outcome) = outcome {
                shared.show_outcome(&answered, &outcome).await;
            }
            refresh_rows(shared, &answered.posted_to);
        }
        Ok(PressOutcome::NotAnAdmin) => pressed.not_an_admin(&session, about).await,
        Ok(PressOutcome::AlreadyAnswered { by }) => {
            pressed
                .refuse(
                    &session,
                    "already answered",
                    about,
                    &format!("Already answered by {by}."),
                )
                .await;
        }
        Ok(PressOutcome::Expired) => {
            pressed
                .refuse(&session, "expired", about, "This approval has expired.")
                .await;
            if let Ok(Some(now)) = shared.approvals.get(token)
                && now.state == PendingState::TimedOut
            {
                shared.deliver(&now.token, crate::executor::approval::Answer::TimedOut);
                shared.show_outcome(&now, &CardOutcome::TimedOut).await;
                refresh_rows(shared, &now.posted_to);
            }
        }
        Ok(PressOutcome::Unknown) => {
            pressed
                .refuse(
                    &session,
                    "no such card or choice",
                    about,
                    "This button is no longer valid.",
                )
                .await;
        }
        Err(e) => {
            shared.log(&format!("recording a press: {e}"));
            pressed
                .answer("The answer could not be saved; try again.", true)
                .await;
        }
    }
}

/// "Approve all N / Deny all N": each of exactly the N cards the row named, as if pressed.
async fn answer_all(pressed: &Pressed<'_>, token: &ApprovalToken, choice: BulkChoice) {
    let shared = pressed.shared;
    let mut known = shared.bulks.get(token).ok().flatten();
    // Audited under the session of the row's (first) card: the row is that session's.
    let session = known
        .as_ref()
        .and_then(|b| b.cards.first())
        .and_then(|t| ApprovalToken::parse(t))
        .and_then(|t| shared.approvals.get(&t).ok().flatten())
        .map_or_else(|| pressed.chat_session(), |r| r.session);
    let about = json!({"bulk": true, "cards": known.as_ref().map_or(0, |b| b.cards.len())});
    let unposted = |b: &Option<BulkApproval>| {
        b.as_ref()
            .is_some_and(|b| b.posted_to.is_none() && !b.used && !b.replaced)
    };
    // A row not known to be posted yet is answered by the admins of the platform pressed on,
    // and only once its record says it is there (below).
    let platform = match known.as_ref().map(|b| &b.posted_to) {
        Some(Some(at)) => Some(at.chat.platform),
        Some(None) if !unposted(&known) => None,
        _ => Some(pressed.press.chat.platform),
    };
    if !pressed.is_admin_for(platform) {
        return pressed.not_an_admin(&session, about).await;
    }
    // A press read while the row's own `sendMessage` was being answered.
    known = once_posted(shared, known, || shared.bulks.get(token).ok(), unposted).await;
    let posted: Vec<CardRef> = known
        .as_ref()
        .and_then(|b| b.posted_to.clone())
        .into_iter()
        .collect();
    if known.is_some() && !pressed.on(&posted) {
        return pressed
            .refuse(
                &session,
                "pressed somewhere other than the row",
                about,
                "Answer on the row itself.",
            )
            .await;
    }
    let bulk = match shared.bulks.take(token) {
        Ok(Taken::Row(bulk)) => bulk,
        Ok(Taken::Used) => {
            return pressed
                .refuse(
                    &session,
                    "row already used",
                    about,
                    "This row was already used.",
                )
                .await;
        }
        Ok(Taken::Replaced) => {
            return pressed
                .refuse(
                    &session,
                    "row replaced",
                    about,
                    "This row was replaced: the cards waiting here changed. Use the newest row.",
                )
                .await;
        }
        Ok(Taken::Unknown) => {
            return pressed
                .refuse(
                    &session,
                    "no such row",
                    about,
                    "This button is no longer valid.",
                )
                .await;
        }
        Err(e) => {
            shared.log(&format!("recording a press: {e}"));
            return pressed
                .answer("The answer could not be saved; try again.", true)
                .await;
        }
    };
    let single = choice.single();
    let now = crate::clock::now_secs();
    let mut answered = Vec::new();
    for card in &bulk.cards {
        let Some(card_token) = ApprovalToken::parse(card) else {
            continue;
        };
        if let Ok(PressOutcome::Answered(record)) = shared.approvals.press(
            &card_token.button(&single.to_data()),
            &pressed.by,
            true,
            now,
        ) {
            if let Some(answer) = answer_of(&record) {
                shared.deliver(&record.token, answer);
            }
            answered.push(*record);
        }
    }
    let approved = single == ApprovalChoice::Approve;
    let verb = if approved { "Approved" } else { "Denied" };
    pressed
        .answer(&format!("{verb} {}.", answered.len()), false)
        .await;
    // The edits may wait out rate limits: on their own task, not holding a press slot.
    let outcome = CardOutcome::AllAnswered {
        approved,
        answered: answered.len(),
        of: bulk.cards.len(),
        by: pressed.by.clone(),
    };
    let shared = shared.clone();
    tokio::spawn(async move {
        shared
            .settle_view(&row_view(&bulk, false), &posted, &outcome)
            .await;
        for record in &answered {
            if let Some(outcome) = outcome_of(record) {
                shared.show_outcome(record, &outcome).await;
            }
            // The same cards may be shown with rows elsewhere (each admin's DM).
            refresh_rows(&shared, &record.posted_to);
        }
        // This row's keeper sees it used and posts a new one if cards still wait here.
        refresh_rows(&shared, &posted);
    });
}

/// A question card's button: only the requester answers it, on the card.
async fn answer_question(pressed: &Pressed<'_>, key: &str, index: usize) {
    let shared = pressed.shared;
    let press = pressed.press;
    enum Found {
        Open(Box<WaitingQuestion>),
        NotTheRequester(String),
        Gone,
    }
    // A press read while the question's own card was being posted: the requester's waits
    // for the question to be open; anyone else's is refused as it would be after.
    let posting = lock(&shared.questions_posting).get(key).cloned();
    let found = if let Some((requester, session)) = &posting
        && *requester != press.presser.id
    {
        Found::NotTheRequester(session.clone())
    } else {
        if posting.is_some() {
            once_posted(
                shared,
                (),
                || Some(()),
                |()| lock(&shared.questions_posting).contains_key(key),
            )
            .await;
        }
        let mut questions = lock(&shared.questions);
        match questions.get(key) {
            Some(q)
                if q.requester != press.presser.id
                    || q.card.chat.platform != press.chat.platform
                    || !pressed.on(std::slice::from_ref(&q.card)) =>
            {
                Found::NotTheRequester(q.session.clone())
            }
            Some(_) => questions
                .remove(key)
                .map_or(Found::Gone, |q| Found::Open(Box::new(q))),
            None => Found::Gone,
        }
    };
    match found {
        Found::Open(question) => {
            let choice = question.choices.get(index).cloned().unwrap_or_default();
            pressed.answer("Answered.", false).await;
            finish_question(shared, *question, &choice).await;
        }
        Found::NotTheRequester(session) => {
            pressed
                .refuse(
                    &session,
                    "not the requester",
                    json!({"question": true}),
                    "Only the person who asked the agent can answer this.",
                )
                .await;
        }
        Found::Gone => {
            let session = pressed.chat_session();
            pressed
                .refuse(
                    &session,
                    "question no longer open",
                    json!({"question": true}),
                    "This question is no longer open.",
                )
                .await;
        }
    }
}

/// Sends a question's answer and shows it on the card.
pub async fn finish_question(shared: &Shared, question: WaitingQuestion, answer: &str) {
    let outcome = CardOutcome::Answered {
        answer: answer.to_string(),
    };
    shared
        .settle_view(
            &question.view,
            std::slice::from_ref(&question.card),
            &outcome,
        )
        .await;
    let _ = question.answer.send(answer.to_string());
}
