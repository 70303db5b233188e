//! awk programs that run programs or write files: `system(…)`, pipes (`print | "cmd"`,
//! `"cmd" | getline`, gawk's `|&`) and output redirections (`print > "file"`, `printf >> f`),
//! plus gawk's `@load`/`@include`. String and regex literals are skipped first, so
//! `/a|b/` and `"x > y"` are not mistaken for either.

use super::args::{Args, option_is};

/// Why an awk command line runs a program or writes a file: its program (the first operand,
/// or gawk's `-e`/`--source` texts) is read; a program from a file (`-f`, gawk's `-E`,
/// `--include`, `--load`, mawk's `-W exec`) cannot be judged.
pub fn hazard_in_args(args: Args<'_>) -> Option<String> {
    let texts: Vec<&str> = args.texts().collect();
    let from_file = |t: &str| format!("`awk {t}` runs a program from a file nobody reviewed");
    let mut programs = Vec::new();
    let mut i = 0;
    while i < texts.len() {
        let t = texts[i];
        let next = texts.get(i + 1).copied();
        let long = |name: &str| option_is(t, name);
        if long("--file") || long("--exec") || long("--include") || long("--load") {
            return Some(from_file(t));
        }
        if long("--source") {
            match t.split_once('=') {
                Some((_, v)) => programs.push(v),
                None => {
                    programs.extend(next);
                    i += 1;
                }
            }
            i += 1;
            continue;
        }
        match t {
            "--" => {
                programs.extend(next);
                break;
            }
            "-W" => {
                if next.is_some_and(|v| v.starts_with("e") || v.starts_with("ex")) {
                    return Some(from_file("-W exec"));
                }
                i += 2;
                continue;
            }
            _ if t.starts_with("-W") => {
                if t[2..].starts_with('e') {
                    return Some(from_file(t));
                }
            }
            _ if t.starts_with("--") => {}
            _ if t.starts_with('-') && t.len() > 1 => {
                let letter = t[1..].chars().next().unwrap_or('-');
                let attached = &t[1 + letter.len_utf8()..];
                match letter {
                    'f' | 'E' | 'i' | 'l' => return Some(from_file(t)),
                    'e' => {
                        if attached.is_empty() {
                            programs.extend(next);
                            i += 1;
                        } else {
                            programs.push(attached);
                        }
                    }
                    'F' | 'v' if attached.is_empty() => i += 1,
                    _ => {}
                }
            }
            program => {
                if programs.is_empty() {
                    programs.push(program);
                }
                break;
            }
        }
        i += 1;
    }
    programs.iter().find_map(|p| hazard(p)).map(str::to_string)
}

/// Why an awk program runs a program or writes a file, if it does.
#[must_use]
pub fn hazard(program: &str) -> Option<&'static str> {
    let code = strip_literals(program);
    let tokens = code.as_str();
    if contains_word(tokens, "system") {
        return Some("the awk program calls `system()`");
    }
    if tokens.contains("@load") || tokens.contains("@include") {
        return Some("the awk program loads code with `@load`/`@include`");
    }
    // gawk's indirect call, `f = "system"; @f("id")`: the function's name is a string's value,
    // which the check above cannot see.
    if tokens.contains('@') {
        return Some("the awk program calls a function named by a value (`@f(…)`)");
    }
    let chars: Vec<char> = tokens.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(i + 1).copied();
        // A lone `|` is always a pipe to or from a command in awk (`||` is "or").
        if c == '|' && prev != Some('|') && next != Some('|') {
            return Some("the awk program pipes to or from a command");
        }
    }
    if print_redirects(&chars) {
        return Some("the awk program writes output to a file");
    }
    None
}

/// The program with string literals emptied and regex literals removed, comments dropped.
fn strip_literals(program: &str) -> String {
    let chars: Vec<char> = program.chars().collect();
    let mut out = String::with_capacity(chars.len());
    let mut i = 0;
    // Whether a `/` here would begin a regex (an operand is expected) rather than divide.
    let mut operand_expected = true;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
                operand_expected = false;
                continue;
            }
            '/' if operand_expected => {
                i += 1;
                let mut in_class = false;
                while i < chars.len() && (chars[i] != '/' || in_class) && chars[i] != '\n' {
                    match chars[i] {
                        '\\' => i += 1,
                        '[' => in_class = true,
                        ']' => in_class = false,
                        _ => {}
                    }
                    i += 1;
                }
                i += 1;
                out.push_str("//");
                operand_expected = false;
                continue;
            }
            '#' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            _ => {}
        }
        out.push(c);
        if !c.is_whitespace() {
            operand_expected = matches!(
                c,
                '(' | ','
                    | '{'
                    | '}'
                    | ';'
                    | '!'
                    | '~'
                    | '&'
                    | '|'
                    | '='
                    | '+'
                    | '-'
                    | '*'
                    | '%'
                    | '^'
                    | '<'
                    | '>'
                    | '?'
                    | ':'
                    | '\n'
            );
        }
        i += 1;
    }
    out
}

/// `name` as a whole identifier.
fn contains_word(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + name.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        !ident(before) && !ident(after)
    })
}

/// A `print`/`printf` statement with `>` or `>>` outside parentheses (inside them it compares).
fn print_redirects(chars: &[char]) -> bool {
    let text: String = chars.iter().collect();
    for (at, _) in text.match_indices("print") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let mut depth = 0i32;
        for c in text[at..].chars() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                ';' | '}' | '\n' if depth <= 0 => break,
                '>' if depth <= 0 => return true,
                _ => {}
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::hazard;

    #[test]
    fn finds_programs_and_writes() {
        for program in [
            "BEGIN{system(\"id\")}",
            "{ system (\"rm x\") }",
            "BEGIN{f=\"system\"; @f(\"id\")}",
            "BEGIN { f = \"sys\" \"tem\"; @ f (\"id\") }",
            "{print | \"sh\"}",
            "{ \"date\" | getline d }",
            "{ print |& \"cat\" }",
            "{print > \"out\"}",
            "{printf \"%s\", $1 >> \"f\"}",
            "{ print $1 > $2 }",
            "@load \"filefuncs\"",
            "BEGIN { cmd = \"id\"; cmd | getline }",
        ] {
            assert!(hazard(program).is_some(), "{program}");
        }
    }

    #[test]
    fn reading_programs_pass() {
        for program in [
            "{print $1}",
            "$3 > 100",
            "$3 > 100 { print $1 }",
            "/a|b/ { print }",
            "{ print \"x > y | z\" }",
            "{ print ($1 > 2) }",
            "NR==1 || NR==2",
            "{ n = $1 / 2; print n }",
            "BEGIN { FS = \"|\" } { print $2 }",
            "{ systemd = 1 }",
            "# system(\"x\")\n{print}",
        ] {
            assert_eq!(hazard(program), None, "{program}");
        }
    }
}
