//! The command a segment really runs: its name normalized (`/bin/rm` and `\rm` are `rm`), the
//! wrappers in front of it looked through with their own options skipped (`sudo -u x`,
//! `env -i A=b`, `timeout 5`, `xargs -I{}` …), and the command strings a wrapper or shell
//! carries inside (`bash -c '…'`, `env -S '…'`, `watch '…'`, `eval '…'`, `trap '…'`).

use super::ast::Word;

/// Shells: `-c` runs their argument as a script.
pub const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash", "rbash", "yash",
];

/// Interpreters (named without their version suffix: `python3.11` is `python`).
pub const INTERPRETERS: &[&str] = &[
    "python",
    "pypy",
    "node",
    "nodejs",
    "deno",
    "bun",
    "ruby",
    "perl",
    "php",
    "lua",
    "luajit",
    "osascript",
    "pwsh",
    "powershell",
];

/// Programs that talk to the network.
pub const NETWORK_CLIENTS: &[&str] = &[
    "curl", "wget", "nc", "ncat", "netcat", "socat", "ssh", "scp", "sftp", "rsync", "ftp", "tftp",
    "telnet", "aria2c", "fetch", "http", "https", "xh",
];

/// A wrapper that runs the rest of its words as a command, and how to skip its own options.
struct Wrapper {
    name: &'static str,
    /// Options that take the next word as their value (or the rest of a short cluster).
    with_value: &'static [&'static str],
    /// Accepts `NAME=value` words before the command.
    assignments: bool,
    /// Positional words before the command (`timeout DURATION`, `chroot DIR`).
    positional: usize,
    /// An option whose value is itself a command line (`env -S`, `flock -c`).
    script_option: Option<&'static str>,
}

const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        name: "sudo",
        with_value: &[
            "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "-R", "--user", "--group",
            "--prompt", "--chdir", "--host",
        ],
        assignments: true,
        positional: 0,
        script_option: None,
    },
    Wrapper {
        name: "doas",
        with_value: &["-u", "-C"],
        assignments: false,
        positional: 0,
        script_option: None,
    },
    Wrapper {
        name: "env",
        with_value: &["-u", "-C", "-S", "--unset", "--chdir", "--split-string"],
        assignments: true,
        positional: 0,
        script_option: Some("-S"),
    },
    Wrapper {
        name: "nohup",
        with_value: &[],
        assignments: false,
        positional: 0,
        script_option: None,
    },
    Wrapper {
        name: "nice",
        with_value: &["-n", "--adjustment"],
        assignments: false,
        positional: 0,
        script_option: None,
    },
    Wrapper {
        name: "timeout",
        with_value: &["-s", "-k", "--signal", "--kill-after"],
        assignments: false,
        positional: 1,
        script_option: None,
    },
    Wrapper {
        name: "stdbuf",
        with_value: &["-i", "-o", "-e", "--input", "--output", "--error"],
        assignments: false,
        positional: 0,
        script_option: None,
    },
    Wrapper {
        name: "ionice",
        with_value: &["-c", "-n", "--class", "--classdata"],
        assignments: false,
        positional: 0,
        script_option: None,
    },
    Wrapper {
        name: "command",
        with_value: &[],
        assignments: false,
        positional: 0,
        script_option: None,
    },
    Wrapper {
        name: "builtin",
        with_value: &[],
        assignments: false,
        positional: 0,
        script_option: None,
    },
    Wrapper {
        name: "exec",
        with_value: &["-a"],
        assignments: false,
        positional: 0,
        script_option: None,
    },
    Wrapper {
        name: "xargs",
        with_value: &[
            "-I",
            "-L",
            "-n",
            "-P",
            "-s",
            "-d",
            "-E",
            "-a",
            "--max-args",
            "--max-procs",
            "--delimiter",
            "--arg-file",
            "--replace",
            "--max-lines",
            "--eof",
        ],
        assignments: false,
        positional: 0,
        script_option: None,
    },
    Wrapper {
        name: "watch",
        with_value: &["-n", "--interval", "-q"],
        assignments: false,
        positional: 0,
        script_option: None,
    },
    Wrapper {
        name: "time",
        with_value: &["-f", "-o", "--format", "--output"],
        assignments: false,
        positional: 0,
        script_option: None,
    },
    Wrapper {
        name: "setsid",
        with_value: &[],
        assignments: false,
        positional: 0,
        script_option: None,
    },
    Wrapper {
        name: "unbuffer",
        with_value: &[],
        assignments: false,
        positional: 0,
        script_option: None,
    },
    Wrapper {
        name: "busybox",
        with_value: &[],
        assignments: false,
        positional: 0,
        script_option: None,
    },
    Wrapper {
        name: "chroot",
        with_value: &["--userspec", "--groups"],
        assignments: false,
        positional: 1,
        script_option: None,
    },
    Wrapper {
        name: "flock",
        with_value: &["-w", "-E", "-c", "--timeout", "--command"],
        assignments: false,
        positional: 1,
        script_option: Some("-c"),
    },
];

