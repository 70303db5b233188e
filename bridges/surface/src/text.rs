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

/// Characters that are not seen, or that change how the text around them is displayed: bidi
/// embeddings, overrides, isolates and marks, zero-width spaces and joiners, the word joiner,
/// invisible operators and deprecated format controls, the byte-order mark, soft hyphen, the
/// combining grapheme joiner, Mongolian and Khmer invisibles, Hangul fillers (which pass as
/// letters in identifiers), line and paragraph separators, interlinear annotation marks,
/// variation selectors, tag characters and musical formatting controls: Unicode's
/// default-ignorable set and format controls, as far as they occur in text a model writes.
#[must_use]
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// Characters that rewrite what is displayed: bidi embeddings, overrides and isolates, and
/// line and paragraph separators (a new line where the text shows none).
fn rewrites_display(c: char) -> bool {
    matches!(c, '\u{2028}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
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
    escape_where(text, |c| (c.is_control() && !keeps(c)) || is_invisible(c))
}

/// Prose (a model's answer, a progress line): newlines and tabs stay, and so do the
/// zero-width joiners and direction marks real text uses (emoji sequences, Arabic and Hebrew);
/// other control characters (a terminal escape, a carriage return) and the bidi overrides that
/// rewrite the display are escaped.
#[must_use]
pub fn show_prose(text: &str) -> String {
    escape_where(text, |c| {
        (c.is_control() && !matches!(c, '\n' | '\t')) || rewrites_display(c)
    })
}

/// `text` with the characters `escaped` picks written as escapes (unchanged, without a copy
/// of the work, when there are none).
fn escape_where(text: &str, escaped: impl Fn(char) -> bool) -> String {
    if !text.chars().any(&escaped) {
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
        // Hangul fillers pass as letters in identifiers; tags and selectors hide data.
        assert_eq!(
            show_exactly(
                "let a\u{3164} = 1;\u{2028}x\u{E0041}\u{FE0F}",
                Layout::Lines
            ),
            "let a\\u3164 = 1;\\u2028x\\uE0041\\uFE0F"
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
