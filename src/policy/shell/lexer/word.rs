//! Word-level lexing: the builder that collects a word's parts and tells globs and brace
//! expansions from quoted text, and the reading of one word — quotes, escapes, tilde — and of
//! double-quote-like text (heredoc bodies, arithmetic). Expansions after `$`, backticks and
//! arithmetic are read by their own modules, called from here.

use super::{LexError, Parser, is_meta};
use crate::policy::shell::ast::{Parts, Word, WordPart};

/// Accumulates the parts of one word and the shape that tells globs from quoted text.
pub(super) struct WordBuilder {
    pub(super) parts: Parts,
    /// An unquoted `*` or `?`.
    glob: bool,
    /// The word from its first unquoted `[` or `{` on, quoted characters as NUL and expansions
    /// as `$`: bracket globs and brace expansions are looked for here, so a quoted `{a,b}`
    /// never counts. Empty (unallocated) for the many words without either.
    shape: String,
}

impl WordBuilder {
    pub(super) fn new() -> Self {
        WordBuilder {
            parts: Parts::new(),
            glob: false,
            shape: String::new(),
        }
    }

    pub(super) fn push_char(&mut self, c: char, quoted: bool) {
        if !quoted && (c == '*' || c == '?') {
            self.glob = true;
        }
        if !self.shape.is_empty() || (!quoted && (c == '[' || c == '{')) {
            self.shape.push(if quoted { '\0' } else { c });
        }
        if let Some(WordPart::Literal { text, quoted: q }) = self.parts.last_mut()
            && *q == quoted
        {
            text.push(c);
            return;
        }
        // Most words are short: one allocation of this size usually holds the whole literal.
        let mut text = String::with_capacity(24);
        text.push(c);
        self.parts.push(WordPart::Literal { text, quoted });
    }

    /// Appends a run of characters of one quotedness at once (the common case: a plain word).
    /// Unquoted runs never hold glob or brace characters (the caller stops at them).
    pub(super) fn push_run(&mut self, run: &[char], quoted: bool) {
        if run.is_empty() {
            return;
        }
        if !self.shape.is_empty() {
            self.shape
                .extend(run.iter().map(|&c| if quoted { '\0' } else { c }));
        }
        if let Some(WordPart::Literal { text, quoted: q }) = self.parts.last_mut()
            && *q == quoted
        {
            text.extend(run);
            return;
        }
        let mut text = String::with_capacity(run.len().max(24));
        text.extend(run);
        self.parts.push(WordPart::Literal { text, quoted });
    }

    pub(super) fn push_part(&mut self, part: WordPart) {
        if !self.shape.is_empty() {
            self.shape.push('$');
        }
        self.parts.push(part);
    }

    pub(super) fn finish(self) -> Word {
        let glob = self.glob || has_glob(&self.shape);
        let brace = has_brace_expansion(&self.shape);
        Word::new(self.parts, glob, brace)
    }
}

fn has_glob(shape: &str) -> bool {
    shape
        .find('[')
        .is_some_and(|open| shape[open + 1..].contains(']'))
}

/// `{a,b}` or `{1..9}` unquoted: bash expands it into several words.
fn has_brace_expansion(shape: &str) -> bool {
    let mut rest = shape;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            return false;
        };
        let inside = &after[..close];
        if inside.contains(',') || inside.contains("..") {
            return true;
        }
        rest = after;
    }
    false
}

/// A character that is only itself in an unquoted word: no quoting, expansion, glob, brace,
/// tilde or assignment meaning, and not the end of the word.
fn is_plain(c: char) -> bool {
    !is_meta(c)
        && !matches!(
            c,
            '\\' | '\'' | '"' | '$' | '`' | '~' | '=' | '*' | '?' | '[' | '{'
        )
}

impl<'a> Parser<'a> {
    /// Lexes one word at the cursor, up to the next unquoted metacharacter.
    pub(super) fn parse_word(&mut self) -> Result<Word, LexError> {
        let start = self.pos;
        let mut word = WordBuilder::new();
        let mut seen_equals = false;
        while let Some(c) = self.peek() {
            if is_meta(c) {
                break;
            }
            match c {
                '\\' => match self.peek_at(1) {
                    Some('\n') => self.pos += 2,
                    Some(next) => {
                        word.push_char(next, true);
                        self.pos += 2;
                    }
                    None => {
                        word.push_char('\\', true);
                        self.pos += 1;
                    }
                },
                '\'' => {
                    self.pos += 1;
                    let run = self.single_quoted_run()?;
                    word.push_run(run, true);
                }
                '"' => self.double_quoted(&mut word)?,
                '$' => self.dollar(&mut word, false)?,
                '`' => {
                    let script = self.backtick()?;
                    word.push_part(WordPart::CommandSub {
                        script: Box::new(script),
                        quoted: false,
                    });
                }
                '~' if self.pos == start || (seen_equals && self.chars[self.pos - 1] == '=') => {
                    self.pos += 1;
                    let user_start = self.pos;
                    while self
                        .peek()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
                    {
                        self.pos += 1;
                    }
                    if self.peek().is_none_or(|c| c == '/' || is_meta(c)) {
                        let user = self.slice(user_start, self.pos);
                        word.push_part(WordPart::Tilde { user });
                    } else {
                        word.push_char('~', false);
                        self.pos = user_start;
                    }
                }
                _ if is_plain(c) => {
                    let run = self.rest();
                    let len = run.iter().take_while(|&&c| is_plain(c)).count();
                    word.push_run(&run[..len], false);
                    self.pos += len;
                }
                _ => {
                    if c == '=' {
                        seen_equals = true;
                    }
                    word.push_char(c, false);
                    self.pos += 1;
                }
            }
        }
        self.spend(self.pos - start + 1)?;
        Ok(word.finish())
    }