/// Whether `name` (normalized) is one of the wrappers looked through.
#[must_use]
pub fn is_wrapper(name: &str) -> bool {
    WRAPPERS.iter().any(|w| w.name == name)
}

/// A segment's words seen as the command that really runs.
#[derive(Debug, Default)]
pub struct CommandView<'a> {
    /// Wrappers looked through, outermost first (normalized names).
    pub wrappers: Vec<&'a str>,
    /// The effective command and its arguments.
    pub args: &'a [Word],
    /// The effective command's normalized name; `None` when it is an expansion or absent.
    pub name: Option<&'a str>,
    /// Command lines carried inside the words, to be lexed and judged as scripts.
    pub inline_scripts: Vec<String>,
    /// Commands run by the program itself (`find -exec CMD… ;`), judged as argv.
    pub nested_argv: Vec<&'a [Word]>,
}

/// The normalized name of a command word: quotes removed, path reduced to its last component.
#[must_use]
pub fn command_name(word: &Word) -> Option<&str> {
    let text = word.literal()?;
    let trimmed = text.trim_end_matches('/');
    let base = trimmed.rsplit('/').next().unwrap_or(trimmed);
    if base.is_empty() {
        return None;
    }
    Some(base)
}

/// An interpreter's family name: `python3.11` → `python`, `lua5.4` → `lua`.
#[must_use]
pub fn interpreter_family(name: &str) -> &str {
    name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.')
}

#[must_use]
pub fn is_shell(name: &str) -> bool {
    SHELLS.contains(&name)
}

#[must_use]
pub fn is_interpreter(name: &str) -> bool {
    INTERPRETERS.contains(&interpreter_family(name))
}

#[must_use]
pub fn is_shell_or_interpreter(name: &str) -> bool {
    is_shell(name) || is_interpreter(name)
}

#[must_use]
pub fn is_network_client(name: &str) -> bool {
    NETWORK_CLIENTS.contains(&name)
}

/// Looks through the wrappers of `words` to the command that runs.
#[must_use]
pub fn command_view(words: &[Word]) -> CommandView<'_> {
    let mut view = CommandView::default();
    let mut rest = words;
    loop {
        let Some(first) = rest.first() else {
            view.args = rest;
            return view;
        };
        let Some(name) = command_name(first) else {
            view.args = rest;
            return view;
        };
        let Some(wrapper) = WRAPPERS.iter().find(|w| w.name == name) else {
            view.name = Some(name);
            view.args = rest;
            collect_inline(&mut view);
            return view;
        };
        view.wrappers.push(name);
        let after = skip_wrapper_options(wrapper, &rest[1..], &mut view.inline_scripts);
        if wrapper.name == "watch" && !rest[1..].iter().any(is_watch_exec) {
            // Without -x, watch hands its words to `sh -c` joined by spaces.
            let joined: Vec<&str> = after.iter().map(Word::text).collect();
            if !joined.is_empty() {
                view.inline_scripts.push(joined.join(" "));
            }
        }
        rest = after;
    }
}

fn is_watch_exec(word: &Word) -> bool {
    matches!(word.literal(), Some("-x" | "--exec"))
}

