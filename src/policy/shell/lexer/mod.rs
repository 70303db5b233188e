//! A shell lexer for judging commands, not running them. It models bash — the shell that runs
//! every command (`bash --noprofile --norc -c`) — and splits a command line into simple-command
//! segments joined by `&& || ; | &` and newlines, looks into subshells, groups, function
//! definitions, `for`/`while`/`if`/`case`, `$(…)`, backticks, `<(…)`, redirections, heredocs
//! and here-strings, and removes quotes from words.
//!
//! A command that does not lex is also lexed leniently (unterminated constructs closed at the
//! end), so the denylist still sees its words; the strict error marks the command high-risk.
//!
//! It is total and bounded: no input panics, and all the work one command causes — its nested
//! scripts, heredoc look-aheads and the command strings judged inside it — draws on one
//! [`Budget`]. Past the budget or the nesting limit the answer is [`LexErrorKind::TooComplex`],
//! which the gate denies: a command nobody can judge in bounded time is not run.

mod ansi_c;
mod arithmetic;
mod compound;
mod dollar;
mod heredoc;
mod redirect;
mod script;
mod substitution;
mod word;

use super::ast::Script;
use std::cell::Cell;
use std::fmt;

/// Nesting deeper than this is refused: no real command needs it, and it bounds recursion.
pub const MAX_DEPTH: usize = 48;

/// How much lexing one command may cause, in characters scanned (nested scripts and look-aheads
/// included). A 64 KiB command lexed a few times over stays far below it; a shape built to make
/// the lexer rescan its input does not.
pub const DEFAULT_BUDGET: usize = 2_000_000;

/// The work one command may cause, shared by every parser it starts.
#[derive(Debug)]
pub struct Budget {
    used: Cell<usize>,
    limit: usize,
}

impl Budget {
    #[must_use]
    pub fn new(limit: usize) -> Self {
        Budget {
            used: Cell::new(0),
            limit,
        }
    }

    /// Spends `steps`; false once the budget is gone.
    pub fn spend(&self, steps: usize) -> bool {
        let used = self.used.get().saturating_add(steps);
        self.used.set(used);
        used <= self.limit
    }

    #[must_use]
    pub fn exhausted(&self) -> bool {
        self.used.get() > self.limit
    }

    /// Steps spent so far.
    #[must_use]
    pub fn used(&self) -> usize {
        self.used.get()
    }
}

impl Default for Budget {
    fn default() -> Self {
        Budget::new(DEFAULT_BUDGET)
    }
}

/// What kind of failure a [`LexError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LexErrorKind {
    /// The command is not valid shell (unterminated quote, stray `)` …).
    Syntax,
    /// Nested too deeply or too much work: nobody can judge it in bounded time.
    TooComplex,
}

/// Why a command did not lex.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LexError {
    pub kind: LexErrorKind,
    pub message: String,
    pub offset: usize,
}

impl LexError {
    pub(crate) fn too_complex(message: impl Into<String>, offset: usize) -> Self {
        LexError {
            kind: LexErrorKind::TooComplex,
            message: message.into(),
            offset,
        }
    }
}

impl fmt::Display for LexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at character {})", self.message, self.offset)
    }
}

impl std::error::Error for LexError {}

/// The result of lexing: the script (strict when it lexed, lenient otherwise), the strict
/// error, if any, and where the comments were.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Lexed {
    pub script: Script,
    pub error: Option<LexError>,
    /// Character ranges (start, end) of the comments, outside any quote or heredoc body.
    pub comments: Vec<(usize, usize)>,
    /// Character ranges bash reads literally, where a backslash-newline is not a line
    /// continuation: single-quoted and `$'…'` text, comments and heredoc bodies.
    pub literal: Vec<(usize, usize)>,
}

impl Lexed {
    /// Whether the command is past the nesting or work limit.
    #[must_use]
    pub fn too_complex(&self) -> Option<&LexError> {
        self.error
            .as_ref()
            .filter(|e| e.kind == LexErrorKind::TooComplex)
    }
}

/// Lexes a command line with a budget of its own.
#[must_use]
pub fn lex(input: &str) -> Lexed {
    lex_with(input, &Budget::default(), 0)
}

/// Lexes `input` at nesting `depth`, spending `budget`: strictly, then leniently if that failed
/// on a syntax error. A command past the limits gets an empty script and a
/// [`LexErrorKind::TooComplex`] error.
#[must_use]
pub fn lex_with(input: &str, budget: &Budget, depth: usize) -> Lexed {
    let chars: Vec<char> = input.chars().collect();
    if depth >= MAX_DEPTH {
        return too_complex(LexError::too_complex("commands nested too deeply", 0));
    }
    let mut strict = Parser::new(&chars, false, depth, budget);
    match strict.parse_script(Closer::Eof) {
        Ok(script) => Lexed {
            script,
            error: None,
            literal: strict.literal_spans(),
            comments: strict.comments,
        },
        Err(error) if error.kind == LexErrorKind::TooComplex => too_complex(error),
        Err(error) => {
            let mut lenient = Parser::new(&chars, true, depth, budget);
            match lenient.parse_script(Closer::Eof) {
                Ok(script) => Lexed {
                    script,
                    error: Some(error),
                    literal: lenient.literal_spans(),
                    comments: lenient.comments,
                },
                Err(e) if e.kind == LexErrorKind::TooComplex => too_complex(e),
                // The lenient lexer closes what is open; should it still fail, nothing is
                // known about the command and it is judged as too complex to read.
                Err(e) => too_complex(LexError::too_complex(
                    format!("the command could not be read ({})", e.message),
                    e.offset,
                )),
            }
        }
    }
}

