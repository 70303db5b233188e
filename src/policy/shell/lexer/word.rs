//! Word-level lexing: quotes, escapes, `$'…'`, parameters, `$(…)`, backticks, `$((…))`,
//! process substitution, tilde, and heredoc bodies.

use super::{Closer, LexError, Parser, is_meta};
use crate::policy::shell::ast::{Parts, Script, Word, WordPart};

/// Accumulates the parts of one word and the shape that tells globs from quoted text.
pub(super) struct WordBuilder {
    parts: Parts,
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

    fn push_part(&mut self, part: WordPart) {
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
    fn single_quoted(&mut self) -> Result<String, LexError> {
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
    fn double_quoted(&mut self, word: &mut WordBuilder) -> Result<(), LexError> {
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

    /// A `$` expansion at the cursor.
    fn dollar(&mut self, word: &mut WordBuilder, quoted: bool) -> Result<(), LexError> {
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

    /// `` `…` `` with the cursor on the opening backtick: the unescaped inside is lexed as a
    /// script of its own.
    pub(super) fn backtick(&mut self) -> Result<Script, LexError> {
        self.backtick_in(false)
    }

    /// [`Self::backtick`], inside double quotes or not (there `\"` also stands for `"`).
    fn backtick_in(&mut self, double_quoted: bool) -> Result<Script, LexError> {
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
    fn matched_text(
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

/// Whether a `${…}` operator read so far removes or replaces a pattern (`#`, `%`, `/`, `^`,
/// `,`), where bash lets single quotes quote even inside double quotes.
fn pattern_operator(op: &str) -> bool {
    op.starts_with(['#', '%', '/', '^', ','])
}
