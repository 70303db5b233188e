//! What a run reads of the session's transcript before it acts: a reply past the run's step
//! dropped, the run's message added back, calls with results told apart, call ids made
//! distinct, a lost reply's calls dropped. Pure functions over the transcript; the runner
//! decides what to write.

use crate::agent::llm::{ChatMessage, Role, ToolCall};
use crate::agent::runs::RunRecord;
use std::collections::HashSet;

/// The transcript and the run record are separate writes, so a kill can keep a model reply
/// (another session's flush made it durable) without the run step that acts on it.
///
/// Before a run asks the model: drops what lies past the length its record was written with,
/// when that is only model replies (a later user message means later turns: left alone). A
/// record from before the length was kept drops a trailing reply (its run asks the model, so
/// one there was never acted on). Whether it dropped anything.
pub(super) fn trim_to_step(transcript: &mut Vec<ChatMessage>, step: Option<usize>) -> bool {
    let Some(step) = step else {
        let lost = transcript.last().is_some_and(|m| m.role == Role::Assistant);
        if lost {
            transcript.pop();
        }
        return lost;
    };
    let lost = transcript
        .get(step..)
        .is_some_and(|after| !after.is_empty() && after.iter().all(|m| m.role == Role::Assistant));
    if lost {
        transcript.truncate(step);
    }
    lost
}

/// Before a run's first model call: adds the run's message to a transcript that does not hold
/// it yet (the start writes the message into the run's record, and the transcript only with
/// the answer). Whether it added it.
pub(super) fn restore_message(transcript: &mut Vec<ChatMessage>, run: &RunRecord) -> bool {
    match &run.message {
        Some(text) if run.round == 0 && one_short_of_step(transcript, run) => {
            transcript.push(ChatMessage::new(Role::User, text.as_str()));
            true
        }
        _ => false,
    }
}

/// Whether the transcript is one message short of the run's step: as the run's start left
/// it, without the message.
fn one_short_of_step(transcript: &[ChatMessage], run: &RunRecord) -> bool {
    run.transcript_len
        .is_some_and(|step| transcript.len() + 1 == step)
}

/// Whether a run that has not had its first answer finds a transcript that moved on without
/// its message: neither one message short of the run's step (the start's) nor holding the
/// message at the step (written by a stop or failure). That is a run left open by an error
/// whose conversation went on; a reply past its step is then a later turn's, shown to the
/// user, and is not trimmed.
pub(super) fn moved_on_without_message(transcript: &[ChatMessage], run: &RunRecord) -> bool {
    let (0, Some(text), Some(step)) = (run.round, &run.message, run.transcript_len) else {
        return false;
    };
    let holds_it = step
        .checked_sub(1)
        .and_then(|at| transcript.get(at))
        .is_some_and(|m| m.role == Role::User && m.content == *text);
    !one_short_of_step(transcript, run) && !holds_it
}

/// Whether the transcript already holds the result of call `id`, after the latest reply that
/// asked for it (a kill can keep staged results whose run step was lost). Looked for by the
/// reply, not by position: a tool of the run (`summarize_context`) may have shortened the
/// transcript since, and call ids may repeat across turns.
pub(super) fn results_given(transcript: &[ChatMessage], id: &str) -> bool {
    let asked = transcript
        .iter()
        .rposition(|m| m.role == Role::Assistant && m.tool_calls.iter().any(|c| c.id == id));
    asked.is_some_and(|at| {
        transcript[at + 1..]
            .iter()
            .any(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(id))
    })
}

/// Gives every call of a reply an id that no other call of the reply, and no earlier call in
/// the transcript, has: results are paired with calls by id, and so are a run's approval cards
/// and steps. Providers that leave ids out get them numbered per reply (`call_0` every round),
/// and some servers repeat their own.
pub(super) fn distinct_call_ids(calls: &mut [ToolCall], transcript: &[ChatMessage]) {
    let mut taken: HashSet<String> = transcript
        .iter()
        .flat_map(|m| m.tool_calls.iter().map(|c| c.id.clone()))
        .collect();
    for call in calls {
        if call.id.is_empty() || taken.contains(&call.id) {
            let base = if call.id.is_empty() { "call" } else { &call.id };
            let mut n = 2;
            while taken.contains(&format!("{base}_{n}")) {
                n += 1;
            }
            call.id = format!("{base}_{n}");
        }
        taken.insert(call.id.clone());
    }
}

