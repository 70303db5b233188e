//! ANSI-C quoting (`$'…'`), decoded as bash 5.2 decodes it: the escapes it knows, octal kept
//! to its low byte, `\x`/`\u`/`\U` without digits and unknown escapes kept as written, `\cX`
//! (with `\c\\` taking both backslashes), and the string cut at a NUL.

use super::{LexError, Parser};

impl Parser<'_> {
    /// `$'…'` after the `$'`: C escapes decoded, so `$'\x72\x6d'` is `rm`.
    pub(super) fn ansi_c_quoted(&mut self) -> Result<String, LexError> {
        let start = self.pos;
        let mut out = self.ansi_c_text(start)?;
        self.literal
            .push((start, self.pos.saturating_sub(1).max(start)));
        // bash cuts the string at a NUL byte: `$'sudo\x00'` is `sudo`.
        if let Some(nul) = out.find('\0') {
            out.truncate(nul);
        }
        Ok(out)
    }

    fn ansi_c_text(&mut self, start: usize) -> Result<String, LexError> {
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                if self.lenient {
                    return Ok(out);
                }
                return Err(LexError {
                    kind: super::LexErrorKind::Syntax,
                    message: "unterminated $'…' quote".into(),
                    offset: start,
                });
            };
            self.pos += 1;
            match c {
                '\'' => return Ok(out),
                '\\' => {
                    let Some(e) = self.peek() else { continue };
                    self.pos += 1;
                    match e {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        'a' => out.push('\x07'),
                        'b' => out.push('\x08'),
                        'e' | 'E' => out.push('\x1b'),
                        'f' => out.push('\x0c'),
                        'v' => out.push('\x0b'),
                        // No digits after `\x`, `\u`, `\U`: bash keeps the escape as written.
                        'x' | 'u' | 'U' => {
                            let digits = match e {
                                'x' => 2,
                                'u' => 4,
                                _ => 8,
                            };
                            match self.radix_char(16, digits) {
                                Some(c) => out.push(c),
                                None => {
                                    out.push('\\');
                                    out.push(e);
                                }
                            }
                        }
                        '0'..='7' => {
                            self.pos -= 1;
                            // bash keeps the low byte: `\562` is `r` (0o562 & 0xff).
                            let value = self.radix_char(8, 3).map_or(0, u32::from) & 0xff;
                            out.push(char::from_u32(value).unwrap_or('\0'));
                        }
                        // `\cX`: the control character of X (`\c@` is NUL).
                        'c' => {
                            if let Some(x) = self.peek() {
                                self.pos += 1;
                                // bash reads `\c\\` as control-backslash: both backslashes go.
                                if x == '\\' && self.peek() == Some('\\') {
                                    self.pos += 1;
                                }
                                out.push(char::from(x as u8 & 0x1f));
                            }
                        }
                        '\\' | '\'' | '"' | '?' => out.push(e),
                        // An escape bash does not know keeps its backslash (`\#` is `\#`).
                        other => {
                            out.push('\\');
                            out.push(other);
                        }
                    }
                }
                other => out.push(other),
            }
        }
    }

    /// Up to `max` digits in `radix` as a character; `None` when there is no digit.
    fn radix_char(&mut self, radix: u32, max: usize) -> Option<char> {
        let mut value = 0u32;
        let mut taken = 0;
        while taken < max {
            let Some(digit) = self.peek().and_then(|c| c.to_digit(radix)) else {
                break;
            };
            value = value.saturating_mul(radix).saturating_add(digit);
            self.pos += 1;
            taken += 1;
        }
        (taken > 0).then(|| char::from_u32(value).unwrap_or('\u{fffd}'))
    }
}
