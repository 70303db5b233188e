//! The one place an approval card is built, for every surface (the chats and the console): who
//! asks, for what, why, what would happen, and the buttons the decision offers. A surface only
//! renders it.

use super::pending::{ApprovalChoice, MAX_OPTIONS};
use crate::executor::approval::ApprovalRequest;
use crate::policy::redact::Redactor;
use crate::policy::resolve::AlwaysOffer;
use tollgate_surface::{ApprovalCard, Button};

/// Characters of a command shown on an "Always" button (the card shows it whole).
pub const BUTTON_LABEL_CHARS: usize = 60;

/// `text` cut to `chars` characters, with `…` where it was cut.
#[must_use]
pub fn cut(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        return text.to_string();
    }
    let mut short: String = text.chars().take(chars.saturating_sub(1)).collect();
    short.push('…');
    short
}

/// The card for `request`, asked for by `requester`, and the choices its buttons offer;
/// `token` gives each choice's button data. Secrets are taken out here, before anything is
/// cut to fit: a label cut in the middle of a token would keep a piece the leak guard no
/// longer recognizes.
pub fn build_card(
    request: &ApprovalRequest,
    requester: &str,
    redactor: &Redactor,
    token: impl Fn(ApprovalChoice) -> String,
) -> (ApprovalCard, Vec<ApprovalChoice>) {
    let button = |label: String, choice: ApprovalChoice| Button {
        label,
        token: token(choice),
    };
    // A picker: nothing to approve until someone picked — one row per option (and its
    // binding), then Cancel.
    if let Some(options) = request.proposal.options.as_ref().filter(|o| !o.is_empty()) {
        let mut choices = vec![ApprovalChoice::Deny];
        let mut rows = Vec::new();
        for (i, option) in options.iter().take(MAX_OPTIONS).enumerate() {
            let i = u8::try_from(i).unwrap_or(u8::MAX);
            choices.extend([ApprovalChoice::Pick(i), ApprovalChoice::Bind(i)]);
            rows.push(vec![
                button(
                    cut(&redactor.redact(option), BUTTON_LABEL_CHARS),
                    ApprovalChoice::Pick(i),
                ),
                button(
                    cut(
                        &redactor.redact(&format!("Bind {option} for this agent")),
                        BUTTON_LABEL_CHARS,
                    ),
                    ApprovalChoice::Bind(i),
                ),
            ]);
        }
        rows.push(vec![button("✖ Cancel".into(), ApprovalChoice::Deny)]);
        let card = card_of(request, requester, redactor, details_of(request), rows);
        return (card, choices);
    }
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
                cut(&redactor.redact(&label), BUTTON_LABEL_CHARS),
                ApprovalChoice::AlwaysCommand,
            )]);
        }
        AlwaysOffer::None => {}
    }
    let mut details = details_of(request);
    if let AlwaysOffer::Command(key) = &request.decision.always {
        details.push_str(&format!(
            "\n\n\"Always\" would allow {} for agent {} from now on.",
            key.describe(),
            request.agent
        ));
    }
    (
        card_of(request, requester, redactor, details, rows),
        choices,
    )
}

/// What the call would do: its message, then its preview (the command, the diff).
fn details_of(request: &ApprovalRequest) -> String {
    let mut details = request.proposal.message.clone();
    if let Some(preview) = &request.proposal.preview {
        details.push('\n');
        details.push_str(preview);
    }
    details
}

/// The card, every text a person reads redacted.
fn card_of(
    request: &ApprovalRequest,
    requester: &str,
    redactor: &Redactor,
    details: String,
    rows: Vec<Vec<Button>>,
) -> ApprovalCard {
    ApprovalCard {
        agent: request.agent.clone(),
        requester: requester.to_string(),
        tool: request.proposal.tool.clone(),
        tier: request.decision.tier.to_string(),
        reason: redactor.redact(&request.decision.reason),
        details: redactor.redact(&details),
        rows,
    }
}
