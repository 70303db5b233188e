//! Withdrawing a waiting card when the gate decides its call again: the card is settled as
//! withdrawn, unless a press (or the deadline) settled it first — then that answer stands, so
//! a card that says "Denied" never has its call run.

use super::answer_of;
use crate::approvals::{ApprovalToken, PendingApproval, PendingApprovals, PendingState};
use crate::executor::approval::Answer;

/// What a withdrawal found.
#[derive(Debug)]
pub(super) enum Withdrawal {
    /// This withdrawal settled the card (its edit shows the outcome).
    Settled(Box<PendingApproval>),
    /// The card was settled first, or could not be read: this is the call's answer. `token`
    /// is the card's, when one was found.
    CameFirst {
        token: Option<String>,
        answer: Answer,
    },
    /// No card of this very call: none was made yet, another withdrawal settled it, or the
    /// record under this id is another call's (a provider may repeat ids).
    NoCard,
}

/// Withdraws the card of call `call_id` of `session`'s run `run`, whose fingerprint is
/// `asked`, with `outcome` shown on it. A store that fails is an answer that runs nothing.
pub(super) fn withdraw(
    approvals: &PendingApprovals,
    session: &str,
    run: &str,
    call_id: &str,
    asked: &str,
    outcome: &str,
) -> Withdrawal {
    let unreadable = |token: Option<String>, e: String| Withdrawal::CameFirst {
        token,
        answer: Answer::Unanswerable {
            reason: format!("the approval record could not be read ({e}); nothing ran"),
        },
    };
    let record = match approvals.for_call(session, run, call_id) {
        Ok(Some(record)) if record.asked == asked => record,
        Ok(_) => return Withdrawal::NoCard,
        Err(e) => return unreadable(None, e.to_string()),
    };
    let Some(token) = ApprovalToken::parse(&record.token) else {
        return unreadable(None, "its token is damaged".into());
    };
    let withdrawn = PendingState::Withdrawn {
        outcome: outcome.to_string(),
    };
    match approvals.settle(&token, withdrawn) {
        Ok(true) => Withdrawal::Settled(Box::new(record)),
        Ok(false) => match approvals.get(&token) {
            Ok(Some(now)) => match answer_of(&now) {
                Some(answer) => Withdrawal::CameFirst {
                    token: Some(record.token),
                    answer,
                },
                None => Withdrawal::NoCard,
            },
            Ok(None) => unreadable(Some(record.token), "it is gone".into()),
            Err(e) => unreadable(Some(record.token), e.to_string()),
        },
        Err(e) => unreadable(Some(record.token), e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approvals::{ApprovalChoice, PressOutcome};
    use crate::store::MemoryStore;
    use std::sync::Arc;

    /// A waiting card of call `c1` of run `r1`, asked as `asked`.
    fn waiting(approvals: &PendingApprovals, asked: &str) -> ApprovalToken {
        let token = ApprovalToken::generate().unwrap();
        approvals
            .create(&PendingApproval {
                token: token.to_string(),
                session: "telegram:1".into(),
                call_id: "c1".into(),
                agent: "a".into(),
                tool: "write_file".into(),
                posted: 1_000,
                expires: 1_600,
                choices: vec![ApprovalChoice::Approve, ApprovalChoice::Deny],
                state: PendingState::Waiting,
                run: "r1".into(),
                chat: None,
                card: None,
                posted_to: Vec::new(),
                options: Vec::new(),
                asked: asked.into(),
            })
            .unwrap();
        token
    }

    fn withdrawn(approvals: &PendingApprovals, asked: &str) -> Withdrawal {
        withdraw(approvals, "telegram:1", "r1", "c1", asked, "allowed")
    }

    #[test]
    fn a_waiting_card_is_settled_by_the_withdrawal() {
        let approvals = PendingApprovals::new(Arc::new(MemoryStore::new()));
        let token = waiting(&approvals, "f1");
        assert!(matches!(
            withdrawn(&approvals, "f1"),
            Withdrawal::Settled(_)
        ));
        let now = approvals.get(&token).unwrap().unwrap();
        assert!(
            matches!(now.state, PendingState::Withdrawn { .. }),
            "{now:?}"
        );
        // A press after it finds the card withdrawn.
        assert_eq!(
            approvals
                .press(&token.button("deny"), "telegram:9", true, 1_100)
                .unwrap(),
            PressOutcome::Expired
        );
    }

    #[test]
    fn a_deny_press_that_settled_the_card_first_is_the_answer() {
        let approvals = PendingApprovals::new(Arc::new(MemoryStore::new()));
        let token = waiting(&approvals, "f1");
        approvals
            .press(&token.button("deny"), "telegram:9", true, 1_100)
            .unwrap();
        match withdrawn(&approvals, "f1") {
            Withdrawal::CameFirst {
                token: found,
                answer,
            } => {
                assert_eq!(found.as_deref(), Some(token.as_str()));
                assert_eq!(
                    answer,
                    Answer::Deny {
                        by: "telegram:9".into()
                    }
                );
            }
            other => panic!("{other:?}"),
        }
    }

    /// The record under the call's id is another call's (a repeated id): it is not this
    /// call's card, and its answer is not this call's.
    #[test]
    fn another_calls_card_under_the_same_id_is_not_withdrawn() {
        let approvals = PendingApprovals::new(Arc::new(MemoryStore::new()));
        let token = waiting(&approvals, "earlier call");
        approvals
            .press(&token.button("approve"), "telegram:9", true, 1_100)
            .unwrap();
        assert!(matches!(withdrawn(&approvals, "f1"), Withdrawal::NoCard));
        assert!(matches!(withdrawn(&approvals, ""), Withdrawal::NoCard));
    }
}
