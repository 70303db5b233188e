//! Variables a command assigns from literals and then uses: `x=-rf; rm $x /etc` is
//! `rm -rf /etc`, `c=shadow; cat /etc/$c` reads `/etc/shadow`. The denylist reads the words
//! again with those values put in, as bash will (an unquoted value split at blanks), so a
//! value parked in a variable hides nothing. Variables from anywhere else (the environment,
//! `read`, a substitution) stay unknown: other rules mark arguments built from them.

use crate::policy::shell::ast::{Segment, Word, WordPart};
use crate::policy::shell::command::command_name;
use std::collections::HashMap;

/// The longest value followed into later words.
const MAX_VALUE_BYTES: usize = 256;

/// Values assigned from literals so far, by name.
#[derive(Default)]
pub struct Known {
    values: HashMap<String, String>,
}

impl Known {
    /// Notes what `segment` assigns: a literal value is known; anything else makes the name
    /// unknown again.
    pub fn record(&mut self, segment: &Segment) {
        // `x=1 cmd` sets x for cmd only; a bare `x=1` sets it for what follows.
        if segment.words.is_empty() {
            for assignment in &segment.assignments {
                let value = assignment.value.literal().filter(|_| assignment.whole);
                self.set(&assignment.name, value);
            }
            return;
        }
        let declares = matches!(
            segment.words.first().and_then(command_name),
            Some("export" | "declare" | "typeset" | "local" | "readonly")
        );
        if !declares && self.values.is_empty() {
            return;
        }
        // `declare -l c=SHADOW` lowers it, `-n` makes a nameref, `-i` evaluates it: the value
        // held is not the one written.
        let transformed = declares
            && segment.words.iter().skip(1).any(|w| {
                w.text().starts_with('-') && w.text().contains(['l', 'u', 'c', 'n', 'i', 'a', 'A'])
            });
        for word in segment.words.iter().skip(1) {
            let text = word.text();
            if declares && let Some((name, _)) = text.split_once('=') {
                let value = word
                    .literal()
                    .and_then(|t| t.split_once('='))
                    .map(|(_, v)| v)
                    .filter(|_| !transformed);
                self.set(name, value);
            } else if !text.starts_with('-') {
                // `read x`, `unset x`, `printf -v x`, `mapfile x`: whatever it was is gone.
                self.values.remove(text);
            }
        }
    }

    fn set(&mut self, name: &str, value: Option<&str>) {
        // `export x+=y`, `declare a[1]=y`: a part of the value changes, so it is unknown.
        if name.ends_with('+') || name.contains('[') {
            self.values
                .remove(name.trim_end_matches('+').split('[').next().unwrap_or(name));
            return;
        }
        match value {
            // A long value is not followed: put back into every use it would make the check's
            // work grow with the command twice over (it stays unknown; other rules see that).
            Some(value) if value.len() <= MAX_VALUE_BYTES => {
                self.values.insert(name.to_string(), value.to_string());
            }
            _ => {
                self.values.remove(name);
            }
        }
    }

    /// `words` with the known variables' values put in, when any word uses one.
    #[must_use]
    pub fn substituted(&self, words: &[Word]) -> Option<Vec<Word>> {
        if self.values.is_empty() {
            return None;
        }
        let mut used = false;
        let mut out = Vec::new();
        for word in words {
            match self.value_of(word) {
                Some((text, split)) => {
                    used = true;
                    if split {
                        out.extend(text.split_whitespace().map(Word::plain));
                    } else {
                        out.push(Word::plain(&text));
                    }
                }
                None => out.push(word.clone()),
            }
        }
        used.then_some(out)
    }

    /// The word's text with known values in, and whether an unquoted value in it is split;
    /// `None` when it uses no known variable or uses anything else that is not a literal.
    fn value_of(&self, word: &Word) -> Option<(String, bool)> {
        let mut text = String::new();
        let mut used = false;
        let mut split = false;
        for part in &word.parts {
            match part {
                WordPart::Literal { text: t, .. } => text.push_str(t),
                WordPart::Param {
                    name, op, quoted, ..
                } if op.is_empty() => {
                    let value = self.values.get(name)?;
                    text.push_str(value);
                    used = true;
                    split |= !quoted;
                }
                _ => return None,
            }
        }
        used.then_some((text, split))
    }
}