/// Skips a wrapper's options, assignments and positional words; returns the words after them.
fn skip_wrapper_options<'a>(
    wrapper: &Wrapper,
    words: &'a [Word],
    inline: &mut Vec<String>,
) -> &'a [Word] {
    let mut i = 0;
    while i < words.len() {
        let Some(text) = words[i].literal() else {
            break;
        };
        if text == "--" {
            i += 1;
            break;
        }
        if text.starts_with("--") {
            let (option, value) = match text.split_once('=') {
                Some((o, v)) => (o, Some(v)),
                None => (text, None),
            };
            let takes = wrapper.with_value.contains(&option);
            let value = match value {
                Some(v) => Some(v),
                None if takes => {
                    i += 1;
                    words.get(i).map(Word::text)
                }
                None => None,
            };
            if takes && is_script_option(wrapper, option) {
                inline.extend(value.map(str::to_string));
            }
            i += 1;
            continue;
        }
        if text.starts_with('-') && text.len() > 1 {
            let cluster: Vec<char> = text.chars().skip(1).collect();
            for (at, c) in cluster.iter().enumerate() {
                let option = format!("-{c}");
                if wrapper.with_value.contains(&option.as_str()) {
                    let attached: String = cluster[at + 1..].iter().collect();
                    let value = if attached.is_empty() {
                        i += 1;
                        words.get(i).map(|w| w.text().to_string())
                    } else {
                        Some(attached)
                    };
                    if is_script_option(wrapper, &option) {
                        inline.extend(value);
                    }
                    break;
                }
            }
            i += 1;
            continue;
        }
        if wrapper.assignments && is_assignment_word(text) {
            i += 1;
            continue;
        }
        break;
    }
    let skip = (i + wrapper.positional).min(words.len());
    &words[skip..]
}

fn is_script_option(wrapper: &Wrapper, option: &str) -> bool {
    match wrapper.script_option {
        Some(short) => option == short || option == "--split-string" || option == "--command",
        None => false,
    }
}

