//! Redirections: the operators at the cursor, those trailing a compound command (`) >out`,
//! `done <in`), and a group's input fed to every command in it, so each command is judged by
//! what it really reads.

use super::{LexError, Parser, is_meta};
use crate::policy::shell::ast::{Connector, Redirect, RedirectOp, Script, Segment, Word};

impl Parser<'_> {
    /// A redirection at the cursor (`>`, `2>>`, `&>`, `<<-EOF`, `<<<`, `>&2`, …).
    pub(super) fn redirect(&mut self, fd: Option<u32>) -> Result<Redirect, LexError> {
        const OPS: [(&str, RedirectOp); 12] = [
            ("&>>", RedirectOp::Append),
            ("&>", RedirectOp::Write),
            ("<<<", RedirectOp::HereString),
            ("<<-", RedirectOp::Heredoc),
            ("<<", RedirectOp::Heredoc),
            ("<>", RedirectOp::ReadWrite),
            ("<&", RedirectOp::Duplicate),
            (">&", RedirectOp::Duplicate),
            (">>", RedirectOp::Append),
            (">|", RedirectOp::Write),
            ("<", RedirectOp::Read),
            (">", RedirectOp::Write),
        ];
        let Some((text, op)) = OPS.iter().find(|(text, _)| self.starts_with(text)) else {
            return Err(self.error("expected a redirection"));
        };
        let strip_tabs = *text == "<<-";
        self.pos += text.chars().count();
        self.skip_blanks();
        match self.peek() {
            Some(c) if !is_meta(c) => {}
            _ => {
                if self.lenient {
                    return Ok(Redirect {
                        fd,
                        op: *op,
                        target: Word::default(),
                        heredoc: None,
                    });
                }
                return Err(self.error("redirection without a target"));
            }
        }
        let target_start = self.pos;
        let target = self.parse_word()?;
        let heredoc = if *op == RedirectOp::Heredoc {
            Some(self.heredoc_body(target_start, strip_tabs)?)
        } else {
            None
        };
        Ok(Redirect {
            fd,
            op: *op,
            target,
            heredoc,
        })
    }

    /// Redirections after `)`, `}`, `done`, `fi` or `esac`, attached to the last segment.
    pub(super) fn trailing_redirects(&mut self, script: &mut Script) -> Result<(), LexError> {
        loop {
            self.spend(1)?;
            self.skip_blanks();
            let fd_len = self
                .rest()
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
            let after = self.chars.get(self.pos + fd_len).copied();
            let is_redirect = matches!(after, Some('<' | '>'))
                && self.chars.get(self.pos + fd_len + 1) != Some(&'(')
                || (fd_len == 0 && self.starts_with("&>"));
            if !is_redirect {
                return Ok(());
            }
            let fd = self.slice(self.pos, self.pos + fd_len).parse().ok();
            self.pos += fd_len;
            let redirect = self.redirect(fd)?;
            if script.segments.is_empty() {
                script.segments.push(Segment::new(Connector::Start));
            }
            if let Some(last) = script.segments.last_mut() {
                last.redirects.push(redirect);
            }
        }
    }
}

/// Segments of a group past which its input is not copied to each (the pre-check still marks
/// a program reading code from that input).
const SPREAD_LIMIT: usize = 16;

/// A group's (or subshell's) input redirection feeds every command in it, not just the last
/// one it was attached to: `{ bash; :; } <<EOF` feeds `bash`. Copied to each, so the rules see
/// what each command reads.
pub(super) fn spread_input(script: &mut Script, start: usize) {
    let start = start.min(script.segments.len());
    let Some((last, members)) = script.segments[start..].split_last_mut() else {
        return;
    };
    if members.is_empty() || members.len() >= SPREAD_LIMIT {
        return;
    }
    let input: Vec<_> = last
        .redirects
        .iter()
        .filter(|r| {
            r.fd.is_none_or(|fd| fd == 0)
                && matches!(
                    r.op,
                    RedirectOp::Read | RedirectOp::Heredoc | RedirectOp::HereString
                )
        })
        .cloned()
        .collect();
    for member in members {
        member.redirects.extend(input.iter().cloned());
    }
}
