//! A shell lexer for judging commands, not running them: it splits a command line into
//! simple-command segments joined by `&& || ; | &` and newlines, looks into subshells, groups,
//! function definitions, `for`/`while`/`if`/`case`, `$(…)`, backticks, `<(…)`, redirections,
//! heredocs and here-strings, and removes quotes from words.
//!
//! A command that does not lex is also lexed leniently (unterminated constructs closed at the
//! end), so the denylist still sees its words; the strict error marks the command high-risk.

mod script;
mod word;

use super::ast::Script;
use std::fmt;

/// Nesting deeper than this is refused: no real command needs it, and it bounds recursion.
const MAX_DEPTH: usize = 48;

/// Why a command did not lex.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LexError {
    pub message: String,
    pub offset: usize,
}

impl fmt::Display for LexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at character {})", self.message, self.offset)
    }
}

impl std::error::Error for LexError {}

/// The result of lexing: the script (strict when it lexed, lenient otherwise) and the strict
/// error, if any.
#[derive(Clone, Debug, PartialEq)]
pub struct Lexed {
    pub script: Script,
    pub error: Option<LexError>,
}

/// Lexes a command line.
#[must_use]
pub fn lex(input: &str) -> Lexed {
    match Parser::new(input, false, 0).parse_all() {
        Ok(script) => Lexed {
            script,
            error: None,
        },
        Err(error) => Lexed {
            script: Parser::new(input, true, 0).parse_all().unwrap_or_default(),
            error: Some(error),
        },
    }
}

/// Lexes a nested command string (`bash -c '…'`, `env -S '…'`, `watch '…'`) one level deeper.
pub(crate) fn lex_nested(input: &str, depth: usize) -> Result<Script, LexError> {
    if depth >= MAX_DEPTH {
        return Err(LexError {
            message: "commands nested too deeply".into(),
            offset: 0,
        });
    }
    Parser::new(input, false, depth + 1).parse_all()
}

/// Where a nested script ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Closer {
    /// The end of the input.
    Eof,
    /// `)` of a subshell, `$(` or `<(`.
    Paren,
    /// `}` of a group or function body.
    Brace,
    /// `;;`, `;&` or `esac` of a case item.
    CaseItem,
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    lenient: bool,
    depth: usize,
    /// A heredoc body read ahead: when the newline at `.0` is consumed, lexing resumes at `.1`.
    heredoc_resume: Option<(usize, usize)>,
}

impl Parser {
    fn new(input: &str, lenient: bool, depth: usize) -> Self {
        Parser {
            chars: input.chars().collect(),
            pos: 0,
            lenient,
            depth,
            heredoc_resume: None,
        }
    }

    fn parse_all(mut self) -> Result<Script, LexError> {
        self.parse_script(Closer::Eof)
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn starts_with(&self, text: &str) -> bool {
        (self.pos..)
            .zip(text.chars())
            .all(|(i, c)| self.chars.get(i) == Some(&c))
    }

    fn error(&self, message: impl Into<String>) -> LexError {
        LexError {
            message: message.into(),
            offset: self.pos,
        }
    }

    fn slice(&self, start: usize, end: usize) -> String {
        self.chars[start.min(end)..end.min(self.chars.len())]
            .iter()
            .collect()
    }

    /// Skips spaces, tabs and backslash-newline continuations.
    fn skip_blanks(&mut self) {
        loop {
            match self.peek() {
                Some(' ' | '\t' | '\r') => self.pos += 1,
                Some('\\') if self.peek_at(1) == Some('\n') => self.pos += 2,
                _ => return,
            }
        }
    }

    /// Consumes one newline, jumping over a heredoc body read ahead for this line.
    fn consume_newline(&mut self) {
        let at = self.pos;
        self.pos += 1;
        if let Some((newline, resume)) = self.heredoc_resume
            && newline == at
        {
            self.pos = resume;
            self.heredoc_resume = None;
        }
    }

    /// Skips blanks, newlines and comments.
    fn skip_space(&mut self) {
        loop {
            self.skip_blanks();
            match self.peek() {
                Some('\n') => self.consume_newline(),
                Some('#') => self.skip_comment(),
                _ => return,
            }
        }
    }

    fn skip_comment(&mut self) {
        while let Some(c) = self.peek() {
            if c == '\n' {
                return;
            }
            self.pos += 1;
        }
    }

    fn enter(&mut self) -> Result<(), LexError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.error("commands nested too deeply"));
        }
        self.depth += 1;
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }
}

/// Characters that end an unquoted word.
fn is_meta(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\r' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>'
    )
}

#[cfg(test)]
mod tests;
