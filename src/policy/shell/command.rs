//! The command a segment really runs: its name normalized (`/bin/rm` and `\rm` are `rm`,
//! `nc.openbsd` is `nc`), the wrappers in front of it looked through with their own options
//! skipped (`sudo -u x`, `env -i A=b`, `timeout 5`, `taskset 3`, `strace -f` …), and the command
//! strings a wrapper or shell carries inside (`bash -c '…'`, `env -S '…'`, `watch '…'`,
//! `eval -- '…'`, `trap -- '…' EXIT`, `flock f -c '…'`, `script -c '…'`).

use super::ast::Word;
use super::inline_code::{runs_inline_code, shell_command_string};
use super::names::has_variants;
pub use super::names::{
    INTERPRETERS, NETWORK_CLIENTS, SHELLS, STDIN_SCRIPTED, is_interpreter_family,
    is_network_client, is_shell, reads_script_from_stdin,
};
use super::wrappers;

/// Whether `name` (normalized) is one of the wrappers looked through.
#[must_use]
pub fn is_wrapper(name: &str) -> bool {
    wrappers::find(name).is_some()
}

/// A segment's words seen as the command that really runs.
#[derive(Debug, Default)]
pub struct CommandView<'a> {
    /// Wrappers looked through, outermost first (normalized names).
    pub wrappers: Vec<&'a str>,
    /// Each wrapper's own words, from its name on (its options can carry hazards too:
    /// `strace -o '!cmd'`).
    pub wrapper_argv: Vec<&'a [Word]>,
    /// The effective command and its arguments.
    pub args: &'a [Word],
    /// The effective command's normalized name; `None` when it is an expansion or absent.
    pub name: Option<&'a str>,
    /// Command lines carried inside the words, to be lexed and judged as scripts.
    pub inline_scripts: Vec<String>,
    /// Commands run by the program itself (`find -exec CMD… ;`, `gdb --args CMD…`), judged as
    /// argv.
    pub nested_argv: Vec<&'a [Word]>,
    /// `NAME=value` words a wrapper sets for the command (`env LD_PRELOAD=x cmd`).
    pub assignments: Vec<&'a str>,
    /// More wrappers, or commands nested in commands, than are looked through: the command
    /// is too complex to judge (each level would be read again for the next).
    pub too_deep: bool,
}

/// Wrappers looked through in one command (`watch watch … ls`) before it is too complex.
pub const MAX_WRAPPERS: usize = 16;

/// Commands nested in commands (`find -exec find -exec …`) before it is too complex.
pub const MAX_NESTED: usize = 8;

/// The normalized name of a command word: quotes removed, path reduced to its last component,
/// and a distribution's variant of a program named as the program (`nc.traditional`,
/// `nc.openbsd` and `netcat.openbsd` are `nc`; `vim.basic` is `vim`).
#[must_use]
pub fn command_name(word: &Word) -> Option<&str> {
    let text = word.literal()?;
    // The common case: a bare name, already normal.
    if !text.is_empty() && !text.bytes().any(|b| b == b'/' || b == b'.') {
        return Some(text);
    }
    let trimmed = text.trim_end_matches('/');
    let base = match trimmed.rfind('/') {
        Some(slash) => &trimmed[slash + 1..],
        None => trimmed,
    };
    if base.is_empty() {
        return None;
    }
    Some(canonical_name(base))
}

fn canonical_name(base: &str) -> &str {
    // The dynamic loader, under any of its names (`ld-linux-x86-64.so.2`, `ld-musl-x86_64.so.1`).
    if base == "ld.so" || base.starts_with("ld-linux") || base.starts_with("ld-musl") {
        return "ld.so";
    }
    let Some((stem, variant)) = base.split_once('.') else {
        return base;
    };
    let is_variant = !variant.is_empty()
        && variant
            .chars()
            .all(|c| c.is_ascii_alphabetic() || c == '-' || c == '_');
    if !is_variant || !has_variants(stem) {
        return base;
    }
    if stem == "netcat" { "nc" } else { stem }
}

/// An interpreter's family name: `python3.11` → `python`, `lua5.4` → `lua`.
#[must_use]
pub fn interpreter_family(name: &str) -> &str {
    name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.')
}

#[must_use]
pub fn is_interpreter(name: &str) -> bool {
    is_interpreter_family(interpreter_family(name))
}