fn is_assignment_word(text: &str) -> bool {
    text.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// Command strings and nested commands the effective command itself carries.
fn collect_inline(view: &mut CommandView<'_>) {
    let Some(name) = view.name else { return };
    let args = view.args;
    if is_shell(name) {
        if let Some(script) = shell_command_string(&args[1..]) {
            view.inline_scripts.push(script);
        }
        return;
    }
    match name {
        "eval" => {
            let joined: Vec<&str> = args[1..].iter().map(Word::text).collect();
            view.inline_scripts.push(joined.join(" "));
        }
        "trap" => {
            if let Some(action) = args.get(1).filter(|w| !w.text().starts_with('-')) {
                view.inline_scripts.push(action.text().to_string());
            }
        }
        "su" | "runuser" => {
            let mut it = args[1..].iter();
            while let Some(word) = it.next() {
                if matches!(word.text(), "-c" | "--command")
                    && let Some(script) = it.next()
                {
                    view.inline_scripts.push(script.text().to_string());
                }
            }
        }
        "find" => {
            let mut i = 1;
            while i < args.len() {
                let text = args[i].text();
                if matches!(text, "-exec" | "-execdir" | "-ok" | "-okdir") {
                    let start = i + 1;
                    let mut end = start;
                    while end < args.len() && !matches!(args[end].text(), ";" | "+") {
                        end += 1;
                    }
                    view.nested_argv.push(&args[start..end]);
                    i = end;
                }
                i += 1;
            }
        }
        _ => {}
    }
}

/// The script a shell runs with `-c` (`bash -c '…'`, `sh -ec '…'`, `fish --command=…`).
fn shell_command_string(args: &[Word]) -> Option<String> {
    let mut wants_script = false;
    let mut i = 0;
    while i < args.len() {
        let text = args[i].text();
        if let Some(value) = text.strip_prefix("--command=") {
            return Some(value.to_string());
        }
        if text == "--command" {
            return args.get(i + 1).map(|w| w.text().to_string());
        }
        if text == "--" {
            i += 1;
            break;
        }
        if (text.starts_with('-') || text.starts_with('+')) && text.len() > 1 {
            if !text.starts_with("--") && text[1..].contains('c') {
                wants_script = true;
            }
            if matches!(text, "-o" | "+o" | "-O" | "+O") {
                i += 1;
            }
            i += 1;
            continue;
        }
        break;
    }
    if wants_script {
        return args.get(i).map(|w| w.text().to_string());
    }
    None
}

/// Whether a shell or interpreter is given code inline (`bash -c`, `python -c`, `node -e`,
/// `perl -ne`, `ruby -e`, `php -r`, `deno eval`, `pwsh -Command` …).
#[must_use]
pub fn runs_inline_code(name: &str, args: &[Word]) -> bool {
    let family = interpreter_family(name);
    let options: Vec<&str> = args
        .iter()
        .skip(1)
        .map(Word::text)
        .take_while(|t| t.starts_with('-') || t.starts_with('+'))
        .collect();
    let short_has = |letters: &[char]| {
        options
            .iter()
            .any(|o| !o.starts_with("--") && o[1..].chars().any(|c| letters.contains(&c)))
    };
    let long_is = |names: &[&str]| {
        options.iter().any(|o| {
            names
                .iter()
                .any(|n| o == n || o.starts_with(&format!("{n}=")))
        })
    };
    if is_shell(name) {
        return short_has(&['c']) || long_is(&["--command"]);
    }
    match family {
        "python" | "pypy" => short_has(&['c']),
        "node" | "nodejs" | "bun" => short_has(&['e', 'p']) || long_is(&["--eval", "--print"]),
        "perl" => short_has(&['e', 'E']),
        "ruby" | "lua" | "luajit" | "osascript" => short_has(&['e']),
        "php" => short_has(&['r']),
        "deno" => args.get(1).map(Word::text) == Some("eval"),
        "pwsh" | "powershell" => options.iter().any(|o| {
            let lower = o.to_ascii_lowercase();
            ["-c", "-command", "-e", "-ec", "-encodedcommand", "-enc"].contains(&lower.as_str())
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::shell::lexer::lex;

    fn view_of(cmd: &str) -> (Vec<String>, Option<String>, Vec<String>, Vec<String>) {
        let lexed = lex(cmd);
        let seg = &lexed.script.segments[0];
        let view = command_view(&seg.words);
        (
            view.wrappers.iter().map(|s| s.to_string()).collect(),
            view.name.map(str::to_string),
            view.args.iter().map(|w| w.text().to_string()).collect(),
            view.inline_scripts.clone(),
        )
    }

    #[test]
    fn looks_through_wrappers() {
        let table: &[(&str, &[&str], &str, &[&str])] = &[
            ("sudo -u x rm -rf /", &["sudo"], "rm", &["rm", "-rf", "/"]),
            (
                "env -i A=b B=c /bin/rm x",
                &["env"],
                "rm",
                &["/bin/rm", "x"],
            ),
            ("nice -n 5 nohup ls", &["nice", "nohup"], "ls", &["ls"]),
            ("timeout -s KILL 5 rm x", &["timeout"], "rm", &["rm", "x"]),
            ("timeout 5 rm x", &["timeout"], "rm", &["rm", "x"]),
            ("stdbuf -oL grep x", &["stdbuf"], "grep", &["grep", "x"]),
            ("xargs -I{} rm {}", &["xargs"], "rm", &["rm", "{}"]),
            ("xargs -0 -n 1 rm", &["xargs"], "rm", &["rm"]),
            ("command -p ls", &["command"], "ls", &["ls"]),
            ("exec -a name ls", &["exec"], "ls", &["ls"]),
            ("ionice -c 3 du", &["ionice"], "du", &["du"]),
            ("\\rm x", &[], "rm", &["rm", "x"]),
            ("./git status", &[], "git", &["./git", "status"]),
        ];
        for (cmd, wrappers, name, args) in table {
            let (w, n, a, _) = view_of(cmd);
            assert_eq!(w, *wrappers, "{cmd}");
            assert_eq!(n.as_deref(), Some(*name), "{cmd}");
            assert_eq!(a, *args, "{cmd}");
        }
    }

    #[test]
    fn finds_inline_scripts() {
        assert_eq!(view_of("bash -c 'rm -rf /'").3, vec!["rm -rf /"]);
        assert_eq!(view_of("sh -ec 'ls'").3, vec!["ls"]);
        assert_eq!(view_of("env -S 'rm -rf /'").3, vec!["rm -rf /"]);
        assert_eq!(view_of("watch rm -rf /").3, vec!["rm -rf /"]);
        assert_eq!(view_of("eval 'reboot'").3, vec!["reboot"]);
        assert_eq!(view_of("trap 'reboot' EXIT").3, vec!["reboot"]);
        assert!(view_of("bash script.sh").3.is_empty());
    }

    #[test]
    fn inline_code_flags() {
        for (cmd, expect) in [
            ("python3 -c 'x'", true),
            ("python3 script.py", false),
            ("node -e 'x'", true),
            ("perl -ne 'print'", true),
            ("ruby -e x", true),
            ("php -r x", true),
            ("deno eval x", true),
            ("deno run x.ts", false),
            ("bash -lc x", true),
            ("pwsh -Command x", true),
            ("lua5.4 -e x", true),
        ] {
            let lexed = lex(cmd);
            let seg = &lexed.script.segments[0];
            let view = command_view(&seg.words);
            let name = view.name.unwrap_or_default();
            assert_eq!(runs_inline_code(name, view.args), expect, "{cmd}");
        }
    }
}
