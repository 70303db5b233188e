//! Compound commands read after their keyword: `for`/`select` headers, `case` items and
//! `[[ … ]]` tests, and whether a `while`/`until` condition makes a loop that cannot end.
//! Each has its own grammar inside (a `case` pattern or a `[[` operator is no connector), so
//! they are read apart from the simple commands around them.

use super::script::absorb;
use super::{Closer, LexError, LoopKind, Parser, is_meta};
use crate::policy::shell::ast::{Assignment, Connector, FOR_LIST, Script, Segment, Word, WordPart};

impl Parser<'_> {
    /// `for NAME [in WORDS…]` up to the `;` or newline before `do`; and whether it is an
    /// arithmetic loop that cannot end (`for ((;;))`).
    pub(super) fn for_header(&mut self, connector: Connector) -> Result<(Segment, bool), LexError> {
        let mut segment = Segment::new(connector);
        self.skip_blanks();
        if self.starts_with("((") {
            self.advance(2);
            let start = self.pos;
            let text = self.arithmetic_text(start)?;
            let endless = text
                .split(';')
                .nth(1)
                .is_some_and(|condition| is_always_true_number(condition.trim(), true));
            segment.evaluated.push(self.arithmetic_word(&text)?);
            return Ok((segment, endless));
        }
        let name = self.parse_word()?.text().to_string();
        segment.assignments.push(Assignment {
            name,
            value: Word::new(
                smallvec::smallvec![WordPart::Literal {
                    text: FOR_LIST.into(),
                    quoted: true,
                }],
                false,
                false,
            ),
            whole: false,
        });
        self.skip_space()?;
        if self.peek_reserved() == Some("in") {
            self.skip_word();
            loop {
                self.spend(1)?;
                self.skip_blanks();
                match self.peek() {
                    None | Some('\n' | ';') => break,
                    // A comment ends the list, as in bash: `for x in a #'` quotes nothing.
                    Some('#') => self.skip_comment()?,
                    Some(c) if is_meta(c) => {
                        if !self.lenient {
                            return Err(self.error("unexpected operator in `for` list"));
                        }
                        self.pos += 1;
                    }
                    Some(_) => {
                        let word = self.parse_word()?;
                        segment.evaluated.push(word);
                    }
                }
            }
        }
        Ok((segment, false))
    }

    pub(super) fn case_statement(
        &mut self,
        connector: Connector,
        script: &mut Script,
    ) -> Result<(), LexError> {
        let mut head = Segment::new(connector);
        self.skip_blanks();
        head.evaluated.push(self.parse_word()?);
        script.segments.push(head);
        self.skip_space()?;
        if self.peek_reserved() == Some("in") {
            self.skip_word();
        } else if !self.lenient {
            return Err(self.error("expected `in` in case statement"));
        }
        loop {
            self.spend(1)?;
            self.skip_space()?;
            while self.peek() == Some(';') {
                self.pos += 1;
                self.skip_space()?;
            }
            match self.peek_reserved() {
                Some("esac") => {
                    self.skip_word();
                    self.trailing_redirects(script)?;
                    return Ok(());
                }
                _ if self.peek().is_none() => {
                    if self.lenient {
                        return Ok(());
                    }
                    return Err(self.error("missing `esac`"));
                }
                _ => {}
            }
            if self.peek() == Some('(') {
                self.pos += 1;
            }
            let mut patterns = Segment::new(Connector::Semicolon);
            loop {
                self.spend(1)?;
                self.skip_blanks();
                match self.peek() {
                    Some(')') => {
                        self.pos += 1;
                        break;
                    }
                    Some('|') => self.pos += 1,
                    None => {
                        if self.lenient {
                            return Ok(());
                        }
                        return Err(self.error("unterminated case pattern"));
                    }
                    Some(c) if is_meta(c) => {
                        if !self.lenient {
                            return Err(self.error("unexpected operator in case pattern"));
                        }
                        self.pos += 1;
                    }
                    Some(_) => patterns.evaluated.push(self.parse_word()?),
                }
            }
            script.segments.push(patterns);
            self.enter()?;
            let body = self.parse_script(Closer::CaseItem);
            self.leave();
            absorb(script, body?, Connector::Semicolon);
            if self.starts_with(";;&") {
                self.pos += 3;
            } else if self.starts_with(";;") || self.starts_with(";&") {
                self.pos += 2;
            }
        }
    }

    /// `[[ … ]]`: operators inside are words, not redirections or connectors. As in bash, a
    /// `#` starting a word begins a comment and newlines are allowed: `[[ #'` is a comment, not
    /// a quote that could hide the commands after it.
    pub(super) fn test_command(&mut self, connector: Connector) -> Result<Segment, LexError> {
        let mut segment = Segment::new(connector);
        segment.words.push(literal_word("[["));
        loop {
            self.spend(1)?;
            self.skip_space()?;
            if self.starts_with("]]") {
                self.pos += 2;
                return Ok(segment);
            }
            match self.peek() {
                None => {
                    if self.lenient {
                        return Ok(segment);
                    }
                    return Err(self.error("missing `]]`"));
                }
                Some(c) if is_meta(c) => {
                    let start = self.pos;
                    while self
                        .peek()
                        .is_some_and(|c| matches!(c, '&' | '|' | '<' | '>' | '(' | ')'))
                    {
                        self.pos += 1;
                    }
                    if self.pos == start {
                        self.pos += 1;
                    }
                    segment
                        .words
                        .push(literal_word(&self.slice(start, self.pos)));
                }
                Some(_) => segment.words.push(self.parse_word()?),
            }
        }
    }
}

/// Whether a `while` (or `until`) condition of one simple command is true (or false) by
/// construction: `true`, `:`, `[ 1 ]`, `[[ x ]]`, `test x`, `(( 1 ))` — and `false` for `until`.
pub(super) fn never_ends(kind: LoopKind, condition: &Segment) -> bool {
    if !condition.redirects.is_empty() || !condition.assignments.is_empty() {
        return false;
    }
    let words: Vec<Option<&str>> = condition.words.iter().map(Word::literal).collect();
    let holds = match words.as_slice() {
        [] => match condition.evaluated.as_slice() {
            [word] => word
                .parts
                .iter()
                .find_map(|p| match p {
                    WordPart::Literal { text, .. } => Some(text.trim()),
                    _ => None,
                })
                .map(|text| is_always_true_number(text, false)),
            _ => None,
        },
        [Some("true" | ":")] => Some(true),
        [Some("false")] => Some(false),
        [Some("[" | "test" | "[["), Some(operand), rest @ ..]
            if !operand.is_empty()
                && !operand.starts_with('-')
                && matches!(rest, [] | [Some("]" | "]]")]) =>
        {
            Some(true)
        }
        _ => None,
    };
    holds == Some(kind == LoopKind::While)
}

/// Whether an arithmetic condition is a non-zero number (or empty, where that means true, as
/// in `for ((;;))`).
fn is_always_true_number(text: &str, empty_is_true: bool) -> bool {
    if text.is_empty() {
        return empty_is_true;
    }
    text.chars().all(|c| c.is_ascii_digit()) && text.chars().any(|c| c != '0')
}

fn literal_word(text: &str) -> Word {
    Word::plain(text)
}
