//! `$` expansions: `$name`, `$1`, `$?` and the other special parameters, `${…}` with its
//! operator text, and the dispatch from `$` to `$(…)`, `$((…))`, `$[…]`, `$'…'` and `$"…"`.
//! A parameter's operator can hold whole commands (`${x:-$(cmd)}`), so it is read with the
//! word lexer's own quoting rules, not skipped as text.

use super::word::WordBuilder;
use super::{Closer, LexError, Parser};
use crate::policy::shell::ast::WordPart;

impl Parser<'_> {
    /// A `$` expansion at the cursor.
    pub(super) fn dollar(&mut self, word: &mut WordBuilder, quoted: bool) -> Result<(), LexError> {
        match self.peek_at(1) {
            Some('(') if self.peek_at(2) == Some('(') && self.is_arithmetic(self.pos + 1) => {
                self.pos += 3;
                let start = self.pos;
                let text = self.arithmetic_text(start)?;
                let inner = self.arithmetic_word(&text)?;
                word.push_part(WordPart::Arithmetic { text });
                for part in inner.parts {
                    if matches!(part, WordPart::CommandSub { .. }) {
                        word.push_part(part);
                    }
                }
            }
            // `$[…]`: bash's old spelling of `$((…))`.
            Some('[') => {
                self.pos += 2;
                let start = self.pos;
                let text = self.matched_text(start, ('[', ']'), "]")?;
                let inner = self.arithmetic_word(&text)?;
                word.push_part(WordPart::Arithmetic { text });
                for part in inner.parts {
                    if matches!(part, WordPart::CommandSub { .. }) {
                        word.push_part(part);
                    }
                }
            }
            Some('(') => {
                self.pos += 2;
                self.enter()?;
                let script = self.parse_script(Closer::Paren);
                self.leave();
                word.push_part(WordPart::CommandSub {
                    script: Box::new(script?),
                    quoted,
                });
            }
            Some('{') => {
                self.pos += 2;
                self.enter()?;
                let braced = self.braced_parameter(word, quoted);
                self.leave();
                braced?;
            }
            Some('\'') if !quoted => {
                self.pos += 2;
                let text = self.ansi_c_quoted()?;
                for ch in text.chars() {
                    word.push_char(ch, true);
                }
            }
            Some('"') if !quoted => {
                self.pos += 1;
                self.double_quoted(word)?;
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                self.pos += 1;
                let start = self.pos;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    self.pos += 1;
                }
                word.push_part(WordPart::Param {
                    name: self.slice(start, self.pos),
                    op: String::new(),
                    braced: false,
                    quoted,
                });
            }
            Some(c)
                if c.is_ascii_digit() || matches!(c, '@' | '*' | '#' | '?' | '$' | '!' | '-') =>
            {
                self.pos += 2;
                word.push_part(WordPart::Param {
                    name: c.to_string(),
                    op: String::new(),
                    braced: false,
                    quoted,
                });
            }
            _ => {
                word.push_char('$', quoted);
                self.pos += 1;
            }
        }
        Ok(())
    }

    /// `${…}` after the `${`: the name, then whatever operator text follows it; substitutions
    /// inside the operator (`${x:-$(cmd)}`) are kept as parts of the word.
    fn braced_parameter(&mut self, word: &mut WordBuilder, quoted: bool) -> Result<(), LexError> {
        let open = self.pos;
        let name_start = self.pos;
        if matches!(self.peek(), Some('#' | '!')) && self.peek_at(1) != Some('}') {
            self.pos += 1;
        }
        match self.peek() {
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    self.pos += 1;
                }
            }
            Some(c)
                if c.is_ascii_digit() || matches!(c, '@' | '*' | '#' | '?' | '$' | '!' | '-') =>
            {
                self.pos += 1;
            }
            _ => {}
        }
        let name = self.slice(name_start, self.pos);
        let mut op = String::new();
        let mut nested = Vec::new();
        let mut depth = 0usize;
        loop {
            self.spend(1)?;
            let Some(c) = self.peek() else {
                if self.lenient {
                    break;
                }
                return Err(LexError {
                    kind: super::LexErrorKind::Syntax,
                    message: "unterminated `${`".into(),
                    offset: open,
                });
            };
            match c {
                '}' if depth == 0 => {
                    self.pos += 1;
                    break;
                }
                '}' => {
                    depth -= 1;
                    op.push(c);
                    self.pos += 1;
                }
                '{' => {
                    depth += 1;
                    op.push(c);
                    self.pos += 1;
                }
                '\\' => {
                    op.push(c);
                    if let Some(next) = self.peek_at(1) {
                        op.push(next);
                    }
                    // A trailing backslash has nothing after it to skip.
                    self.advance(2);
                }
                // Single quotes quote in `${…}`, and inside double quotes too after a pattern
                // operator (`"${x#'"'}"`), as bash 5 reads them.
                '\'' if !quoted || pattern_operator(&op) => {
                    self.pos += 1;
                    op.push_str(&self.single_quoted()?);
                }
                '$' | '`' | '"' => {
                    let mut inner = WordBuilder::new();
                    match c {
                        '$' => self.dollar(&mut inner, quoted)?,
                        '`' => {
                            let script = self.backtick()?;
                            inner.push_part(WordPart::CommandSub {
                                script: Box::new(script),
                                quoted: true,
                            });
                        }
                        _ => self.double_quoted(&mut inner)?,
                    }
                    for part in inner.parts {
                        match part {
                            WordPart::Literal { text, .. } => op.push_str(&text),
                            WordPart::Param { name, .. } => {
                                op.push('$');
                                op.push_str(&name);
                            }
                            other => nested.push(other),
                        }
                    }
                }
                _ => {
                    op.push(c);
                    self.pos += 1;
                }
            }
        }
        word.push_part(WordPart::Param {
            name,
            op,
            braced: true,
            quoted,
        });
        for part in nested {
            word.push_part(part);
        }
        Ok(())
    }
}

/// Whether a `${…}` operator read so far removes or replaces a pattern (`#`, `%`, `/`, `^`,
/// `,`), where bash lets single quotes quote even inside double quotes.
fn pattern_operator(op: &str) -> bool {
    op.starts_with(['#', '%', '/', '^', ','])
}
