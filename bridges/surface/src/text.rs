//! Showing text as it is. A card asks a human to approve what runs, so what it shows must be
//! what runs: a right-to-left override (U+202E) can make `rm -rf ~/x` read as something else,
//! a carriage return or an escape sequence can paint over a line on a terminal, and a
//! zero-width character hides inside a word. Cards show such characters escaped (`\u202E`,
//! `\r`, `\x1b`) on every surface, the console included; prose (an answer) only loses the ones
//! that rewrite the display.

/// How much of the text keeps its layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Several lines (a command, a diff, a question): newlines and tabs stay.
    Lines,
    /// One line (a button label): newlines and tabs are escaped too.
    Line,
}

/// Characters that change how the text around them is displayed without being seen: bidi
/// embeddings, overrides, isolates and marks, zero-width spaces and joiners, the word joiner
/// and invisible operators, the byte-order mark, soft hyphen, and the Mongolian vowel separator.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{061C}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{FEFF}'
    )
}

/// Characters that rewrite what is displayed: bidi embeddings, overrides and isolates.
fn rewrites_display(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\r' => out.push_str("\\r"),
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
        c => out.push_str(&format!("\\u{:04X}", c as u32)),
    }
}

/// The text with every control and invisible character escaped (see [`Layout`] for which
/// whitespace stays).
#[must_use]
pub fn show_exactly(text: &str, layout: Layout) -> String {
    let keeps = |c: char| layout == Layout::Lines && matches!(c, '\n' | '\t');
    if !text
        .chars()
        .any(|c| (c.is_control() && !keeps(c)) || is_invisible(c))
    {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if (c.is_control() && !keeps(c)) || is_invisible(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

/// Prose (a model's answer, a progress line): newlines and tabs stay, and so do the
/// zero-width joiners and direction marks real text uses (emoji sequences, Arabic and Hebrew);
/// other control characters (a terminal escape, a carriage return) and the bidi overrides that
/// rewrite the display are escaped.
#[must_use]
pub fn show_prose(text: &str) -> String {
    let escaped = |c: char| (c.is_control() && !matches!(c, '\n' | '\t')) || rewrites_display(c);
    if !text.chars().any(escaped) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if escaped(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cards_show_what_runs() {
        assert_eq!(
            show_exactly("rm -rf ~/\u{202E}txt.exe\r\x1b[2K ok", Layout::Lines),
            "rm -rf ~/\\u202Etxt.exe\\r\\x1b[2K ok"
        );
        assert_eq!(
            show_exactly("a\u{200B}b\u{FEFF}c\u{2066}d\u{7f}e\u{85}", Layout::Lines),
            "a\\u200Bb\\uFEFFc\\u2066d\\x7fe\\x85"
        );
        assert_eq!(
            show_exactly("line\n\tindented", Layout::Lines),
            "line\n\tindented"
        );
        assert_eq!(show_exactly("one\ntwo\tx", Layout::Line), "one\\ntwo\\tx");
        assert_eq!(
            show_exactly("plain ünïcode ✓", Layout::Line),
            "plain ünïcode ✓"
        );
    }

    #[test]
    fn prose_keeps_real_text() {
        let family = "👨\u{200D}👩\u{200D}👧 \u{200F}שלום";
        assert_eq!(show_prose(family), family);
        assert_eq!(
            show_prose("a\u{202E}b\x1b[31mc\rd\n"),
            "a\\u202Eb\\x1b[31mc\\rd\n"
        );
    }
}