#[must_use]
pub fn is_shell_or_interpreter(name: &str) -> bool {
    is_shell(name) || is_interpreter(name)
}

/// Whether this program, so invoked, reads the code it runs from standard input: a program
/// that always reads commands there (`ed`, `gdb`, `m4` …), a shell given no script (or `-s`),
/// an interpreter given no program file (or `-`). `argv` starts with the command word.
#[must_use]
pub fn reads_code_from_stdin(name: &str, argv: &[Word]) -> bool {
    if reads_script_from_stdin(name) {
        return true;
    }
    let shell = is_shell(name);
    if !(shell || is_interpreter(name)) || runs_inline_code(name, argv) {
        return false;
    }
    let after = argv.get(1..).unwrap_or(&[]);
    let mut i = 0;
    while let Some(word) = after.get(i) {
        let text = word.text();
        match text {
            "-" => return true,
            // It prints something about itself and exits.
            "--version" | "-V" | "--help" | "-h" => return false,
            "--" => return after.get(i + 1).is_none_or(|w| w.text() == "-"),
            "-o" | "-O" | "+o" | "+O" | "--rcfile" | "--init-file" if shell => i += 2,
            _ if shell
                && text.starts_with('-')
                && !text.starts_with("--")
                && text.contains('s') =>
            {
                return true;
            }
            // `python -m module` runs a module, not its input.
            _ if !shell && text.starts_with("-m") => return false,
            _ if text.starts_with('-') || (shell && text.starts_with('+')) => i += 1,
            // A script or program file.
            _ => return false,
        }
    }
    true
}

/// Looks through the wrappers of `words` to the command that runs.
#[must_use]
pub fn command_view(words: &[Word]) -> CommandView<'_> {
    command_view_at(words, 0)
}

