//! Cards as Telegram HTML with an inline keyboard: approvals, questions and "all N" rows, and
//! how each ended. An approval's details are cut to 2,000 characters; the whole text then goes
//! out as a document beside the card, because nobody should approve what they cannot read.

use crate::render::escape;
use teloxide::types::{InlineKeyboardButton, InlineKeyboardMarkup};
use tollgate_surface::limits::{TELEGRAM_CALLBACK_DATA, TELEGRAM_CARD_DETAILS};
use tollgate_surface::{ApprovalCard, BridgeError, Button, CardOutcome, CardView};

/// A card ready to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderedCard {
    pub html: String,
    /// The details in full, when the card shows them cut.
    pub full_details: Option<String>,
}

/// The card's text: who asks, for what, why, and what would happen.
#[must_use]
pub fn render_card(card: &ApprovalCard) -> RenderedCard {
    let cut: String = card.details.chars().take(TELEGRAM_CARD_DETAILS).collect();
    let was_cut = cut.len() < card.details.len();
    let mut html = format!(
        "🔐 <b>Approval needed</b> · agent <b>{}</b>\nRequested by {}\nTool <code>{}</code> · tier {}\nWhy: {}\n<pre>{}</pre>",
        escape(&card.agent),
        escape(&card.requester),
        escape(&card.tool),
        escape(&card.tier),
        escape(&card.reason),
        escape(&cut),
    );
    if was_cut {
        html.push_str(&format!(
            "\n(details cut at {TELEGRAM_CARD_DETAILS} characters: the whole text is in the file this card replies to)"
        ));
    }
    RenderedCard {
        html,
        full_details: was_cut.then(|| card.details.clone()),
    }
}

/// Any card's text.
#[must_use]
pub fn render_view(view: &CardView) -> RenderedCard {
    match view {
        CardView::Approval(card) => render_card(card),
        CardView::Question {
            agent, question, ..
        } => RenderedCard {
            html: format!(
                "❓ <b>{}</b> asks: {}\n(answer with a button, or reply with text)",
                escape(agent),
                escape(question)
            ),
            full_details: None,
        },
        CardView::Bulk { tools, .. } => {
            let listed: Vec<String> = tools
                .iter()
                .map(|t| format!("• <code>{}</code>", escape(t)))
                .collect();
            RenderedCard {
                html: format!(
                    "{} approvals are waiting here (admins only):\n{}",
                    tools.len(),
                    listed.join("\n")
                ),
                full_details: None,
            }
        }
    }
}

/// A card's text once it is settled: the outcome, and who decided, in place of the buttons.
#[must_use]
pub fn settled_html(view: &CardView, outcome: &CardOutcome) -> String {
    match outcome {
        // A replaced row shows only that it no longer answers anything.
        CardOutcome::Replaced => {
            "(the waiting approvals changed: this row is no longer valid)".to_string()
        }
        CardOutcome::AllAnswered {
            approved,
            answered,
            of,
            by,
        } => format!(
            "{} {answered} of {of} by {}",
            if *approved { "Approved" } else { "Denied" },
            escape(by)
        ),
        _ => resolved_html(&render_view(view).html, outcome),
    }
}

/// The card's text once it is settled: the outcome, and who decided, in place of the buttons.
#[must_use]
pub fn resolved_html(card_html: &str, outcome: &CardOutcome) -> String {
    let line = match outcome {
        CardOutcome::Approved { by } => format!("✅ Approved by {}", escape(by)),
        CardOutcome::Denied { by } => format!("⛔ Denied by {}", escape(by)),
        CardOutcome::TimedOut => {
            "⌛ Nobody answered in time: denied by the runtime (timeout)".to_string()
        }
        CardOutcome::Redecided { decision } => {
            format!("↪ Decided again without an answer: {}", escape(decision))
        }
        CardOutcome::Expired => "⌛ Expired: the run this card belonged to is gone".to_string(),
        CardOutcome::Answered { answer } => {
            return format!("{card_html}\n\n<b>Answered:</b> {}", escape(answer));
        }
        CardOutcome::Replaced => "no longer valid".to_string(),
        CardOutcome::AllAnswered { answered, of, .. } => format!("answered {answered} of {of}"),
    };
    format!("{card_html}\n\n<b>{line}</b>")
}

/// Buttons as an inline keyboard. A token longer than Telegram's `callback_data` limit is a
/// bug in the caller, refused here rather than discovered as a 400.
pub fn keyboard(rows: &[Vec<Button>]) -> Result<InlineKeyboardMarkup, BridgeError> {
    let mut keyboard = Vec::new();
    for row in rows {
        let mut buttons = Vec::new();
        for button in row {
            if button.token.len() > TELEGRAM_CALLBACK_DATA {
                return Err(BridgeError::rejected(format!(
                    "button data `{}` is {} bytes; Telegram allows {TELEGRAM_CALLBACK_DATA}",
                    button.token,
                    button.token.len()
                )));
            }
            buttons.push(InlineKeyboardButton::callback(
                button.label.clone(),
                button.token.clone(),
            ));
        }
        keyboard.push(buttons);
    }
    Ok(InlineKeyboardMarkup::new(keyboard))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(details: &str) -> ApprovalCard {
        ApprovalCard {
            agent: "ops".into(),
            requester: "Ann <a&b>".into(),
            tool: "execute_command".into(),
            tier: "write".into(),
            reason: "mode default asks for write".into(),
            details: details.into(),
            rows: Vec::new(),
        }
    }

    #[test]
    fn details_are_escaped_and_cut_with_the_whole_text_kept() {
        let short = render_card(&card("rm <x> && echo"));
        assert!(short.html.contains("rm &lt;x&gt; &amp;&amp; echo"));
        assert!(short.html.contains("Ann &lt;a&amp;b&gt;"));
        assert_eq!(short.full_details, None);
        let long = "é".repeat(TELEGRAM_CARD_DETAILS + 1);
        let cut = render_card(&card(&long));
        assert_eq!(cut.full_details.as_deref(), Some(long.as_str()));
        assert!(cut.html.contains("whole text is in the file"));
        assert!(!cut.html.contains(&long));
    }

    #[test]
    fn oversized_button_data_is_refused() {
        let rows = vec![vec![Button {
            label: "Approve".into(),
            token: "x".repeat(65),
        }]];
        assert!(keyboard(&rows).is_err());
        let rows = vec![vec![Button {
            label: "Approve".into(),
            token: "x".repeat(64),
        }]];
        assert!(keyboard(&rows).is_ok());
    }
}
