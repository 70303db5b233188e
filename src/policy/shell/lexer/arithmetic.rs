//! Arithmetic: where a `((` is arithmetic rather than nested subshells, the text of `$((…))`,
//! `((…))` and `$[…]` up to bash's closing bracket, and that text lexed for the command
//! substitutions it can run (`$(( $(cmd) ))`).

use super::{LexError, Parser};
use crate::policy::shell::ast::Word;

impl Parser<'_> {
    /// `(( … ))` as a command: evaluated like `$(( … ))`.
    pub(super) fn arithmetic_command(&mut self) -> Result<Word, LexError> {
        self.advance(2);
        let start = self.pos;
        let text = self.arithmetic_text(start)?;
        self.arithmetic_word(&text)
    }

    /// Whether the `((` at `at` is arithmetic, as bash decides: the `)` matching the second `(`
    /// must be followed at once by `)`. Otherwise it is a subshell in a subshell (or `$(` of a
    /// subshell): `((rm x);ls)` runs `rm x`, so it must not be read as arithmetic.
    pub(super) fn is_arithmetic(&self, at: usize) -> bool {
        let mut depth = 0usize;
        let mut i = at + 1;
        let mut quote: Option<char> = None;
        while let Some(&c) = self.chars.get(i) {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '\\') => i += 1,
                (None, '\'' | '"') => quote = Some(c),
                (None, '(') => depth += 1,
                (None, ')') => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return self.chars.get(i + 1) == Some(&')');
                    }
                }
                _ => {}
            }
            i += 1;
        }
        // Unterminated: read as arithmetic, which fails to lex.
        true
    }

    /// The text of `$((…))` / `((…))` up to the closing `))`, the cursor just inside. Quotes
    /// and escapes are stepped over as bash does (a quoted `(` opens nothing), so the end found
    /// is bash's.
    pub(super) fn arithmetic_text(&mut self, start: usize) -> Result<String, LexError> {
        self.matched_text(start, ('(', ')'), "))")
    }

    /// The text up to `close` outside quotes and nested `open`/`end` pairs, the cursor just
    /// inside; the cursor ends after `close`.
    pub(super) fn matched_text(
        &mut self,
        start: usize,
        (open, end): (char, char),
        close: &str,
    ) -> Result<String, LexError> {
        let mut depth = 0usize;
        let mut quote: Option<char> = None;
        loop {
            self.spend(1)?;
            let Some(c) = self.peek() else {
                if self.lenient {
                    return Ok(self.slice(start, self.pos));
                }
                return Err(self.error("unterminated arithmetic"));
            };
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some('"'), '\\') | (None, '\\') => self.pos += 1,
                (Some(_), _) => {}
                (None, '\'' | '"' | '`') => quote = Some(c),
                (None, c) if c == open => depth += 1,
                (None, c) if c == end && depth == 0 && self.starts_with(close) => {
                    let text = self.slice(start, self.pos);
                    self.advance(close.chars().count());
                    return Ok(text);
                }
                (None, c) if c == end => depth = depth.saturating_sub(1),
                _ => {}
            }
            self.pos += 1;
        }
    }

    /// Arithmetic text lexed like a double-quoted string, so `$(…)` inside it is seen.
    pub(super) fn arithmetic_word(&self, text: &str) -> Result<Word, LexError> {
        let chars: Vec<char> = text.chars().collect();
        let mut inner = Parser::new(&chars, true, self.depth, self.budget);
        inner.enter()?;
        inner.inline_text_word()
    }
}
