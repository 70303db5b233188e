//! sed scripts that run programs or write files: the `e` command and the `s///e` flag run
//! shell commands; `w`/`W` and the `s///w FILE` flag write files. A sed that only prints is
//! read-only, so these hide a program or a write inside an otherwise harmless-looking tool.
//! The scan follows GNU sed's grammar closely enough to find every command letter; anything it
//! cannot follow counts as a hazard (fail closed).

use super::args::{Args, option_is};

/// Why a sed command line runs a program or writes a file: its scripts (`-e S`, clustered
/// `-ne'S'`, `--expression=S` or a prefix of it, else the first operand) are read, and a script
/// from a file (`-f`) cannot be judged.
pub fn hazard_in_args(args: Args<'_>) -> Option<String> {
    let texts: Vec<&str> = args.texts().collect();
    let mut scripts = Vec::new();
    let mut explicit = false;
    let mut first_operand = None;
    let mut i = 0;
    while i < texts.len() {
        let t = texts[i];
        let next = texts.get(i + 1).copied();
        if t == "--" {
            if first_operand.is_none() {
                first_operand = next;
            }
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (given, value) = match long.split_once('=') {
                Some((g, v)) => (g, Some(v)),
                None => (long, None),
            };
            let given = format!("--{given}");
            if option_is(&given, "--expression") {
                explicit = true;
                scripts.extend(value.or(next));
                i += if value.is_some() { 1 } else { 2 };
                continue;
            }
            if option_is(&given, "--file") {
                return Some("`sed -f` runs a script from a file nobody reviewed".into());
            }
            if option_is(&given, "--line-length") && value.is_none() {
                i += 1;
            }
            i += 1;
            continue;
        }
        if let Some(cluster) = t.strip_prefix('-').filter(|c| !c.is_empty()) {
            // Each letter is a flag until one takes a value: `e` and `f` take the rest of the
            // cluster or the next word, `l` a number, `i` an optional attached suffix.
            for (at, c) in cluster.char_indices() {
                let rest = &cluster[at + c.len_utf8()..];
                match c {
                    'e' => {
                        explicit = true;
                        if rest.is_empty() {
                            scripts.extend(next);
                            i += 1;
                        } else {
                            scripts.push(rest);
                        }
                        break;
                    }
                    'f' => {
                        return Some("`sed -f` runs a script from a file nobody reviewed".into());
                    }
                    'l' => {
                        if rest.is_empty() {
                            i += 1;
                        }
                        break;
                    }
                    'i' => break,
                    _ => {}
                }
            }
            i += 1;
            continue;
        }
        if first_operand.is_none() {
            first_operand = Some(t);
        }
        i += 1;
    }
    if !explicit {
        scripts.extend(first_operand);
    }
    scripts.iter().find_map(|s| hazard(s)).map(str::to_string)
}

/// Why a sed script runs a program or writes a file, if it does.
#[must_use]
pub fn hazard(script: &str) -> Option<&'static str> {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        i = skip_blank(&chars, i, true);
        let Some(&c) = chars.get(i) else { break };
        if c == '#' {
            i = line_end(&chars, i);
            continue;
        }
        i = match skip_address(&chars, i) {
            Some(next) => next,
            None => return Some("a sed address it cannot read"),
        };
        i = skip_blank(&chars, i, false);
        while chars.get(i) == Some(&'!') {
            i = skip_blank(&chars, i + 1, false);
        }
        let Some(&command) = chars.get(i) else { break };
        i += 1;
        match command {
            'e' => return Some("the sed `e` command runs a shell command"),
            'w' | 'W' => return Some("the sed `w` command writes a file"),
            's' => {
                let Some((after, flags_end)) = substitution(&chars, i) else {
                    return Some("a sed substitution it cannot read");
                };
                let flags: String = chars[after..flags_end].iter().collect();
                if flags.contains('e') {
                    return Some("the sed `s///e` flag runs the result as a shell command");
                }
                if flags.contains('w') {
                    return Some("the sed `s///w` flag writes a file");
                }
                i = flags_end;
            }
            'y' => {
                let Some(next) = delimited(&chars, i, 2) else {
                    return Some("a sed `y` command it cannot read");
                };
                i = next;
            }
            // Text runs to the end of the line, and on over lines that end in a backslash.
            'a' | 'i' | 'c' => {
                i = line_end(&chars, i);
                while i > 0 && chars[i - 1] == '\\' && i < chars.len() {
                    i = line_end(&chars, i + 1);
                }
            }
            // File names and labels run to the end of the line.
            'r' | 'R' | ':' => i = line_end(&chars, i),
            // Labels end at `;` or a newline.
            'b' | 't' | 'T' => {
                while i < chars.len() && !matches!(chars[i], ';' | '\n' | '}') {
                    i += 1;
                }
            }
            'q' | 'Q' | 'l' | 'L' => {
                while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == ' ') {
                    i += 1;
                }
            }
            'v' | 'F' | 'z' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P'
            | 'x' | '{' | '}' | ';' | '\n' => {
                if command == 'v' {
                    while i < chars.len() && !matches!(chars[i], ';' | '\n' | '}') {
                        i += 1;
                    }
                }
            }
            _ => return Some("a sed command it cannot read"),
        }
    }
    None
}

