//! Script-level lexing: segments and the operators joining them, reserved words in command
//! position, subshells, groups, function definitions, simple commands and their assignments.
//! The compound commands with a grammar of their own (`for`, `case`, `[[ ]]`), arithmetic and
//! redirections are read by their own modules, called from here.

use super::compound::never_ends;
use super::redirect::spread_input;
use super::{Closer, LexError, LoopKind, Parser, is_meta};
use crate::policy::shell::ast::{
    Assignment, Connector, FunctionDef, Script, Segment, Word, WordPart,
};

/// What parsing one command produced.
enum Parsed {
    /// A simple command to append.
    Segment(Segment),
    /// Already merged into the script (a group, a function, a compound keyword).
    Merged,
    /// The closer of the enclosing script was reached (not consumed).
    End,
    /// Reserved words were consumed and a `(` follows (`while (( x ))`, `if ( … )`): the
    /// script goes on with the connector it had.
    Keyword,
}

impl Parser<'_> {
    pub(super) fn parse_script(&mut self, closer: Closer) -> Result<Script, LexError> {
        let mut script = Script::default();
        let mut connector = Connector::Start;
        loop {
            self.spend(1)?;
            self.skip_blanks();
            let Some(c) = self.peek() else {
                if closer != Closer::Eof && !self.lenient {
                    return Err(self.error(match closer {
                        Closer::Paren => "missing `)`",
                        Closer::Brace => "missing `}`",
                        _ => "unterminated `case`",
                    }));
                }
                return Ok(script);
            };
            match c {
                '\n' => {
                    self.consume_newline();
                    if !matches!(connector, Connector::And | Connector::Or | Connector::Pipe) {
                        connector = Connector::Newline;
                    }
                }
                '#' => {
                    script.features.comment = true;
                    self.skip_comment()?;
                }
                ';' => {
                    if closer == Closer::CaseItem
                        && matches!(self.peek_at(1), Some(';') | Some('&'))
                    {
                        return Ok(script);
                    }
                    self.pos += 1;
                    connector = Connector::Semicolon;
                }
                '&' if self.peek_at(1) == Some('&') => {
                    self.pos += 2;
                    connector = Connector::And;
                }
                '&' if self.peek_at(1) != Some('>') => {
                    self.pos += 1;
                    script.features.background = true;
                    connector = Connector::Background;
                }
                '|' => {
                    if self.peek_at(1) == Some('|') {
                        self.pos += 2;
                        connector = Connector::Or;
                    } else {
                        self.pos += if self.peek_at(1) == Some('&') { 2 } else { 1 };
                        connector = Connector::Pipe;
                    }
                }
                ')' => {
                    if closer == Closer::Paren {
                        self.pos += 1;
                        return Ok(script);
                    }
                    if !self.lenient {
                        return Err(self.error("unexpected `)`"));
                    }
                    self.pos += 1;
                }
                '(' => {
                    if self.peek_at(1) == Some('(') && self.is_arithmetic(self.pos) {
                        script.features.arithmetic = true;
                        let word = self.arithmetic_command()?;
                        let mut segment = Segment::new(connector);
                        segment.evaluated.push(word);
                        script.segments.push(segment);
                    } else {
                        self.pos += 1;
                        script.features.subshell = true;
                        self.enter()?;
                        let inner = self.parse_script(Closer::Paren);
                        self.leave();
                        let start = script.segments.len();
                        absorb(&mut script, inner?, connector);
                        self.trailing_redirects(&mut script)?;
                        spread_input(&mut script, start);
                    }
                    connector = Connector::Semicolon;
                }
                _ => match self.parse_command(connector, closer, &mut script)? {
                    Parsed::Segment(segment) => {
                        if !segment.is_empty() {
                            script.segments.push(segment);
                        }
                        connector = Connector::Semicolon;
                    }
                    Parsed::Merged => connector = Connector::Semicolon,
                    Parsed::Keyword => {}
                    Parsed::End => return Ok(script),
                },
            }
        }
    }

    /// Parses one command starting in command position: reserved words first, then a simple
    /// command (possibly a function definition).
    fn parse_command(
        &mut self,
        connector: Connector,
        closer: Closer,
        script: &mut Script,
    ) -> Result<Parsed, LexError> {
        let mut consumed_keyword = false;
        loop {
            self.skip_blanks();
            let Some(keyword) = self.peek_reserved() else {
                break;
            };
            consumed_keyword = true;
            match keyword {
                "{" => {
                    self.skip_word();
                    script.features.group = true;
                    self.enter()?;
                    let inner = self.parse_script(Closer::Brace);
                    self.leave();
                    let start = script.segments.len();
                    absorb(script, inner?, connector);
                    self.trailing_redirects(script)?;
                    spread_input(script, start);
                    return Ok(Parsed::Merged);
                }
                "}" => {
                    if closer == Closer::Brace {
                        self.skip_word();
                        return Ok(Parsed::End);
                    }
                    if !self.lenient {
                        return Err(self.error("unexpected `}`"));
                    }
                    self.skip_word();
                    return Ok(Parsed::Merged);
                }
                "esac" if closer == Closer::CaseItem => return Ok(Parsed::End),
                "while" | "until" => {
                    let kind = if keyword == "while" {
                        LoopKind::While
                    } else {
                        LoopKind::Until
                    };
                    self.loop_heads
                        .push((kind, script.segments.len(), self.depth));
                    script.features.compound = true;
                    self.skip_word();
                }
                "do" => {
                    if let Some(&(kind, start, depth)) = self.loop_heads.last()
                        && depth == self.depth
                    {
                        self.loop_heads.pop();
                        if let [condition] = &script.segments[start.min(script.segments.len())..]
                            && never_ends(kind, condition)
                        {
                            script.features.endless_loop = true;
                        }
                    }
                    script.features.compound = true;
                    self.skip_word();
                }
                "if" | "then" | "elif" | "else" | "!" => {
                    if keyword != "!" {
                        script.features.compound = true;
                    }
                    self.skip_word();
                }
                "coproc" => {
                    // `coproc [NAME] COMMAND` runs COMMAND in the background; a NAME comes only
                    // before a compound command (`coproc w { …; }`, `coproc if …`).
                    self.skip_word();
                    script.features.background = true;
                    self.skip_blanks();
                    if self.peek_reserved().is_none() && self.peek() != Some('(') {
                        let name_start = self.pos;
                        while self
                            .peek()
                            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                        {
                            self.pos += 1;
                        }
                        self.skip_blanks();
                        let compound_follows = self.peek() == Some('(')
                            || self.peek_reserved().is_some_and(|r| r != "}");
                        if self.pos == name_start || !compound_follows {
                            self.pos = name_start;
                        }
                    }
                }
                "time" => {
                    // bash's `time [-p] PIPELINE` times whatever follows, function definitions
                    // included (`time f(){ …; }`): it is read as a keyword, not a program.
                    self.skip_word();
                    self.skip_blanks();
                    if self.starts_with("-p") && self.peek_at(2).is_none_or(is_meta) {
                        self.advance(2);
                    }
                }
                "fi" | "done" | "esac" => {
                    script.features.compound = true;
                    self.skip_word();
                    self.trailing_redirects(script)?;
                    return Ok(Parsed::Merged);
                }
                "for" | "select" => {
                    script.features.compound = true;
                    self.skip_word();
                    let (segment, endless) = self.for_header(connector)?;
                    script.features.endless_loop |= endless;
                    script.features.arithmetic |= segment.words.is_empty()
                        && segment.assignments.is_empty()
                        && !segment.evaluated.is_empty();
                    return Ok(Parsed::Segment(segment));
                }
                "case" => {
                    script.features.compound = true;
                    self.skip_word();
                    self.case_statement(connector, script)?;
                    return Ok(Parsed::Merged);
                }
                "function" => {
                    self.skip_word();
                    self.skip_blanks();
                    let name = self.parse_word()?.text().to_string();
                    self.skip_blanks();
                    if self.starts_with("()") {
                        self.pos += 2;
                    } else if self.peek() == Some('(') {
                        self.pos += 1;
                        self.skip_blanks();
                        if self.peek() == Some(')') {
                            self.pos += 1;
                        }
                    }
                    self.function_body(name, script)?;
                    return Ok(Parsed::Merged);
                }
                "[[" => {
                    self.skip_word();
                    return self.test_command(connector).map(Parsed::Segment);
                }
                _ => break,
            }
        }
        if consumed_keyword && self.peek() == Some('(') {
            return Ok(Parsed::Keyword);
        }
        self.simple_command(connector, script)
    }

    fn simple_command(
        &mut self,
        connector: Connector,
        script: &mut Script,
    ) -> Result<Parsed, LexError> {
        let mut segment = Segment::new(connector);
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else { break };
            match c {
                '\n' | ';' | '|' | ')' => break,
                '&' if self.peek_at(1) != Some('>') => break,
                '#' => break,
                '<' | '>' if self.peek_at(1) == Some('(') => {
                    let word = self.process_substitution()?;
                    segment.words.push(word);
                }
                '<' | '>' | '&' => {
                    let redirect = self.redirect(None)?;
                    segment.redirects.push(redirect);
                }
                '(' => {
                    if segment.words.len() == 1 && segment.assignments.is_empty() {
                        // `name() body`: a function definition.
                        self.pos += 1;
                        self.skip_blanks();
                        if self.peek() == Some(')') {
                            self.pos += 1;
                        } else if !self.lenient {
                            return Err(self.error("expected `)` in function definition"));
                        }
                        let name = segment.words[0].text().to_string();
                        self.function_body(name, script)?;
                        return Ok(Parsed::Merged);
                    }
                    if !self.lenient {
                        return Err(self.error("unexpected `(`"));
                    }
                    self.pos += 1;
                }
                _ => {
                    let start = self.pos;
                    let word = self.parse_word()?;
                    let all_digits = self.pos > start
                        && self
                            .chars
                            .get(start..self.pos)
                            .is_some_and(|w| w.iter().all(char::is_ascii_digit));
                    if all_digits
                        && matches!(self.peek(), Some('<' | '>'))
                        && self.peek_at(1) != Some('(')
                    {
                        let fd = self.slice(start, self.pos).parse().ok();
                        let redirect = self.redirect(fd)?;
                        segment.redirects.push(redirect);
                    } else if segment.words.is_empty()
                        && let Some(assignment) = split_assignment(&word)
                    {
                        if word
                            .text()
                            .split('=')
                            .next()
                            .is_some_and(|n| n.contains('['))
                        {
                            script.features.arithmetic = true;
                        }
                        segment.assignments.push(assignment);
                        if self.peek() == Some('(') {
                            // `name=(a b c)`: an array; its elements are evaluated.
                            self.pos += 1;
                            self.array_elements(&mut segment)?;
                        }
                    } else {
                        segment.words.push(word);
                    }
                }
            }
        }
        Ok(Parsed::Segment(segment))
    }

    fn array_elements(&mut self, segment: &mut Segment) -> Result<(), LexError> {
        loop {
            self.spend(1)?;
            self.skip_space()?;
            match self.peek() {
                Some(')') => {
                    self.pos += 1;
                    return Ok(());
                }
                None => {
                    if self.lenient {
                        return Ok(());
                    }
                    return Err(self.error("missing `)` after array"));
                }
                Some(c) if is_meta(c) => {
                    if !self.lenient {
                        return Err(self.error("unexpected operator in array"));
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

    fn function_body(&mut self, name: String, script: &mut Script) -> Result<(), LexError> {
        self.skip_space()?;
        self.enter()?;
        let body = match self.peek() {
            Some('(') => {
                self.pos += 1;
                self.parse_script(Closer::Paren)
            }
            _ if self.peek_reserved() == Some("{") => {
                self.skip_word();
                self.parse_script(Closer::Brace)
            }
            _ => {
                // A body that is a single compound command (`f() if …`): lex one command.
                let mut body = Script::default();
                let parsed = self.parse_command(Connector::Start, Closer::Eof, &mut body);
                match parsed {
                    Ok(Parsed::Segment(segment)) => {
                        body.segments.push(segment);
                        Ok(body)
                    }
                    Ok(_) => Ok(body),
                    Err(e) => Err(e),
                }
            }
        };
        self.leave();
        script.features.function = true;
        script.functions.push(FunctionDef { name, body: body? });
        self.trailing_redirects(script)?;
        Ok(())
    }

    /// The plain unquoted word at the cursor, if it is one, without consuming it.
    pub(super) fn peek_reserved(&self) -> Option<&'static str> {
        // Reserved words are short ASCII: copy at most 8 bytes and compare those.
        let mut buffer = [0u8; 8];
        let mut len = 0;
        while let Some(&c) = self.chars.get(self.pos + len) {
            if is_meta(c) {
                break;
            }
            if len == buffer.len() || !c.is_ascii() || matches!(c, '\'' | '"' | '\\' | '$' | '`') {
                return None;
            }
            buffer[len] = c as u8;
            len += 1;
        }
        // A `match` on the bytes: one length switch, not a scan of the list.
        Some(match &buffer[..len] {
            b"{" => "{",
            b"}" => "}",
            b"if" => "if",
            b"then" => "then",
            b"elif" => "elif",
            b"else" => "else",
            b"fi" => "fi",
            b"do" => "do",
            b"done" => "done",
            b"while" => "while",
            b"until" => "until",
            b"for" => "for",
            b"select" => "select",
            b"case" => "case",
            b"esac" => "esac",
            b"in" => "in",
            b"function" => "function",
            b"!" => "!",
            b"[[" => "[[",
            b"]]" => "]]",
            b"time" => "time",
            b"coproc" => "coproc",
            _ => return None,
        })
    }

    pub(super) fn skip_word(&mut self) {
        while self.peek().is_some_and(|c| !is_meta(c)) {
            self.pos += 1;
        }
    }
}

/// Appends a nested script's segments and functions, joining its first segment by `connector`.
pub(super) fn absorb(script: &mut Script, inner: Script, connector: Connector) {
    let mut first = true;
    for mut segment in inner.segments {
        if first && segment.connector == Connector::Start {
            segment.connector = connector;
        }
        first = false;
        script.segments.push(segment);
    }
    script.functions.extend(inner.functions);
    let (outer, inner) = (&mut script.features, inner.features);
    outer.subshell |= inner.subshell;
    outer.group |= inner.group;
    outer.compound |= inner.compound;
    outer.comment |= inner.comment;
    outer.function |= inner.function;
    outer.background |= inner.background;
    outer.endless_loop |= inner.endless_loop;
    outer.arithmetic |= inner.arithmetic;
}

/// `NAME=value` (or `NAME+=value`) as an assignment, when the word starts that way unquoted.
fn split_assignment(word: &Word) -> Option<Assignment> {
    let Some(WordPart::Literal {
        text,
        quoted: false,
    }) = word.parts.first()
    else {
        return None;
    };
    let eq = text.find('=')?;
    let written = &text[..eq];
    let name = written.strip_suffix('+').unwrap_or(written);
    let name = name.split('[').next().unwrap_or(name);
    let whole = name == written;
    let mut chars = name.chars();
    let valid = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return None;
    }
    let rest = &text[eq + 1..];
    let mut parts = crate::policy::shell::ast::Parts::new();
    if !rest.is_empty() {
        parts.push(WordPart::Literal {
            text: rest.to_string(),
            quoted: false,
        });
    }
    parts.extend(word.parts[1..].iter().cloned());
    Some(Assignment {
        name: name.to_string(),
        value: Word::new(parts, false, false),
        whole,
    })
}
