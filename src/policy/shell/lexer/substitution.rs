//! Command and process substitution written without `$(`: backticks (unescaped, then lexed as
//! a script of their own) and `<(…)`/`>(…)`. The commands inside run, so they are lexed as
//! deeply as the command around them.

use super::word::WordBuilder;
use super::{Closer, LexError, Parser};
use crate::policy::shell::ast::{Script, Word, WordPart};

impl Parser<'_> {
    /// `` `…` `` with the cursor on the opening backtick: the unescaped inside is lexed as a
    /// script of its own.
    pub(super) fn backtick(&mut self) -> Result<Script, LexError> {
        self.backtick_in(false)
    }

    /// [`Self::backtick`], inside double quotes or not (there `\"` also stands for `"`).
    pub(super) fn backtick_in(&mut self, double_quoted: bool) -> Result<Script, LexError> {
        let open = self.pos;
        self.pos += 1;
        let mut inner = String::new();
        loop {
            let Some(c) = self.peek() else {
                if self.lenient {
                    break;
                }
                return Err(LexError {
                    kind: super::LexErrorKind::Syntax,
                    message: "unterminated backtick".into(),
                    offset: open,
                });
            };
            self.pos += 1;
            match c {
                '`' => break,
                '\\' => match self.peek() {
                    Some(next @ ('`' | '\\' | '$')) => {
                        inner.push(next);
                        self.pos += 1;
                    }
                    Some('"') if double_quoted => {
                        inner.push('"');
                        self.pos += 1;
                    }
                    _ => inner.push('\\'),
                },
                other => inner.push(other),
            }
        }
        self.nested_script(&inner)
    }

    /// The inside of backticks, lexed one level deeper with this command's budget.
    fn nested_script(&self, text: &str) -> Result<Script, LexError> {
        let chars: Vec<char> = text.chars().collect();
        self.spend(chars.len())?;
        let mut inner = Parser::new(&chars, self.lenient, self.depth, self.budget);
        inner.enter()?;
        inner.parse_script(Closer::Eof).map_err(|e| LexError {
            offset: self.pos,
            ..e
        })
    }

    /// `<(…)` or `>(…)` with the cursor on `<` or `>`.
    pub(super) fn process_substitution(&mut self) -> Result<Word, LexError> {
        self.pos += 2;
        self.enter()?;
        let script = self.parse_script(Closer::Paren);
        self.leave();
        let mut word = WordBuilder::new();
        word.push_part(WordPart::ProcessSub {
            script: Box::new(script?),
        });
        Ok(word.finish())
    }
}
