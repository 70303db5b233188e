//! What the bot posts, as Discord messages: answers split under 2,000 characters, cards with
//! their button rows, and how a card ended. Nothing the model or a chat wrote can ping anyone:
//! every message goes with `allowed_mentions` empty.

use serde_json::{Value, json};
use tollgate_surface::limits::{DISCORD_BUTTONS_PER_ROW, DISCORD_CUSTOM_ID, DISCORD_MESSAGE};
use tollgate_surface::split::split_markdown;
use tollgate_surface::{ApprovalCard, BridgeError, Button, CardOutcome, CardView};

/// Action rows a message may carry.
const MAX_ROWS: usize = 5;
/// Characters of a button's label.
const LABEL_CHARS: usize = 80;
/// Options of a string select.
const SELECT_OPTIONS: usize = 25;

/// Nobody is pinged by what the bot posts (`@everyone` in a model's answer stays text).
#[must_use]
pub fn no_pings() -> Value {
    json!({ "parse": [] })
}

/// An answer as Discord messages, each under the limit, fences balanced, with Discord's own
/// syntax escaped where it would misread the model's Markdown (`markdown.rs`).
#[must_use]
pub fn answer_messages(markdown: &str) -> Vec<String> {
    split_markdown(
        &crate::markdown::for_discord(markdown),
        DISCORD_MESSAGE,
        |line, _| line.chars().count(),
    )
}

/// `text` with Discord's Markdown characters escaped, for names and reasons shown in prose.
#[must_use]
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(
            c,
            '\\' | '*' | '_' | '~' | '|' | '`' | '>' | '<' | '#' | '[' | ']' | '-' | '@'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `text` inside a code block: a fence inside it would end the block early, so the backticks
/// of a fence are kept apart by zero-width spaces (U+200B) — every visible character stays.
fn code_block(text: &str) -> String {
    format!("```\n{}\n```", text.replace("```", "`\u{200b}`\u{200b}`"))
}

/// A card ready to send: its text, and the whole details when the text shows them cut.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderedCard {
    pub content: String,
    pub full_details: Option<String>,
}

fn approval(card: &ApprovalCard) -> RenderedCard {
    let head = format!(
        "🔐 **Approval needed** · agent **{}**\nRequested by {}\nTool: {} · tier {}\nWhy: {}\n",
        escape(&card.agent),
        escape(&card.requester),
        escape(&card.tool),
        escape(&card.tier),
        escape(&card.reason),
    );
    let whole = format!("{head}{}", code_block(&card.details));
    // Room for the outcome line a settled card adds.
    let limit = DISCORD_MESSAGE - 200;
    if whole.chars().count() <= limit {
        return RenderedCard {
            content: whole,
            full_details: None,
        };
    }
    let note = "\n(details cut to fit: the whole text is in the attached file)";
    let room = limit
        .saturating_sub(head.chars().count() + note.chars().count() + 16)
        .max(1);
    let head: String = head.chars().take(limit / 2).collect();
    let cut: String = card.details.chars().take(room).collect();
    let mut content = format!("{head}{}{note}", code_block(&cut));
    if content.chars().count() > limit {
        content = content.chars().take(limit).collect();
    }
    RenderedCard {
        content,
        full_details: Some(card.details.clone()),
    }
}

/// Any card's text.
#[must_use]
pub fn card(view: &CardView) -> RenderedCard {
    match view {
        CardView::Approval(card) => approval(card),
        CardView::Question {
            agent, question, ..
        } => RenderedCard {
            content: cut(&format!(
                "❓ **{}** asks: {}\n(answer with a button, or reply with text)",
                escape(agent),
                escape(question)
            )),
            full_details: None,
        },
        CardView::Bulk { tools, .. } => {
            let listed: Vec<String> = tools.iter().map(|t| format!("• {}", escape(t))).collect();
            RenderedCard {
                content: cut(&format!(
                    "{} approvals are waiting here (admins only):\n{}",
                    tools.len(),
                    listed.join("\n")
                )),
                full_details: None,
            }
        }
    }
}

fn cut(text: &str) -> String {
    text.chars().take(DISCORD_MESSAGE - 200).collect()
}