    /// The inside of `'…'` (the opening quote already consumed), the closing one consumed.
    fn single_quoted_run(&mut self) -> Result<&'a [char], LexError> {
        let start = self.pos;
        let rest = self.rest();
        match rest.iter().position(|&c| c == '\'') {
            Some(len) => {
                self.literal.push((start, start + len));
                self.pos += len + 1;
                Ok(&rest[..len])
            }
            None if self.lenient => {
                self.literal.push((start, self.chars.len()));
                self.pos = self.chars.len();
                Ok(rest)
            }
            None => Err(LexError {
                kind: super::LexErrorKind::Syntax,
                message: "unterminated single quote".into(),
                offset: start.saturating_sub(1),
            }),
        }
    }

    /// The text up to the closing `'` (the opening one already consumed).
    pub(super) fn single_quoted(&mut self) -> Result<String, LexError> {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c == '\'' {
                let text = self.slice(start, self.pos);
                self.literal.push((start, self.pos));
                self.pos += 1;
                return Ok(text);
            }
            self.pos += 1;
        }
        if self.lenient {
            self.literal.push((start, self.pos));
            return Ok(self.slice(start, self.pos));
        }
        Err(LexError {
            kind: super::LexErrorKind::Syntax,
            message: "unterminated single quote".into(),
            offset: start.saturating_sub(1),
        })
    }

    /// `"…"` with the cursor on the opening quote.
    pub(super) fn double_quoted(&mut self, word: &mut WordBuilder) -> Result<(), LexError> {
        let open = self.pos;
        self.pos += 1;
        loop {
            let Some(c) = self.peek() else {
                if self.lenient {
                    return Ok(());
                }
                return Err(LexError {
                    kind: super::LexErrorKind::Syntax,
                    message: "unterminated double quote".into(),
                    offset: open,
                });
            };
            match c {
                '"' => {
                    self.pos += 1;
                    return Ok(());
                }
                '\\' => match self.peek_at(1) {
                    Some('\n') => self.pos += 2,
                    Some(next @ ('$' | '`' | '"' | '\\')) => {
                        word.push_char(next, true);
                        self.pos += 2;
                    }
                    _ => {
                        word.push_char('\\', true);
                        self.pos += 1;
                    }
                },
                '$' => self.dollar(word, true)?,
                '`' => {
                    // Inside double quotes, `\"` in backticks is a plain `"` as well.
                    let script = self.backtick_in(true)?;
                    word.push_part(WordPart::CommandSub {
                        script: Box::new(script),
                        quoted: true,
                    });
                }
                _ => {
                    let run = self.rest();
                    let len = run
                        .iter()
                        .take_while(|&&c| !matches!(c, '"' | '\\' | '$' | '`'))
                        .count();
                    word.push_run(&run[..len], true);
                    self.pos += len;
                }
            }
        }
    }

    /// Lexes the rest of the input as the inside of a double-quoted string (a heredoc body or
    /// arithmetic): expansions are found, quotes are plain characters. Only running out of
    /// budget fails it.
    pub(super) fn inline_text_word(&mut self) -> Result<Word, LexError> {
        let mut word = WordBuilder::new();
        while let Some(c) = self.peek() {
            self.spend(1)?;
            match c {
                '\\' => match self.peek_at(1) {
                    Some(next @ ('$' | '`' | '\\')) => {
                        word.push_char(next, true);
                        self.pos += 2;
                    }
                    Some('\n') => self.pos += 2,
                    _ => {
                        word.push_char('\\', true);
                        self.pos += 1;
                    }
                },
                '$' => {
                    let at = self.pos;
                    match self.dollar(&mut word, true) {
                        Err(e) if e.kind == super::LexErrorKind::TooComplex => return Err(e),
                        Err(_) => self.pos = at + 1,
                        Ok(()) => {}
                    }
                }
                '`' => {
                    let at = self.pos;
                    match self.backtick() {
                        Ok(script) => word.push_part(WordPart::CommandSub {
                            script: Box::new(script),
                            quoted: true,
                        }),
                        Err(e) if e.kind == super::LexErrorKind::TooComplex => return Err(e),
                        Err(_) => self.pos = at + 1,
                    }
                }
                _ => {
                    word.push_char(c, true);
                    self.pos += 1;
                }
            }
        }
        Ok(word.finish())
    }
}
