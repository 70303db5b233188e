//! The model writes CommonMark; Discord reads a dialect of it. Where the same characters mean
//! something else on Discord, they are escaped so the answer shows what the model wrote:
//! `<@…>`, `<#…>`, `<t:…>`, `</…>` and `<:…>` tokens (mentions, channels, timestamps, commands,
//! emoji: Discord would render a model-written id as someone's name), `||` (a spoiler would hide
//! the text), `__` (underline on Discord, bold in CommonMark), and a line starting `-# `
//! (Discord's small subtext) or `>>> ` (a quote to the end of the message). Code blocks, code
//! spans, links (`https://…`, `<https://…>`, a `](…)` target) and what the model escaped
//! itself are left exactly as written.

/// `markdown` with Discord's own syntax escaped outside code.
#[must_use]
pub fn for_discord(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len() + 16);
    let mut fence: Option<String> = None;
    for (i, line) in markdown.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match &fence {
            Some(open) => {
                let trimmed = line.trim_start();
                let ticks = trimmed.chars().take_while(|c| *c == '`').count();
                if ticks >= open.len() && trimmed[ticks..].trim().is_empty() {
                    fence = None;
                }
                out.push_str(line);
            }
            // A run of three or more backticks the line does not close opens a block that
            // runs over the following lines (at the start of the line or not).
            None => fence = escape_line(line, &mut out),
        }
    }
    out
}

/// One line of prose: code spans and links copied, the rest escaped. Returns the fence a
/// code block it opens (and does not close) is waiting for.
fn escape_line(line: &str, out: &mut String) -> Option<String> {
    let indent = line.len() - line.trim_start().len();
    let rest = &line[indent..];
    out.push_str(&line[..indent]);
    if rest.starts_with("-# ") || rest.starts_with(">>> ") {
        out.push('\\');
    }
    let chars: Vec<char> = rest.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '`' {
            // A code span: from a run of backticks to the next run of the same length.
            let run = chars[i..].iter().take_while(|c| **c == '`').count();
            if let Some(end) = closing_run(&chars, i + run, run) {
                out.extend(&chars[i..end + run]);
                i = end + run;
                continue;
            }
            // Unclosed: three or more open a block over the next lines; fewer are text.
            if run >= 3 {
                out.extend(&chars[i..]);
                return Some("`".repeat(run));
            }
            out.extend(&chars[i..i + run]);
            i += run;
            continue;
        }
        if c == '\\' {
            // The model escaped the next character itself: both stay as written.
            out.extend(&chars[i..(i + 2).min(chars.len())]);
            i += 2;
            continue;
        }
        let link = link_len(&chars[i..], i > 0 && chars[i - 1] == ']');
        if link > 0 {
            out.extend(&chars[i..i + link]);
            i += link;
            continue;
        }
        let next = chars.get(i + 1).copied();
        match (c, next) {
            ('<', Some('@' | '#' | '/' | ':')) => out.push_str("\\<"),
            ('<', Some('t' | 'a')) if chars.get(i + 2) == Some(&':') => out.push_str("\\<"),
            ('|', Some('|')) => {
                out.push_str("\\|\\|");
                i += 1;
            }
            ('_', Some('_')) => {
                out.push_str("\\_\\_");
                i += 1;
            }
            _ => out.push(c),
        }
        i += 1;
    }
    None
}

/// How many characters of a link start here (0 when none does): a bare `http(s)://` URL up
/// to the next space, an autolink `<scheme://…>`, or a Markdown link's `(target)` right after
/// its `]`. Discord reads backslashes inside them as part of the address.
fn link_len(chars: &[char], after_bracket: bool) -> usize {
    let starts = |prefix: &str| {
        prefix.chars().count() <= chars.len()
            && chars.iter().zip(prefix.chars()).all(|(a, b)| *a == b)
    };
    let until = |from: usize, end: char| {
        chars[from..]
            .iter()
            .position(|c| *c == end || c.is_whitespace())
            .filter(|at| chars[from + at] == end)
            .map_or(0, |at| from + at + 1)
    };
    if starts("https://") || starts("http://") {
        return chars.iter().take_while(|c| !c.is_whitespace()).count();
    }
    if starts("<https://") || starts("<http://") {
        return until(1, '>');
    }
    if after_bracket && starts("(") {
        return until(1, ')');
    }
    0
}

/// Where the run of exactly `run` backticks that closes a span starting at `from` begins.
fn closing_run(chars: &[char], from: usize, run: usize) -> Option<usize> {
    let mut i = from;
    while i < chars.len() {
        if chars[i] == '`' {
            let len = chars[i..].iter().take_while(|c| **c == '`').count();
            if len == run {
                return Some(i);
            }
            i += len;
        } else {
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::for_discord;

    #[test]
    fn discord_tokens_spoilers_underline_and_subtext_are_shown_as_written() {
        let cases = [
            ("ask <@123456> about it", "ask \\<@123456> about it"),
            ("role <@&42> and <#77>", "role \\<@&42> and \\<#77>"),
            ("at <t:1700000000:R>", "at \\<t:1700000000:R>"),
            (
                "run </stop:1> or <:smile:9> <a:wave:8>",
                "run \\</stop:1> or \\<:smile:9> \\<a:wave:8>",
            ),
            ("the answer is ||42||", "the answer is \\|\\|42\\|\\|"),
            ("call __init__ first", "call \\_\\_init\\_\\_ first"),
            ("-# small print", "\\-# small print"),
            ("  -# indented", "  \\-# indented"),
            // What Discord reads as CommonMark does is left alone.
            (
                "**bold** _it_ a < b, x<y, <https://x.y>",
                "**bold** _it_ a < b, x<y, <https://x.y>",
            ),
            ("a | b | c", "a | b | c"),
            (">>> rest of it", "\\>>> rest of it"),
            // Links keep their addresses; what the model escaped stays escaped once.
            (
                "see https://docs.python.org/3/reference/datamodel.html#object.__init__ and <https://x.y/a__b> or [it](https://x.y/p||q) __x__",
                "see https://docs.python.org/3/reference/datamodel.html#object.__init__ and <https://x.y/a__b> or [it](https://x.y/p||q) \\_\\_x\\_\\_",
            ),
            ("already \\<@1> escaped", "already \\<@1> escaped"),
        ];
        for (model, shown) in cases {
            assert_eq!(for_discord(model), shown, "{model}");
        }
    }

    #[test]
    fn code_is_left_exactly_as_written() {
        let text = "use `a__b || <@1>` here\n```rust\nlet x = a__b || <@1>;\n-# no\n```\n``x `<@1>` y`` and <@2>";
        assert_eq!(
            for_discord(text),
            "use `a__b || <@1>` here\n```rust\nlet x = a__b || <@1>;\n-# no\n```\n``x `<@1>` y`` and \\<@2>"
        );
        // An unclosed span is not code: what follows is still escaped.
        assert_eq!(for_discord("a ` b <@1>"), "a ` b \\<@1>");
        // A one-line block is a span; a block opened mid-line runs over the next lines.
        assert_eq!(for_discord("```x <@1>``` <@2>"), "```x <@1>``` \\<@2>");
        assert_eq!(
            for_discord("run: ```\nlet a__b = <@1>;\n```\n<@2>"),
            "run: ```\nlet a__b = <@1>;\n```\n\\<@2>"
        );
    }
}
