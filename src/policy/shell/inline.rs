//! Command strings a program runs as scripts — `bash -c '…'`, `eval …`, `watch …`, `trap '…'`,
//! `env -S '…'`, `flock -c '…'`, `script -c '…'` — lexed once, on the command's budget and
//! nesting limit, and kept on their segment, so the denylist, the pre-check and the network scan
//! all judge the same tree and no shape can make them lex it again and again.

use super::ast::{InlineScript, RedirectOp, Script, Word, WordPart};
use super::command::{MAX_NESTED, MAX_WRAPPERS, command_view, is_shell, reads_code_from_stdin};
use super::lexer::{Budget, LexError, lex_with};

/// Lexes the command strings of every segment in `script` (at tree depth `depth`) and of every
/// script nested in it. Fails only when the command is past the work or nesting limit.
pub fn expand(script: &mut Script, budget: &Budget, depth: usize) -> Result<(), LexError> {
    for segment in &mut script.segments {
        let view = command_view(&segment.words);
        if view.too_deep {
            return Err(LexError::too_complex(
                format!(
                    "more than {MAX_WRAPPERS} wrappers or {MAX_NESTED} commands nested in commands"
                ),
                0,
            ));
        }
        let mut texts = view.inline_scripts;
        // `bash <<'EOF' … EOF`, `sh <<< '…'`: the shell's input is its script.
        if let Some(name) = view.name
            && is_shell(name)
            && reads_code_from_stdin(name, view.args)
        {
            for redirect in &segment.redirects {
                if redirect.fd.is_some_and(|fd| fd != 0) {
                    continue;
                }
                match (redirect.op, &redirect.heredoc) {
                    (RedirectOp::Heredoc, Some(body)) => texts.push(body.text().to_string()),
                    (RedirectOp::HereString, _) => texts.push(redirect.target.text().to_string()),
                    _ => {}
                }
            }
        }
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
