//! Long answers cut into messages a platform accepts: on line boundaries, code fences kept
//! balanced. Each platform measures a line as it renders it.

/// Splits Markdown into messages whose rendered text fits `limit` characters (as `measure`
/// counts a line's rendered length, given whether it sits inside a code block), on line
/// boundaries, each message's code fences balanced (a fence cut between messages is closed and
/// reopened). A single line too long on its own is cut. Lengths are counted as lines are
/// added (an upper bound), so the work is linear in the answer.
#[must_use]
pub fn split_markdown(
    markdown: &str,
    limit: usize,
    measure: impl Fn(&str, bool) -> usize,
) -> Vec<String> {
    // Room for the markup that closes a fence cut between messages, with a margin.
    const CLOSE: usize = "</code></pre>".len() + 1;
    let budget = limit.saturating_sub(CLOSE + 64).max(16);
    let line_len = |line: &str, in_code: bool| measure(line, in_code);
    let mut messages = Vec::new();
    let mut current: Vec<String> = Vec::new();
    let mut current_len = 0usize;
    let mut open_fence: Option<String> = None;
    let mut flush = |current: &mut Vec<String>, current_len: &mut usize, open: &Option<String>| {
        let mut text = current.join("\n");
        if open.is_some() {
            text.push_str("\n```");
        }
        if !text.trim().is_empty() {
            messages.push(text);
        }
        current.clear();
        *current_len = 0;
        if let Some(fence) = open {
            current.push(fence.clone());
            *current_len = line_len(fence, false) + 1;
        }
    };
    for line in markdown.lines() {
        let in_code = open_fence.is_some();
        // A line that could never fit is cut into pieces that do.
        let pieces: Vec<String> = if line_len(line, in_code) > budget {
            let chars: Vec<char> = line.chars().collect();
            chars
                .chunks((budget / 6).max(1))
                .map(|c| c.iter().collect())
                .collect()
        } else {
            vec![line.to_string()]
        };
        for piece in pieces {
            let length = line_len(&piece, open_fence.is_some()) + 1;
            if current_len + length > budget && !current.is_empty() {
                flush(&mut current, &mut current_len, &open_fence);
            }
            if piece.trim_start().starts_with("```") {
                open_fence = match open_fence {
                    Some(_) => None,
                    None => Some(piece.trim_start().to_string()),
                };
            }
            current_len += length;
            current.push(piece);
        }
    }
    if !current.is_empty() {
        let open = open_fence.clone();
        flush(&mut current, &mut current_len, &open);
        // A reopened fence with nothing after it is not a message.
    }
    messages.retain(|m| !m.trim().is_empty() && m.trim() != "```");
    messages
}
