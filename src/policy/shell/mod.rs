//! Shell commands, judged before they run: the lexer, the command view through wrappers, the
//! denylist, the deterministic high-risk pre-check and the approval key.

pub mod approval_key;
pub mod ast;
pub mod command;
pub mod denylist;
pub mod lexer;
pub mod precheck;

use approval_key::ApprovalKey;
use ast::Script;
use command::{command_name, command_view, is_network_client};
use denylist::DenyMatch;
use lexer::{Lexed, lex, lex_nested};

/// Everything the gate needs to know about one shell command, computed once when it is proposed.
#[derive(Clone, Debug)]
pub struct ShellAnalysis {
    /// The command as the model wrote it.
    pub command: String,
    pub lexed: Lexed,
    /// The denylist's verdict.
    pub denied: Option<DenyMatch>,
    /// Why the pre-check marks it high-risk.
    pub high_risk: Option<String>,
    /// Whether a network client (or `/dev/tcp`) appears in any word.
    pub network: bool,
    /// What "Always: this command" would save.
    pub approval_key: Option<ApprovalKey>,
}

impl ShellAnalysis {
    /// Lexes and judges `command`; `prefix_binaries` decides which commands get prefix keys.
    #[must_use]
    pub fn new(command: &str, prefix_binaries: &[String]) -> Self {
        let lexed = lex(command);
        let denied = denylist::check(&lexed);
        let high_risk = precheck::high_risk_reason(&lexed);
        let network = uses_network(&lexed.script, 0);
        let approval_key = ApprovalKey::of(&lexed, high_risk.is_none(), prefix_binaries);
        ShellAnalysis {
            command: command.to_string(),
            lexed,
            denied,
            high_risk,
            network,
            approval_key,
        }
    }
}

/// A network client in any word position, at any depth, or a `/dev/tcp` path.
fn uses_network(script: &Script, depth: usize) -> bool {
    let mut found = false;
    script.walk(&mut |s| {
        for segment in &s.segments {
            found |= segment.all_words().any(|w| {
                command_name(w).is_some_and(is_network_client)
                    || w.text().contains("/dev/tcp/")
                    || w.text().contains("/dev/udp/")
            });
            for inline in command_view(&segment.words).inline_scripts {
                let nested = lex_nested(&inline, depth).unwrap_or_else(|_| lex(&inline).script);
                found |= uses_network(&nested, depth + 1);
            }
        }
    });
    found
}
