//! Command strings a program runs as scripts — `bash -c '…'`, `eval …`, `watch …`, `trap '…'`,
//! `env -S '…'`, `flock -c '…'`, `script -c '…'` — lexed once, on the command's budget and
//! nesting limit, and kept on their segment, so the denylist, the pre-check and the network scan
//! all judge the same tree and no shape can make them lex it again and again.

use super::ast::{InlineScript, Script, Word, WordPart};
use super::command::command_view;
use super::lexer::{Budget, LexError, lex_with};

/// Lexes the command strings of every segment in `script` (at tree depth `depth`) and of every
/// script nested in it. Fails only when the command is past the work or nesting limit.
pub fn expand(script: &mut Script, budget: &Budget, depth: usize) -> Result<(), LexError> {
    for segment in &mut script.segments {
        let texts = command_view(&segment.words).inline_scripts;
        for text in texts {
            let lexed = lex_with(&text, budget, depth + 1);
            if let Some(error) = lexed.too_complex() {
                return Err(error.clone());
            }
            let lexes = lexed.error.is_none();
            let mut inner = lexed.script;
            expand(&mut inner, budget, depth + 1)?;
            segment.inline.push(InlineScript {
                script: inner,
                lexes,
            });
        }
        let words = segment
            .words
            .iter_mut()
            .chain(segment.assignments.iter_mut().map(|a| &mut a.value))
            .chain(
                segment
                    .redirects
                    .iter_mut()
                    .flat_map(|r| std::iter::once(&mut r.target).chain(r.heredoc.iter_mut())),
            )
            .chain(segment.evaluated.iter_mut());
        for word in words {
            expand_word(word, budget, depth)?;
        }
    }
    for function in &mut script.functions {
        expand(&mut function.body, budget, depth + 1)?;
    }
    Ok(())
}

fn expand_word(word: &mut Word, budget: &Budget, depth: usize) -> Result<(), LexError> {
    for part in &mut word.parts {
        if let WordPart::CommandSub { script, .. } | WordPart::ProcessSub { script } = part {
            expand(script, budget, depth + 1)?;
        }
    }
    Ok(())
}