/// Before a new turn: a reply whose tool calls have no results after them belongs to a run
/// that never reached them (its record was lost; a run that did is resumed, and finished,
/// before the session's next message), so it is dropped rather than sent without results,
/// which providers refuse. A finished turn ends in its answer, which stays.
pub(super) fn drop_lost_calls(transcript: &mut Vec<ChatMessage>) -> bool {
    let lost = transcript
        .last()
        .is_some_and(|m| m.role == Role::Assistant && !m.tool_calls.is_empty());
    if lost {
        transcript.pop();
    }
    lost
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asks(id: &str) -> ChatMessage {
        ChatMessage {
            role: Role::Assistant,
            content: String::new(),
            tool_calls: vec![ToolCall {
                id: id.into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            }],
            tool_call_id: None,
        }
    }

    #[test]
    fn a_reply_never_repeats_an_id_of_its_own_or_of_the_transcript() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: "{}".into(),
        };
        let transcript = [
            asks("call_0"),
            ChatMessage::tool_result("call_0", "old"),
            asks("call_0_2"),
        ];
        let mut calls = [
            call("call_0"),
            call("call_0"),
            call(""),
            call(""),
            call("fresh"),
        ];
        distinct_call_ids(&mut calls, &transcript);
        let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["call_0_3", "call_0_4", "call_2", "call_3", "fresh"]);
    }

    #[test]
    fn results_are_found_after_the_reply_that_asked_for_them() {
        let user = |t: &str| ChatMessage::new(Role::User, t);
        // An earlier turn used the same call id: its result does not count for this reply.
        let mut transcript = vec![
            user("one"),
            asks("call_0"),
            ChatMessage::tool_result("call_0", "old"),
            ChatMessage::new(Role::Assistant, "done"),
            user("two"),
            asks("call_0"),
        ];
        assert!(!results_given(&transcript, "call_0"));
        transcript.push(ChatMessage::tool_result("call_0", "new"));
        assert!(results_given(&transcript, "call_0"));
        // A tool of the run folded everything before the last user message into one: the
        // results are still found by their reply, whatever length the record remembers.
        let folded = transcript.split_off(4);
        let mut shortened = vec![user("summary of the conversation so far")];
        shortened.extend(folded);
        assert!(results_given(&shortened, "call_0"));
    }

    /// A run asking the model in `round`, at `step`, with `message` kept in its record.
    fn asking(round: u32, step: usize, message: Option<&str>) -> RunRecord {
        RunRecord {
            requester: None,
            id: "r".into(),
            session: "s".into(),
            agent: "a".into(),
            round,
            phase: crate::agent::runs::RunPhase::AskingModel,
            calls: Vec::new(),
            usage: Default::default(),
            transcript_len: Some(step),
            message: message.map(str::to_string),
        }
    }

    #[test]
    fn a_runs_message_is_restored_only_before_its_first_answer_and_only_if_missing() {
        let user = |t: &str| ChatMessage::new(Role::User, t);
        let run = asking;
        // Written at the start only into the run: added.
        let mut transcript = vec![user("earlier")];
        assert!(restore_message(&mut transcript, &run(0, 2, Some("now"))));
        assert_eq!(transcript.last().unwrap().content, "now");
        // Already there (a stop or failure wrote it; an older record): left alone.
        let mut transcript = vec![user("earlier"), user("now")];
        assert!(!restore_message(&mut transcript, &run(0, 2, Some("now"))));
        assert!(!restore_message(&mut transcript, &run(0, 2, None)));
        assert_eq!(transcript.len(), 2);
        // After the first answer the message is the transcript's: never added again, whatever
        // the lengths say.
        let mut transcript = vec![user("earlier")];
        assert!(!restore_message(&mut transcript, &run(1, 2, Some("now"))));
        assert_eq!(transcript.len(), 1);
    }

    #[test]
    fn a_transcript_that_went_on_without_the_runs_message_is_told_apart() {
        let user = |t: &str| ChatMessage::new(Role::User, t);
        let answer = |t: &str| ChatMessage::new(Role::Assistant, t);
        let run = |round: u32, message: Option<&str>| asking(round, 2, message);
        let started = run(0, Some("now"));
        // As the start left it, and with the message written (a stop, a failure), a reply
        // past it: the run's own.
        assert!(!moved_on_without_message(&[user("earlier")], &started));
        let written = [user("earlier"), user("now"), answer("lost reply")];
        assert!(!moved_on_without_message(&written, &started));
        // Later turns without the message: not the run's to trim.
        let went_on = [user("earlier"), user("next"), answer("shown")];
        assert!(moved_on_without_message(&went_on, &started));
        // Runs past their first answer, and records without a message, as before.
        assert!(!moved_on_without_message(&went_on, &run(1, Some("now"))));
        assert!(!moved_on_without_message(&went_on, &run(0, None)));
    }

    #[test]
    fn only_model_replies_past_the_step_are_dropped() {
        let user = |t: &str| ChatMessage::new(Role::User, t);
        let mut lost = vec![user("hi"), ChatMessage::new(Role::Assistant, "lost")];
        assert!(trim_to_step(&mut lost, Some(1)));
        assert_eq!(lost.len(), 1);
        // Later turns' messages past the step: left alone.
        let mut later = vec![
            user("hi"),
            ChatMessage::new(Role::Assistant, "a"),
            user("more"),
        ];
        assert!(!trim_to_step(&mut later, Some(1)));
        assert_eq!(later.len(), 3);
        // A record from before the length was kept: a trailing reply goes.
        let mut old = vec![user("hi"), asks("c")];
        assert!(trim_to_step(&mut old, None));
        assert_eq!(old.len(), 1);
        let mut fine = vec![user("hi")];
        assert!(!trim_to_step(&mut fine, None));
    }
}
