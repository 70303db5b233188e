//! Cards as Telegram HTML with an inline keyboard: approvals, questions and "all N" rows, and
//! how each ended. An approval's details (and a question) are cut to 2,000 characters; the
//! whole text then goes out as a document beside the card, because nobody should approve what
//! they cannot read. Every text a model, a user or a tool chose is cut, so that a card and its
//! settled text stay within Telegram's 4,096, counted as Telegram counts them: in UTF-16 code
//! units (an emoji is two), or the card would be refused and its question never asked.

use crate::render::{cut_utf16, escape};
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

/// UTF-16 code units a card's short fields (agent, requester, tool, tier) keep.
const SHORT_FIELD: usize = 100;
/// UTF-16 code units a card's reason keeps.
const REASON: usize = 500;
/// UTF-16 code units of a question's answer shown on its settled card.
const ANSWER: usize = 1000;
/// Tools an "all N" row's card lists by name (each up to [`SHORT_FIELD`]); the rest counted.
const BULK_LISTED: usize = 25;

/// `text` within `units`, escaped, with an ellipsis where it was cut.
fn short(text: &str, units: usize) -> String {
    match cut_utf16(text, units) {
        (kept, true) => format!("{}…", escape(kept)),
        (kept, false) => escape(kept),
    }
}

/// The card's text: who asks, for what, why, and what would happen.
#[must_use]
pub fn render_card(card: &ApprovalCard) -> RenderedCard {
    let (cut, was_cut) = cut_utf16(&card.details, TELEGRAM_CARD_DETAILS);
    let mut html = format!(
        "🔐 <b>Approval needed</b> · agent <b>{}</b>\nRequested by {}\nTool <code>{}</code> · tier {}\nWhy: {}\n<pre>{}</pre>",
        short(&card.agent, SHORT_FIELD),
        short(&card.requester, SHORT_FIELD),
        short(&card.tool, SHORT_FIELD),
        short(&card.tier, SHORT_FIELD),
        short(&card.reason, REASON),
        escape(cut),
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
        } => {
            let (cut, was_cut) = cut_utf16(question, TELEGRAM_CARD_DETAILS);
            let mut html = format!(
                "❓ <b>{}</b> asks: {}\n(answer with a button, or reply with text)",
                short(agent, SHORT_FIELD),
                escape(cut)
            );
            if was_cut {
                html.push_str(&format!(
                    "\n(question cut at {TELEGRAM_CARD_DETAILS} characters: the whole text is in the file this card replies to)"
                ));
            }
            RenderedCard {
                html,
                full_details: was_cut.then(|| question.clone()),
            }
        }
        CardView::Bulk { tools, .. } => {
            let mut listed: Vec<String> = tools
                .iter()
                .take(BULK_LISTED)
                .map(|t| format!("• <code>{}</code>", short(t, SHORT_FIELD)))
                .collect();
            if tools.len() > BULK_LISTED {
                listed.push(format!(
                    "…and {} more (each on its own card above)",
                    tools.len() - BULK_LISTED
                ));
            }
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
            short(by, SHORT_FIELD)
        ),
        _ => resolved_html(&render_view(view).html, outcome),
    }
}

/// The card's text once it is settled: the outcome, and who decided, in place of the buttons.
#[must_use]
pub fn resolved_html(card_html: &str, outcome: &CardOutcome) -> String {
    let line = match outcome {
        CardOutcome::Approved { by } => format!("✅ Approved by {}", short(by, SHORT_FIELD)),
        CardOutcome::Denied { by } => format!("⛔ Denied by {}", short(by, SHORT_FIELD)),
        CardOutcome::TimedOut => {
            "⌛ Nobody answered in time: denied by the runtime (timeout)".to_string()
        }
        CardOutcome::Redecided { decision } => {
            format!(
                "↪ Decided again without an answer: {}",
                short(decision, REASON)
            )
        }
        CardOutcome::Expired => "⌛ Expired: the run this card belonged to is gone".to_string(),
        CardOutcome::Answered { answer } => {
            return format!("{card_html}\n\n<b>Answered:</b> {}", short(answer, ANSWER));
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

    /// What Telegram counts against its 4,096: the text once the HTML is parsed, in UTF-16
    /// code units.
    fn visible_utf16(html: &str) -> usize {
        let mut text = String::new();
        let mut in_tag = false;
        for c in html.chars() {
            match c {
                '<' => in_tag = true,
                '>' => in_tag = false,
                c if !in_tag => text.push(c),
                _ => {}
            }
        }
        text.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
            .encode_utf16()
            .count()
    }

    #[test]
    fn cards_of_wide_characters_stay_within_telegrams_limit() {
        let emoji = "😀".repeat(5000);
        let mut wide = card(&emoji);
        wide.reason = emoji.clone();
        wide.tool = emoji.clone();
        wide.requester = emoji.clone();
        let rendered = render_card(&wide);
        assert_eq!(rendered.full_details.as_deref(), Some(emoji.as_str()));
        let settled = resolved_html(&rendered.html, &CardOutcome::Approved { by: emoji.clone() });
        assert!(
            visible_utf16(&settled) <= 4096,
            "{}",
            visible_utf16(&settled)
        );
        // Two units each: the cut counts units, not characters.
        let shown = rendered.html.split("<pre>").nth(1).unwrap();
        let shown = shown.split("</pre>").next().unwrap();
        assert_eq!(shown.chars().count(), TELEGRAM_CARD_DETAILS / 2);

        let question = CardView::Question {
            agent: "ops".into(),
            question: emoji.clone(),
            rows: Vec::new(),
        };
        let asked = render_view(&question);
        assert_eq!(asked.full_details.as_deref(), Some(emoji.as_str()));
        assert!(asked.html.contains("whole text is in the file"));
        let answered = resolved_html(
            &asked.html,
            &CardOutcome::Answered {
                answer: emoji.clone(),
            },
        );
        let bulk = render_view(&CardView::Bulk {
            tools: vec![emoji.clone(); 200],
            rows: Vec::new(),
        });
        assert!(bulk.html.contains("…and 175 more"), "{}", bulk.html);
        assert!(
            visible_utf16(&bulk.html) <= 4096,
            "{}",
            visible_utf16(&bulk.html)
        );
        assert!(
            visible_utf16(&answered) <= 4096,
            "{}",
            visible_utf16(&answered)
        );
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