/// A card's text once settled: the outcome and who decided, in place of the buttons.
#[must_use]
pub fn settled(view: &CardView, outcome: &CardOutcome) -> String {
    let line = match outcome {
        CardOutcome::Replaced => {
            return "(the waiting approvals changed: this row is no longer valid)".into();
        }
        CardOutcome::AllAnswered {
            approved,
            answered,
            of,
            by,
        } => {
            let verb = if *approved { "Approved" } else { "Denied" };
            return format!("{verb} {answered} of {of} by {}", escape(by));
        }
        CardOutcome::Approved { by } => format!("✅ Approved by {}", escape(by)),
        CardOutcome::Denied { by } => format!("⛔ Denied by {}", escape(by)),
        CardOutcome::TimedOut => {
            "⌛ Nobody answered in time: denied by the runtime (timeout)".into()
        }
        CardOutcome::Redecided { decision } => {
            format!("↪ Decided again without an answer: {}", escape(decision))
        }
        CardOutcome::Expired => "⌛ Expired: the run this card belonged to is gone".into(),
        CardOutcome::Answered { answer } => format!("Answered: {}", escape(answer)),
    };
    let line: String = line.chars().take(180).collect();
    format!("{}\n\n**{line}**", card(view).content)
}

fn style(label: &str) -> u8 {
    // Discord's button styles: 1 primary, 2 secondary, 3 success, 4 danger. Labels may start
    // with an emoji.
    let words = label.trim_start_matches(|c: char| !c.is_alphanumeric());
    if words.starts_with("Approve") {
        3
    } else if words.starts_with("Deny") {
        4
    } else {
        2
    }
}

fn checked(token: &str) -> Result<(), BridgeError> {
    if token.chars().count() > DISCORD_CUSTOM_ID {
        return Err(BridgeError::rejected(format!(
            "button data `{token}` is longer than Discord's {DISCORD_CUSTOM_ID} characters"
        )));
    }
    Ok(())
}

fn label(text: &str) -> String {
    let mut label: String = text.chars().take(LABEL_CHARS).collect();
    if label.chars().count() < text.chars().count() {
        label = label.chars().take(LABEL_CHARS - 1).collect();
        label.push('…');
    }
    label
}

/// The card's buttons as action rows: up to five buttons a row, at most five rows. Past that,
/// an approval card (a picker of more than four options) offers every row but the last in one
/// select menu and keeps its last row (Cancel) as buttons; any other card (a question's
/// choices) keeps its first four rows as buttons and offers the rest in a select.
pub fn components(rows: &[Vec<Button>], keep_last_row: bool) -> Result<Value, BridgeError> {
    let mut buttons_rows: Vec<Vec<&Button>> = Vec::new();
    for row in rows {
        for chunk in row.chunks(DISCORD_BUTTONS_PER_ROW) {
            buttons_rows.push(chunk.iter().collect());
        }
    }
    let (rest, shown, select_first) = if buttons_rows.len() <= MAX_ROWS {
        (&[][..], &buttons_rows[..], false)
    } else if keep_last_row {
        let (rest, last) = buttons_rows.split_at(buttons_rows.len() - 1);
        (rest, last, true)
    } else {
        let (first, rest) = buttons_rows.split_at(MAX_ROWS - 1);
        (rest, first, false)
    };
    let mut out = Vec::new();
    let select = select_of(rest)?;
    if select_first && let Some(select) = &select {
        out.push(select.clone());
    }
    for row in shown {
        let mut buttons = Vec::new();
        for button in row {
            checked(&button.token)?;
            buttons.push(json!({
                "type": 2,
                "style": style(&button.label),
                "label": label(&button.label),
                "custom_id": button.token,
            }));
        }
        out.push(json!({ "type": 1, "components": buttons }));
    }
    if !select_first && let Some(select) = select {
        out.push(select);
    }
    Ok(Value::Array(out))
}

