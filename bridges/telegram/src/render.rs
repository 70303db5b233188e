//! Markdown to Telegram HTML (`<b> <i> <s> <code> <pre> <a>`, everything else escaped), and
//! splitting an answer into messages under Telegram's limit, measured on the rendered text.

use tollgate_surface::limits::TELEGRAM_MESSAGE;
use tollgate_surface::split::split_markdown;

/// `&`, `<` and `>` escaped, as Telegram's HTML parse mode requires.
#[must_use]
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The longest prefix of `text` within `units` UTF-16 code units, and whether it is shorter
/// than `text`.
#[must_use]
pub fn cut_utf16(text: &str, units: usize) -> (&str, bool) {
    let mut used = 0;
    for (at, c) in text.char_indices() {
        used += c.len_utf16();
        if used > units {
            return (&text[..at], true);
        }
    }
    (text, false)
}

/// Inline Markdown (one line, outside code blocks) as Telegram HTML.
#[must_use]
pub fn inline(line: &str) -> String {
    let mut out = String::with_capacity(line.len() + 16);
    let mut i = 0; // a byte offset, always on a character boundary
    let mut previous: Option<char> = None;
    while i < line.len() {
        let rest = &line[i..];
        let Some(c) = rest.chars().next() else { break };
        if c == '`'
            && let Some(end) = rest[1..].find('`')
        {
            out.push_str(&format!("<code>{}</code>", escape(&rest[1..1 + end])));
            i += end + 2;
            previous = Some('`');
            continue;
        }
        if let Some((tag, marker)) = [("b", "**"), ("b", "__"), ("s", "~~")]
            .iter()
            .find(|(_, m)| rest.starts_with(m))
            && let Some(end) = rest[2..].find(marker).filter(|e| *e > 0)
        {
            out.push_str(&format!("<{tag}>{}</{tag}>", inline(&rest[2..2 + end])));
            i += end + 4;
            previous = Some('*');
            continue;
        }
        if (c == '*' || c == '_')
            && previous.is_none_or(|p| !p.is_alphanumeric())
            && let Some(end) = rest[1..].find(c).filter(|e| *e > 0)
            && rest[1 + end + 1..]
                .chars()
                .next()
                .is_none_or(|a| !a.is_alphanumeric())
        {
            out.push_str(&format!("<i>{}</i>", inline(&rest[1..1 + end])));
            i += end + 2;
            previous = Some(c);
            continue;
        }
        if c == '['
            && let Some(close) = rest.find("](")
            && let Some(end) = rest[close..].find(')')
        {
            let text = &rest[1..close];
            let url = &rest[close + 2..close + end];
            if url.starts_with("http://") || url.starts_with("https://") {
                out.push_str(&format!(
                    "<a href=\"{}\">{}</a>",
                    escape(url).replace('"', "&quot;"),
                    escape(text)
                ));
                i += close + end + 1;
                previous = Some(')');
                continue;
            }
        }
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            other => out.push(other),
        }
        i += c.len_utf8();
        previous = Some(c);
    }
    out
}

/// A whole Markdown text as Telegram HTML; an unclosed fence is closed at the end.
#[must_use]
pub fn markdown_to_html(markdown: &str) -> String {
    let mut out = Vec::new();
    let mut in_code = false;
    for line in markdown.lines() {
        if let Some(lang) = line.trim_start().strip_prefix("```") {
            if in_code {
                out.push("</code></pre>".to_string());
            } else if lang.trim().is_empty() {
                out.push("<pre><code>".to_string());
            } else {
                out.push(format!(
                    "<pre><code class=\"language-{}\">",
                    escape(lang.trim())
                ));
            }
            in_code = !in_code;
            continue;
        }
        if in_code {
            out.push(escape(line));
        } else if let Some(heading) = line.trim_start().strip_prefix('#') {
            out.push(format!(
                "<b>{}</b>",
                inline(heading.trim_start_matches('#').trim())
            ));
        } else {
            out.push(inline(line));
        }
    }
    if in_code {
        out.push("</code></pre>".to_string());
    }
    // Opening and closing fence markers sit on their own lines; join them to the code.
    out.join("\n")
        .replace("<pre><code>\n", "<pre><code>")
        .replace("\">\n", "\">")
        .replace("\n</code></pre>", "</code></pre>")
}

/// The rendered length of one line in UTF-16 code units, as Telegram counts (an upper bound:
/// fence lines count their markup), given whether it sits inside a code block.
fn line_len(line: &str, in_code: bool) -> usize {
    if let Some(lang) = line.trim_start().strip_prefix("```") {
        return if in_code {
            "</code></pre>".len()
        } else {
            "<pre><code class=\"language-\">".len() + escape(lang.trim()).encode_utf16().count()
        };
    }
    if in_code {
        escape(line).encode_utf16().count()
    } else {
        inline(line).encode_utf16().count() + "<b></b>".len()
    }
}

