//! The model writes CommonMark; Discord reads a dialect of it. Where the same characters mean
//! something else on Discord, they are escaped so the answer shows what the model wrote:
//! `<@…>`, `<#…>`, `<t:…>`, `</…>` and `<:…>` tokens (mentions, channels, timestamps, commands,
//! emoji: Discord would render a model-written id as someone's name), `||` (a spoiler would hide
//! the text), `__` (underline on Discord, bold in CommonMark) and a line starting `-# `
//! (Discord's small subtext). Code blocks and code spans are left exactly as written.

/// `markdown` with Discord's own syntax escaped outside code.
#[must_use]
pub fn for_discord(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len() + 16);
    let mut fence: Option<String> = None;
    for (i, line) in markdown.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let trimmed = line.trim_start();
        let ticks: String = trimmed.chars().take_while(|c| *c == '`').collect();
        match &fence {
            Some(open) => {
                if ticks.len() >= open.len() && trimmed[ticks.len()..].trim().is_empty() {
                    fence = None;
                }
                out.push_str(line);
            }
            None if ticks.len() >= 3 => {
                fence = Some(ticks);
                out.push_str(line);
            }
            None => escape_line(line, &mut out),
        }
    }
    out
}

/// One line of prose: code spans copied, the rest escaped.
fn escape_line(line: &str, out: &mut String) {
    let indent = line.len() - line.trim_start().len();
    let rest = &line[indent..];
    out.push_str(&line[..indent]);
    if rest.starts_with("-# ") {
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
            out.extend(&chars[i..i + run]);
            i += run;
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
    }
}
