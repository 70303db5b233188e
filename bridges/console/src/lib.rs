//! `tollgate-console`: the local terminal as a surface for the trusted operator. It reads lines
//! (from a terminal or a pipe — so it can be scripted), renders approval cards as text, and
//! reads answers. It translates and renders only: it decides nothing.

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{Mutex, mpsc};
use tollgate_surface::ApprovalCard;

/// Lines typed at the console, in order, shared by the chat loop and the approval prompts.
pub struct Lines {
    receiver: Mutex<mpsc::Receiver<String>>,
}

impl Lines {
    /// Starts reading standard input.
    #[must_use]
    pub fn stdin() -> Self {
        let (tx, rx) = mpsc::channel(64);
        tokio::spawn(async move {
            let mut lines = BufReader::new(tokio::io::stdin()).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if tx.send(line).await.is_err() {
                    return;
                }
            }
        });
        Lines {
            receiver: Mutex::new(rx),
        }
    }

    /// The next line; `None` once input has ended.
    pub async fn next(&self) -> Option<String> {
        self.receiver.lock().await.recv().await
    }
}

/// How the operator answered a card.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsoleAnswer {
    Approve,
    Deny,
    AlwaysTool,
    AlwaysCommand,
}

/// Reads an answer: `a`/`approve`/`y`, `d`/`deny`/`n`, `t` (always this tool), `c` (always this
/// command). Anything else is not an answer.
#[must_use]
pub fn parse_answer(line: &str) -> Option<ConsoleAnswer> {
    match line.trim().to_ascii_lowercase().as_str() {
        "a" | "approve" | "y" | "yes" => Some(ConsoleAnswer::Approve),
        "d" | "deny" | "n" | "no" => Some(ConsoleAnswer::Deny),
        "t" | "tool" | "always tool" => Some(ConsoleAnswer::AlwaysTool),
        "c" | "command" | "always command" => Some(ConsoleAnswer::AlwaysCommand),
        _ => None,
    }
}

/// A card as console text; the buttons become the keys to type.
#[must_use]
pub fn render_card(card: &ApprovalCard) -> String {
    let mut out = format!(
        "── approval needed ── agent {} · {} · {}\nreason: {}\n",
        card.agent, card.tool, card.tier, card.reason
    );
    if !card.details.is_empty() {
        out.push_str(&card.details);
        if !card.details.ends_with('\n') {
            out.push('\n');
        }
    }
    // One line per row: a picker's options read as a numbered list.
    let rows: Vec<String> = card
        .rows
        .iter()
        .map(|row| {
            row.iter()
                .map(|b| format!("[{}] {}", b.token, b.label))
                .collect::<Vec<_>>()
                .join("  ")
        })
        .collect();
    out.push_str(&rows.join("\n"));
    out.push_str("\n? ");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_surface::Button;

    #[test]
    fn answers_and_cards() {
        assert_eq!(parse_answer(" A "), Some(ConsoleAnswer::Approve));
        assert_eq!(parse_answer("no"), Some(ConsoleAnswer::Deny));
        assert_eq!(parse_answer("c"), Some(ConsoleAnswer::AlwaysCommand));
        assert_eq!(parse_answer("maybe"), None);
        let card = ApprovalCard {
            agent: "ops".into(),
            requester: "console:me".into(),
            tool: "execute_command".into(),
            tier: "unknown".into(),
            reason: "nobody classified it".into(),
            details: "git status".into(),
            rows: vec![vec![
                Button {
                    label: "approve".into(),
                    token: "a".into(),
                },
                Button {
                    label: "deny".into(),
                    token: "d".into(),
                },
            ]],
        };
        let text = render_card(&card);
        assert!(
            text.contains("execute_command")
                && text.contains("git status")
                && text.contains("[a] approve")
        );
    }
}
