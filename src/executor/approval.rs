//! Who answers a prompt: an [`Approver`] (a bridge's admins, the console operator) or nobody
//! (an unattended run, a reminder, a subagent), in which case the call is refused with a reason
//! that names the fix.

use crate::policy::resolve::GateDecision;
use crate::tools::Proposal;
use std::future::Future;
use std::pin::Pin;

/// A prompt to answer.
#[derive(Clone, Debug)]
pub struct ApprovalRequest {
    pub call_id: String,
    /// What was asked ([`asked_of`]): a stored answer is reused only for the very question it
    /// answered.
    pub asked: String,
    pub session: String,
    pub agent: String,
    pub proposal: Proposal,
    pub decision: GateDecision,
}

/// An answer to a prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    Approve {
        by: String,
    },
    Deny {
        by: String,
    },
    /// Approve, and approve this tool for the rest of the session.
    AlwaysTool {
        by: String,
    },
    /// Approve, and save the command's approval key for the agent.
    AlwaysCommand {
        by: String,
    },
    /// A picker's option was chosen (`option` is its id); `bind` also binds it for the agent.
    Picked {
        by: String,
        option: String,
        bind: bool,
    },
    /// Nobody answered in time.
    TimedOut,
    /// Nobody can answer here; the reason names what would fix it.
    Unanswerable {
        reason: String,
    },
}

pub type AnswerFuture<'a> = Pin<Box<dyn Future<Output = Answer> + Send + 'a>>;

/// What [`Approver::withdraw`] returns: the answer that came first, if one did.
pub type WithdrawFuture<'a> = Pin<Box<dyn Future<Output = Option<Answer>> + Send + 'a>>;

pub use crate::tools::hosts::{QuestionAsker, QuestionFuture};

/// Answers prompts (and, as a [`QuestionAsker`], `ask_user_question`).
pub trait Approver: QuestionAsker {
    /// Shows the prompt and waits for its answer.
    fn ask(&self, request: ApprovalRequest) -> AnswerFuture<'_>;
    /// The prompt of call `call_id` (fingerprint `asked`) was settled without an answer
    /// (decided again after another answer, `/mode` or `/sandbox`): take the card down,
    /// showing the outcome. Resolves to the answer that settled it first, if a press (or the
    /// deadline) beat the withdrawal: that answer stands.
    fn withdraw(&self, call_id: &str, asked: &str, outcome: &str) -> WithdrawFuture<'_>;
}

/// Nobody answers: every prompt is refused at once with the fix.
pub struct NobodyApproves;

impl QuestionAsker for NobodyApproves {}

impl Approver for NobodyApproves {
    fn ask(&self, request: ApprovalRequest) -> AnswerFuture<'_> {
        // A picker: nobody here can pick, and nothing is picked for them.
        if let Some(options) = request.proposal.options.as_ref().filter(|o| !o.is_empty()) {
            let role = request
                .proposal
                .execute_args
                .get("role")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("this kind of media");
            let reason = format!(
                "`{}` needs someone to pick a model ({}), and nobody can pick in this run; bind a model for {role} in [agents.{}.companions] (one of: {})",
                request.proposal.tool,
                request.decision.reason,
                request.agent,
                options.join(", ")
            );
            return Box::pin(async move { Answer::Unanswerable { reason } });
        }
        let fix = match &request.decision.approval_key {
            Some(key) => format!(
                "allowlist `{key}` for agent {} (`tollgate allowlist add --agent {} --command …`)",
                request.agent, request.agent
            ),
            None => format!(
                "set `{} = \"allow\"` under [agents.{}.tool_approval], or run it where an admin can approve",
                request.proposal.tool, request.agent
            ),
        };
        let reason = format!(
            "`{}` needs approval ({}), and nobody can approve in this run; to let it run unattended, {fix}",
            request.proposal.tool, request.decision.reason
        );
        Box::pin(async move { Answer::Unanswerable { reason } })
    }

    fn withdraw(&self, _call_id: &str, _asked: &str, _outcome: &str) -> WithdrawFuture<'_> {
        Box::pin(std::future::ready(None))
    }
}

/// What a card asks, as a digest: the call as the model sent it
/// ([fingerprint](crate::executor::ToolCallRequest::fingerprint)), and what would run if it
/// were approved — the effects (paths as resolved), the arguments that run (for a file tool,
/// with the fingerprint of the file its diff was made from), the options, and the key an
/// "Always" would save. A call proposed again after a restart whose file or link changed
/// meanwhile asks something else: its old card's answer must not run it. Text made for people
/// (the message, a diff cut short by its time limit, a classifier's reason) stays out: it can
/// differ from one start to the next for the same call, and would re-ask every card.
#[must_use]
pub fn asked_of(
    call: &crate::executor::ToolCallRequest,
    proposal: &Proposal,
    decision: &GateDecision,
) -> String {
    use sha2::Digest;
    let shown = serde_json::json!({
        "effects": format!("{:?}", proposal.effects),
        "execute_tool": proposal.execute_tool,
        "execute_args": proposal.execute_args,
        "options": proposal.options,
        "approval_key": decision.approval_key.as_ref().map(ToString::to_string),
        "always": decision.always,
    });
    let mut digest = sha2::Sha256::new();
    digest.update(call.fingerprint().as_bytes());
    digest.update([0]);
    digest.update(shown.to_string().as_bytes());
    digest
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}