fn skip_blank(chars: &[char], mut i: usize, newlines_and_semicolons: bool) -> usize {
    while let Some(&c) = chars.get(i) {
        let blank = c == ' ' || c == '\t' || (newlines_and_semicolons && (c == '\n' || c == ';'));
        if !blank {
            break;
        }
        i += 1;
    }
    i
}

fn line_end(chars: &[char], mut i: usize) -> usize {
    while i < chars.len() && chars[i] != '\n' {
        i += 1;
    }
    i
}

/// Skips `N`, `$`, `/re/`, `\cREc`, `first~step`, and `addr1,addr2` / `addr,+N` / `addr,~N`.
fn skip_address(chars: &[char], start: usize) -> Option<usize> {
    let mut i = one_address(chars, start)?;
    if i > start {
        i = skip_blank(chars, i, false);
        if chars.get(i) == Some(&',') {
            i = skip_blank(chars, i + 1, false);
            if matches!(chars.get(i), Some('+' | '~')) {
                i += 1;
            }
            i = one_address(chars, i)?;
        }
    }
    // GNU's `I`/`M` modifiers after a regex address.
    while matches!(chars.get(i), Some('I' | 'M')) && i > start {
        i += 1;
    }
    Some(i)
}

fn one_address(chars: &[char], mut i: usize) -> Option<usize> {
    match chars.get(i) {
        Some('$') => Some(i + 1),
        Some(c) if c.is_ascii_digit() => {
            while chars
                .get(i)
                .is_some_and(|c| c.is_ascii_digit() || *c == '~')
            {
                i += 1;
            }
            Some(i)
        }
        Some('/') => delimited(chars, i, 1),
        Some('\\') => {
            let delimiter_at = i + 1;
            chars.get(delimiter_at)?;
            delimited(chars, delimiter_at, 1)
        }
        _ => Some(i),
    }
}

/// With `chars[at]` the delimiter, skips `parts` delimited parts (escapes honoured); returns
/// the index after the last delimiter.
fn delimited(chars: &[char], at: usize, parts: usize) -> Option<usize> {
    let delimiter = *chars.get(at)?;
    if delimiter == '\n' || delimiter == '\\' {
        return None;
    }
    let mut i = at + 1;
    let mut seen = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            c if c == delimiter => {
                seen += 1;
                i += 1;
                if seen == parts {
                    return Some(i);
                }
            }
            '\n' if delimiter != '\n' => return None,
            _ => i += 1,
        }
    }
    None
}

/// `s` at `start` (just after the `s`): returns where its flags start and end.
fn substitution(chars: &[char], start: usize) -> Option<(usize, usize)> {
    let after = delimited(chars, start, 2)?;
    let mut end = after;
    while end < chars.len() && !matches!(chars[end], ';' | '\n' | '}' | ' ' | '\t' | '#') {
        end += 1;
    }
    Some((after, end))
}

#[cfg(test)]
mod tests {
    use super::hazard;

    #[test]
    fn finds_commands_and_writes() {
        for script in [
            "e id",
            "1e touch x",
            "s/a/b/e",
            "s/x/id/ge",
            "s/a/b/w out.txt",
            "s|a|b|w /tmp/x",
            "w out",
            "1,5W out",
            "/re/!e cmd",
            "p;e id",
            "s/a/b/;w x",
            "$!{e id\n}",
            "\\%x%e id",
            "y/abc/xyz/;e",
            "1~2e ls",
        ] {
            assert!(hazard(script).is_some(), "{script:?}");
        }
    }

    #[test]
    fn reading_scripts_pass() {
        for script in [
            "s/a/b/g",
            "s/e/w/g",
            "s,/usr/bin,/bin,g",
            "1d",
            "/^#/d",
            "$!N;P;D",
            "y/abc/xyz/",
            "s/a\\/e/b/2",
            "a\\\nappended e w",
            "i text with e and w",
            "/start/,/end/{s/x/y/;p}",
            "=",
            "q5",
            "a\\\ne id",
        ] {
            assert_eq!(hazard(script), None, "{script:?}");
        }
    }
}
