//! Heredoc bodies, read the way bash reads them, because a body that ends somewhere else than
//! bash's hides the commands after it (or shows data as commands):
//! - the body starts after the newline that ends the *logical* line — a `$(…)`, quote, backtick,
//!   `${…}` or `<(…)` that spans lines keeps the line going; a subshell or group does not;
//! - the delimiter is the operator's word with quotes removed and nothing expanded (`$'E\x4fF'`
//!   is `EOF`, `` `x` `` is itself), and any quoting keeps the body from being expanded;
//! - in an unquoted body, a backslash-newline joins lines before they are compared (`EO\` then
//!   `F` ends a body delimited by `EOF`); a carriage return is part of a line (`EOF\r` is not
//!   `EOF`);
//! - a delimiter followed by `)` ends the body inside a command substitution (bash 5.2).

use super::word::WordBuilder;
use super::{LexError, Parser, is_meta};
use crate::policy::shell::ast::Word;

impl Parser<'_> {
    /// Reads the body of a heredoc whose delimiter word spans `delimiter_start..self.pos`. The
    /// body starts after this logical line (or after the bodies of earlier heredocs of the same
    /// line) and ends at the delimiter line.
    pub(super) fn heredoc_body(
        &mut self,
        delimiter_start: usize,
        strip_tabs: bool,
    ) -> Result<Word, LexError> {
        let raw = self.chars.get(delimiter_start..self.pos).unwrap_or(&[]);
        let (delimiter, quoted) = self.heredoc_delimiter(raw)?;
        let Some(newline) = self.logical_line_end()? else {
            // No body at all: bash warns and uses an empty one.
            return Ok(WordBuilder::new().finish());
        };
        let body_start = self
            .heredoc_resume
            .iter()
            .find(|(nl, _)| *nl == newline)
            .map_or(newline + 1, |(_, resume)| *resume);
        let (body, end) = self.body_lines(body_start, &delimiter, strip_tabs, quoted)?;
        self.literal.push((body_start, end));
        match self
            .heredoc_resume
            .iter_mut()
            .find(|(nl, _)| *nl == newline)
        {
            Some(entry) => entry.1 = end,
            None => self.heredoc_resume.push((newline, end)),
        }
        if quoted {
            let mut word = WordBuilder::new();
            for c in body.chars() {
                word.push_char(c, true);
            }
            return Ok(word.finish());
        }
        let chars: Vec<char> = body.chars().collect();
        let mut inner = Parser::new(&chars, true, self.depth, self.budget);
        inner.enter()?;
        inner.inline_text_word()
    }

    /// The lines from `start` up to the delimiter line: the body's text and where lexing
    /// resumes after it.
    fn body_lines(
        &self,
        start: usize,
        delimiter: &str,
        strip_tabs: bool,
        quoted: bool,
    ) -> Result<(String, usize), LexError> {
        let len = self.chars.len();
        let delimiter_len = delimiter.chars().count();
        let mut body = String::new();
        let mut cursor = start;
        while cursor < len {
            // One logical line: physical lines joined at an unquoted backslash-newline.
            let mut line = String::new();
            let mut content_start = cursor;
            let mut physical_lines = 0;
            loop {
                let line_end = self.chars[cursor..]
                    .iter()
                    .position(|&c| c == '\n')
                    .map_or(len, |i| cursor + i);
                self.spend(line_end - cursor + 1)?;
                let mut from = cursor;
                if strip_tabs && physical_lines == 0 {
                    from += self.chars[cursor..line_end]
                        .iter()
                        .take_while(|&&c| c == '\t')
                        .count();
                    content_start = from;
                }
                physical_lines += 1;
                let physical = &self.chars[from..line_end];
                line.extend(physical.iter());
                cursor = (line_end + 1).min(len);
                let trailing = physical.iter().rev().take_while(|&&c| c == '\\').count();
                if quoted || trailing % 2 == 0 || line_end >= len {
                    break;
                }
                line.pop();
            }
            if line == delimiter {
                return Ok((body, cursor));
            }
            if physical_lines == 1
                && let Some(rest) = line.strip_prefix(delimiter)
                && rest.starts_with(')')
            {
                // Inside `$(…)` bash ends the body here and the `)` closes the substitution:
                // lexing resumes on that `)`.
                return Ok((body, content_start + delimiter_len));
            }
            body.push_str(&line);
            body.push('\n');
        }
        Ok((body, len))
    }

    /// The delimiter as bash compares it: the raw word with quotes removed, `$'…'` decoded and
    /// nothing expanded; and whether any quoting was present (no expansion in the body then).
    fn heredoc_delimiter(&self, raw: &[char]) -> Result<(String, bool), LexError> {
        let mut out = String::new();
        let mut quoted = false;
        let mut i = 0;
        while i < raw.len() {
            match raw[i] {
                '\\' => {
                    quoted = true;
                    match raw.get(i + 1) {
                        Some(&next) => out.push(next),
                        None => out.push('\\'),
                    }
                    i += 2;
                }
                '\'' => {
                    quoted = true;
                    let close = raw[i + 1..]
                        .iter()
                        .position(|&c| c == '\'')
                        .map_or(raw.len(), |p| i + 1 + p);
                    out.extend(&raw[i + 1..close]);
                    i = close + 1;
                }
                '"' => {
                    quoted = true;
                    i += 1;
                    while i < raw.len() && raw[i] != '"' {
                        if raw[i] == '\\' && matches!(raw.get(i + 1), Some('$' | '`' | '"' | '\\'))
                        {
                            i += 1;
                        }
                        if let Some(&c) = raw.get(i) {
                            out.push(c);
                        }
                        i += 1;
                    }
                    i += 1;
                }
                '$' if raw.get(i + 1) == Some(&'\'') => {
                    quoted = true;
                    let mut ansi = Parser::new(raw, true, self.depth, self.budget);
                    ansi.pos = i + 2;
                    out.push_str(&ansi.ansi_c_quoted()?);
                    i = ansi.pos;
                }
                '$' if raw.get(i + 1) == Some(&'"') => i += 1,
                c => {
                    out.push(c);
                    i += 1;
                }
            }
        }
        Ok((out, quoted))
    }

    /// Where the current logical line ends: the next newline that is a token (not inside a
    /// quote, a substitution, `${…}` or a continuation), found by lexing ahead leniently.
    fn logical_line_end(&self) -> Result<Option<usize>, LexError> {
        let mut scan = Parser::new(self.chars, true, self.depth, self.budget);
        scan.pos = self.pos;
        loop {
            scan.skip_blanks();
            let Some(c) = scan.peek() else {
                return Ok(None);
            };
            scan.spend(1)?;
            match c {
                '\n' => return Ok(Some(scan.pos)),
                '#' => scan.skip_comment()?,
                '<' | '>' if scan.peek_at(1) == Some('(') => {
                    scan.process_substitution()?;
                }
                '(' if scan.starts_with("((") && scan.is_arithmetic(scan.pos) => {
                    scan.advance(2);
                    let start = scan.pos;
                    scan.arithmetic_text(start)?;
                }
                c if is_meta(c) => scan.advance(1),
                _ => {
                    scan.parse_word()?;
                }
            }
        }
    }
}