/// An answer as Telegram messages (HTML), each under the limit.
#[must_use]
pub fn answer_messages(markdown: &str) -> Vec<String> {
    split_markdown(markdown, TELEGRAM_MESSAGE, line_len)
        .iter()
        .map(|chunk| markdown_to_html(chunk))
        .collect()
}

/// Plain text split under the limit (UTF-16 code units, as Telegram counts) on line
/// boundaries: the fallback when Telegram rejects the HTML.
#[must_use]
pub fn plain_messages(text: &str, limit: usize) -> Vec<String> {
    let limit = limit.max(2);
    let mut out = Vec::new();
    let mut current = String::new();
    let mut current_units = 0;
    for line in text.split_inclusive('\n') {
        let mut rest = line;
        while !rest.is_empty() {
            let (part, _) = cut_utf16(rest, limit);
            let units = part.encode_utf16().count();
            if current_units + units > limit {
                out.push(std::mem::take(&mut current));
                current_units = 0;
            }
            current.push_str(part);
            current_units += units;
            rest = &rest[part.len()..];
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_falls_between_characters() {
        assert_eq!(cut_utf16("a😀b", 2), ("a", true));
        assert_eq!(cut_utf16("a😀b", 3), ("a😀", true));
        assert_eq!(cut_utf16("a😀b", 4), ("a😀b", false));
    }

    #[test]
    fn converts_and_escapes() {
        assert_eq!(inline("a < b & c > d"), "a &lt; b &amp; c &gt; d");
        assert_eq!(
            inline("**bold** and *it* and `x<y`"),
            "<b>bold</b> and <i>it</i> and <code>x&lt;y</code>"
        );
        assert_eq!(inline("snake_case_name stays"), "snake_case_name stays");
        assert_eq!(
            inline("[docs](https://e.x/?a=1&b=\"2\")"),
            "<a href=\"https://e.x/?a=1&amp;b=&quot;2&quot;\">docs</a>"
        );
        assert_eq!(
            inline("[bad](javascript:alert(1))"),
            "[bad](javascript:alert(1))"
        );
        assert_eq!(
            markdown_to_html("# Title\n```rust\nlet a = 1 < 2;\n```\ndone"),
            "<b>Title</b>\n<pre><code class=\"language-rust\">let a = 1 &lt; 2;</code></pre>\ndone"
        );
    }

    #[test]
    fn a_long_answer_splits_under_the_limit_with_fences_balanced() {
        let mut answer = String::from("Here is the log:\n```text\n");
        for i in 0..400 {
            answer.push_str(&format!("line {i}: <value> & more text here\n"));
        }
        answer.push_str("```\nThat is all **folks**.\n");
        while answer.len() < 10_000 {
            answer.push_str("More words & symbols < > to fill the answer.\n");
        }
        let messages = answer_messages(&answer);
        assert!(messages.len() >= 3, "{}", messages.len());
        for m in &messages {
            assert!(
                m.chars().count() <= TELEGRAM_MESSAGE,
                "{}",
                m.chars().count()
            );
            assert_eq!(
                m.matches("<pre>").count(),
                m.matches("</pre>").count(),
                "fences balanced"
            );
            assert!(!m.contains("<value>"), "escaped");
        }
        // Nothing lost: every line shows up once.
        let all = messages.join("\n");
        for i in 0..400 {
            assert_eq!(all.matches(&format!("line {i}:")).count(), 1, "line {i}");
        }
        let one_line = "x".repeat(10_000);
        let parts = answer_messages(&one_line);
        assert!(parts.iter().all(|p| p.chars().count() <= TELEGRAM_MESSAGE));
        assert_eq!(
            parts.concat().replace('\n', "").len(),
            10_000,
            "a cut line loses nothing"
        );
        let plain = plain_messages(&answer, 4096);
        assert!(plain.iter().all(|p| p.encode_utf16().count() <= 4096));
        assert_eq!(plain.concat(), answer);
    }

    /// Telegram counts UTF-16 code units: 3,000 emoji are 6,000 of them, over its 4,096 in
    /// one message though only 3,000 characters.
    #[test]
    fn answers_of_wide_characters_split_as_telegram_counts() {
        let lines = "😀".repeat(100) + "\n";
        let answer = lines.repeat(30);
        let messages = answer_messages(&answer);
        assert!(messages.len() >= 2, "{}", messages.len());
        for m in &messages {
            assert!(m.encode_utf16().count() <= TELEGRAM_MESSAGE);
        }
        let one_line = "😀".repeat(3000);
        for p in answer_messages(&one_line) {
            assert!(p.encode_utf16().count() <= TELEGRAM_MESSAGE);
        }
        let plain = plain_messages(&one_line, 4096);
        assert_eq!(plain.len(), 2);
        assert!(plain.iter().all(|p| p.encode_utf16().count() <= 4096));
        assert_eq!(plain.concat(), one_line);
    }
}