/// The rows that do not fit in buttons, as one action row holding a select menu.
fn select_of(rest: &[Vec<&Button>]) -> Result<Option<Value>, BridgeError> {
    let more: Vec<&&Button> = rest.iter().flatten().collect();
    if more.is_empty() {
        return Ok(None);
    }
    if more.len() > SELECT_OPTIONS {
        return Err(BridgeError::rejected(format!(
            "a card with {} choices past its buttons; a select menu holds {SELECT_OPTIONS}",
            more.len()
        )));
    }
    let mut options = Vec::new();
    for button in more {
        checked(&button.token)?;
        options.push(json!({ "label": label(&button.label), "value": button.token }));
    }
    let select = json!({
        "type": 3,
        "custom_id": "select",
        "placeholder": "Choose",
        "options": options,
    });
    Ok(Some(json!({ "type": 1, "components": [select] })))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn approval_card(details: &str) -> CardView {
        CardView::Approval(ApprovalCard {
            agent: "ops".into(),
            requester: "Ann (discord:1)".into(),
            tool: "execute_command".into(),
            tier: "high-risk".into(),
            reason: "the mode asks".into(),
            details: details.into(),
            rows: vec![],
        })
    }

    #[test]
    fn a_card_stays_under_the_limit_and_says_when_details_are_attached() {
        let short = card(&approval_card("rm old.log"));
        assert!(short.full_details.is_none());
        assert!(short.content.contains("```\nrm old.log\n```"));
        let long_details = "x".repeat(5000);
        let long = card(&approval_card(&long_details));
        assert_eq!(long.full_details.as_deref(), Some(long_details.as_str()));
        assert!(long.content.chars().count() <= DISCORD_MESSAGE - 200);
        assert!(long.content.contains("attached file"));
        let settled = settled(
            &approval_card(&long_details),
            &CardOutcome::Approved { by: "Bo".into() },
        );
        assert!(
            settled.chars().count() <= DISCORD_MESSAGE,
            "{}",
            settled.len()
        );
        // A fence in the details cannot end the block early.
        let fenced = card(&approval_card("a\n```\n@everyone **b**"));
        assert_eq!(
            fenced.content.matches("```").count(),
            2,
            "{}",
            fenced.content
        );
        assert!(escape("@everyone <@1> **x**").starts_with("\\@everyone \\<\\@1\\> \\*\\*x"));
    }

    fn button(i: usize) -> Button {
        Button {
            label: format!("choice {i}"),
            token: format!("t{i}"),
        }
    }

    #[test]
    fn a_picker_of_four_is_buttons_and_more_a_select_beside_cancel() {
        let picker = |n: usize| -> Vec<Vec<Button>> {
            let mut rows: Vec<Vec<Button>> = (0..n)
                .map(|i| vec![button(2 * i), button(2 * i + 1)])
                .collect();
            rows.push(vec![button(99)]);
            rows
        };
        let four = components(&picker(4), true).unwrap();
        assert_eq!(four.as_array().unwrap().len(), 5);
        assert_eq!(four.to_string().matches("\"type\":2").count(), 9);
        let six = components(&picker(6), true).unwrap();
        let six = six.as_array().unwrap();
        assert_eq!(six.len(), 2);
        assert_eq!(six[0]["components"][0]["type"], 3);
        assert_eq!(
            six[0]["components"][0]["options"].as_array().unwrap().len(),
            12
        );
        assert_eq!(
            six[1]["components"][0]["custom_id"], "t99",
            "Cancel stays a button"
        );
        // One long row is cut into rows of five.
        let long: Vec<Button> = (0..12).map(button).collect();
        let rows = components(&[long], false).unwrap();
        assert_eq!(rows.as_array().unwrap().len(), 3);
        assert_eq!(rows[0]["components"].as_array().unwrap().len(), 5);
        let too_many: Vec<Vec<Button>> = (0..30).map(|i| vec![button(i)]).collect();
        assert!(components(&too_many, true).is_err());
        // A question of six choices keeps its first four as buttons, the rest in a select.
        let question: Vec<Vec<Button>> = (0..6).map(|i| vec![button(i)]).collect();
        let question = components(&question, false).unwrap();
        let question = question.as_array().unwrap();
        assert_eq!(question.len(), 5);
        assert_eq!(question[0]["components"][0]["custom_id"], "t0");
        assert_eq!(
            question[4]["components"][0]["options"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        let long = Button {
            label: "x".into(),
            token: "t".repeat(101),
        };
        assert!(components(&[vec![long]], false).is_err());
    }

    #[test]
    fn answers_split_under_the_limit() {
        let answer = "word ".repeat(2000);
        let parts = answer_messages(&answer);
        assert!(parts.len() >= 5);
        assert!(parts.iter().all(|p| p.chars().count() <= DISCORD_MESSAGE));
    }
}