fn too_complex(error: LexError) -> Lexed {
    Lexed {
        script: Script::default(),
        error: Some(error),
        comments: Vec::new(),
        literal: Vec::new(),
    }
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

/// The loop keyword whose condition is being lexed (for loops that cannot end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LoopKind {
    While,
    Until,
}

struct Parser<'a> {
    chars: &'a [char],
    pos: usize,
    lenient: bool,
    depth: usize,
    budget: &'a Budget,
    /// Heredoc bodies read ahead: when the newline at `.0` is consumed as a token, lexing
    /// resumes at `.1` (after the last body that starts there).
    heredoc_resume: Vec<(usize, usize)>,
    /// Open `while`/`until` keywords: the kind, the script's segment count when it was met,
    /// and the nesting depth (so a `do` pairs with its own loop).
    loop_heads: Vec<(LoopKind, usize, usize)>,
    /// Comment ranges met at the top level.
    comments: Vec<(usize, usize)>,
    /// Quoted-literal and heredoc-body ranges met (see [`Lexed::literal`]).
    literal: Vec<(usize, usize)>,
}

impl<'a> Parser<'a> {
    fn new(chars: &'a [char], lenient: bool, depth: usize, budget: &'a Budget) -> Self {
        Parser {
            chars,
            pos: 0,
            lenient,
            depth,
            budget,
            heredoc_resume: Vec::new(),
            loop_heads: Vec::new(),
            comments: Vec::new(),
            literal: Vec::new(),
        }
    }

    /// Every literal range, comments included, in order.
    fn literal_spans(&self) -> Vec<(usize, usize)> {
        let mut spans: Vec<(usize, usize)> =
            self.literal.iter().chain(&self.comments).copied().collect();
        spans.sort_unstable();
        spans
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos.saturating_add(ahead)).copied()
    }

    /// Moves the cursor forward, never past the end.
    fn advance(&mut self, by: usize) {
        self.pos = self.pos.saturating_add(by).min(self.chars.len());
    }

    fn starts_with(&self, text: &str) -> bool {
        (self.pos..)
            .zip(text.chars())
            .all(|(i, c)| self.chars.get(i) == Some(&c))
    }

    /// The input from the cursor on (empty at the end).
    fn rest(&self) -> &'a [char] {
        self.chars.get(self.pos..).unwrap_or(&[])
    }

    fn error(&self, message: impl Into<String>) -> LexError {
        LexError {
            kind: LexErrorKind::Syntax,
            message: message.into(),
            offset: self.pos,
        }
    }

    fn slice(&self, start: usize, end: usize) -> String {
        let end = end.min(self.chars.len());
        self.chars[start.min(end)..end].iter().collect()
    }

    /// Spends `steps` of the budget, failing once it is gone.
    fn spend(&self, steps: usize) -> Result<(), LexError> {
        if self.budget.spend(steps) {
            Ok(())
        } else {
            Err(LexError::too_complex(
                "the command is too complex to judge",
                self.pos,
            ))
        }
    }

    /// Skips spaces, tabs and backslash-newline continuations. A carriage return is not a
    /// blank to bash: it is part of a word (`EOF\r` is not `EOF`).
    fn skip_blanks(&mut self) {
        loop {
            match self.peek() {
                Some(' ' | '\t') => self.pos += 1,
                Some('\\') if self.peek_at(1) == Some('\n') => self.advance(2),
                _ => return,
            }
        }
    }

    /// Consumes one newline token, jumping over the heredoc bodies read ahead for its line.
    fn consume_newline(&mut self) {
        let at = self.pos;
        self.advance(1);
        if let Some(i) = self.heredoc_resume.iter().position(|(nl, _)| *nl == at) {
            let (_, resume) = self.heredoc_resume.swap_remove(i);
            self.pos = resume.max(self.pos);
        }
    }

    /// Skips blanks, newlines and comments.
    fn skip_space(&mut self) -> Result<(), LexError> {
        loop {
            self.skip_blanks();
            match self.peek() {
                Some('\n') => self.consume_newline(),
                Some('#') => self.skip_comment()?,
                _ => return Ok(()),
            }
        }
    }

    fn skip_comment(&mut self) -> Result<(), LexError> {
        let start = self.pos;
        let len = self.rest().iter().take_while(|&&c| c != '\n').count();
        self.spend(len)?;
        self.advance(len);
        self.comments.push((start, self.pos));
        Ok(())
    }

    fn enter(&mut self) -> Result<(), LexError> {
        if self.depth >= MAX_DEPTH {
            return Err(LexError::too_complex(
                "commands nested too deeply",
                self.pos,
            ));
        }
        self.depth += 1;
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }
}

/// bash's reserved words (and the words it reads like them), recognized unquoted in command
/// position.
pub const RESERVED: [&str; 22] = [
    "{", "}", "if", "then", "elif", "else", "fi", "do", "done", "while", "until", "for", "select",
    "case", "esac", "in", "function", "!", "[[", "]]", "time", "coproc",
];

/// Characters that end an unquoted word.
fn is_meta(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>'
    )
}

#[cfg(test)]
mod tests;