fn command_view_at(words: &[Word], nesting: usize) -> CommandView<'_> {
    let mut view = CommandView::default();
    let mut rest = words;
    loop {
        if view.wrappers.len() >= MAX_WRAPPERS {
            view.too_deep = true;
            view.args = rest;
            return view;
        }
        let Some(first) = rest.first() else {
            view.args = rest;
            return view;
        };
        let Some(name) = command_name(first) else {
            view.args = rest;
            return view;
        };
        let Some(wrapper) = wrappers::find(name) else {
            view.name = Some(name);
            view.args = rest;
            collect_inline(&mut view);
            if view.nested_argv.is_empty() {
                return view;
            }
            if nesting >= MAX_NESTED {
                view.too_deep = true;
                return view;
            }
            // The command strings of a command the program runs (`find -exec bash -c '…'`), at
            // any depth up to the limit (`find -exec find -exec …`).
            let mut too_deep = false;
            let nested: Vec<String> = view
                .nested_argv
                .iter()
                .flat_map(|argv| {
                    let inner = command_view_at(argv, nesting + 1);
                    too_deep |= inner.too_deep;
                    inner.inline_scripts
                })
                .collect();
            view.inline_scripts.extend(nested);
            view.too_deep |= too_deep;
            return view;
        };
        view.wrappers.push(name);
        view.wrapper_argv.push(rest);
        let after = wrappers::skip_options(wrapper, &rest[1..], &mut view);
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

/// Command strings and nested commands the effective command itself carries.
fn collect_inline(view: &mut CommandView<'_>) {
    let Some(name) = view.name else { return };
    let args = view.args;
    let after = args.get(1..).unwrap_or(&[]);
    if is_shell(name) {
        if let Some(script) = shell_command_string(after) {
            view.inline_scripts.push(script);
        }
        return;
    }
    match name {
        "eval" => {
            // `eval -- '…'`: the `--` ends eval's (empty) options.
            let words = match after.first().map(Word::text) {
                Some("--") => &after[1..],
                _ => after,
            };
            let joined: Vec<&str> = words.iter().map(Word::text).collect();
            view.inline_scripts.push(joined.join(" "));
        }
        "alias" => {
            // An alias's value is shell code, run wherever the alias is expanded.
            for word in after {
                if let Some((_, value)) = word.text().split_once('=') {
                    view.inline_scripts.push(value.to_string());
                }
            }
        }
        "trap" => {
            // `trap [-lp] [--] ACTION SIGNAL…`
            let action = after
                .iter()
                .find(|w| !matches!(w.text(), "--" | "-p" | "-l" | "-lp" | "-pl"));
            if let Some(action) = action.filter(|w| w.text() != "-") {
                view.inline_scripts.push(action.text().to_string());
            }
        }
        "su" | "runuser" => {
            let mut it = after.iter();
            while let Some(word) = it.next() {
                let text = word.text();
                if matches!(text, "-c" | "--command") {
                    view.inline_scripts
                        .extend(it.next().map(|w| w.text().to_string()));
                } else if let Some(value) = text.strip_prefix("--command=") {
                    view.inline_scripts.push(value.to_string());
                }
            }
        }
        "hyperfine" => {
            // Every command it times, and those it runs around them, are shell strings.
            for word in after {
                let text = word.text();
                let value = ["--prepare=", "--cleanup=", "--setup=", "--conclude="]
                    .iter()
                    .find_map(|p| text.strip_prefix(p));
                match value {
                    Some(value) => view.inline_scripts.push(value.to_string()),
                    None if !text.starts_with('-') => view.inline_scripts.push(text.to_string()),
                    None => {}
                }
            }
        }
        "entr" => {
            // `entr -s 'CMD'` runs a shell string; without `-s` its words are the command.
            let options = after
                .iter()
                .take_while(|w| w.text().starts_with('-'))
                .count();
            let shell = after[..options]
                .iter()
                .any(|w| !w.text().starts_with("--") && w.text().contains('s'));
            let command = &after[options..];
            match (shell, command.first()) {
                (true, Some(script)) => view.inline_scripts.push(script.text().to_string()),
                (false, Some(_)) => view.nested_argv.push(command),
                _ => {}
            }
        }
        "parallel" => {
            // GNU parallel runs its command words through a shell, up to the `:::` argument
            // lists.
            let words: Vec<&str> = after
                .iter()
                .map(Word::text)
                .skip_while(|t| t.starts_with('-'))
                .take_while(|t| !t.starts_with(":::"))
                .collect();
            if !words.is_empty() {
                view.inline_scripts.push(words.join(" "));
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
        "gdb" | "lldb" => {
            if let Some(at) = after.iter().position(|w| w.text() == "--args") {
                view.nested_argv.push(&after[at + 1..]);
            }
        }
        "perf" => {
            // `perf stat|record|trace [options] COMMAND…`
            if matches!(
                after.first().map(Word::text),
                Some("stat" | "record" | "trace")
            ) {
                let mut i = 1;
                while i < after.len() && after[i].text().starts_with('-') {
                    let takes = matches!(
                        after[i].text(),
                        "-e" | "-o" | "-p" | "-t" | "-C" | "-c" | "-F" | "-G" | "-r" | "-I" | "-u"
                    );
                    i += if takes { 2 } else { 1 };
                }
                if let Some(command) = after.get(i..).filter(|c| !c.is_empty()) {
                    view.nested_argv.push(command);
                }
            }
        }
        "ansible" => view
            .inline_scripts
            .extend(super::ansible::command_lines(after)),
        // `uv run CMD…`, `pyenv exec CMD…`, `op run -- CMD…` (and `cmake -E env CMD…`).
        _ => {
            if name == "cmake" {
                view.inline_scripts.extend(cmake_removal(after));
            }
            let launched = super::launchers::command(name, after, view);
            view.nested_argv.extend(launched);
        }
    }
}

/// `cmake -E rm|remove|remove_directory ARGS` removes files as `rm` does: judged as `rm ARGS`
/// (`remove_directory DIR…` as `rm -r DIR…`).
fn cmake_removal(after: &[Word]) -> Option<String> {
    let [tool_mode, action, rest @ ..] = after else {
        return None;
    };
    if tool_mode.text() != "-E" {
        return None;
    }
    let rm = match action.text() {
        "rm" | "remove" => "rm",
        "remove_directory" => "rm -r",
        _ => return None,
    };
    // Literal words quoted as needed; expansions (`~`, `$HOME`, globs) as written.
    let words: Vec<String> = rest
        .iter()
        .map(|w| match w.literal() {
            Some(text) => super::approval_key::quote_word(text),
            None => w.text().to_string(),
        })
        .collect();
    Some(format!("{rm} {}", words.join(" ")))
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
}
