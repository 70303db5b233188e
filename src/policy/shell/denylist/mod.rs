//! The shell denylist: commands denied in every mode, per segment, through wrappers, and inside
//! `bash -c '…'`, `$(…)`, `<(…)`, function bodies and heredocs. It catches a confused model's
//! accidents and tells it why; it is not the boundary (the sandbox is).

pub mod paths;
pub mod rm;
mod rules;

use super::ast::{RedirectOp, Script, Segment};
use super::command::{
    CommandView, command_name, command_view, is_network_client, is_shell_or_interpreter,
};
use super::lexer::{Lexed, lex_nested};
use paths::{is_block_device, path_view, secret_in_word};
use rm::{TempVars, assigns_tmpdir, deny_rm, parse_rm};
use std::fmt;

/// A denylist hit: the rule (`denylist:<rule>`) and what the model is told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DenyMatch {
    pub rule: &'static str,
    pub message: String,
}

impl fmt::Display for DenyMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "denylist:{}: {}", self.rule, self.message)
    }
}

/// Checks a lexed command against the denylist. Any denied segment denies the whole command.
#[must_use]
pub fn check(lexed: &Lexed) -> Option<DenyMatch> {
    let tmpdir_assigned = assigns_tmpdir(&lexed.script);
    check_script(&lexed.script, tmpdir_assigned, 0)
}

fn deny(rule: &'static str, message: String) -> Option<DenyMatch> {
    Some(DenyMatch { rule, message })
}

fn check_script(script: &Script, tmpdir_assigned: bool, depth: usize) -> Option<DenyMatch> {
    for function in &script.functions {
        if is_fork_bomb(&function.name, &function.body) {
            return deny(
                "fork-bomb",
                format!(
                    "`{}` pipes into itself in the background: a fork bomb",
                    function.name
                ),
            );
        }
        if let Some(hit) = check_script(&function.body, tmpdir_assigned, depth) {
            return Some(hit);
        }
    }
    let mut vars = TempVars::new(tmpdir_assigned);
    let views: Vec<CommandView<'_>> = script
        .segments
        .iter()
        .map(|s| command_view(&s.words))
        .collect();
    let mut fetched: Option<Vec<&str>> = None;
    for (index, segment) in script.segments.iter().enumerate() {
        let view = &views[index];
        if let Some(hit) = check_segment(segment, view, &vars, &script.segments, index, depth) {
            return Some(hit);
        }
        if let Some(hit) = remote_code(script, &views, index, fetched.as_deref()) {
            return Some(hit);
        }
        if view.name.is_some_and(is_fetcher) {
            fetched
                .get_or_insert_with(Vec::new)
                .extend(fetched_files(view.args));
        }
        vars.record(segment, index);
        for nested in segment.nested_scripts() {
            if let Some(hit) = check_script(nested, tmpdir_assigned, depth) {
                return Some(hit);
            }
        }
    }
    None
}

fn check_segment(
    segment: &Segment,
    view: &CommandView<'_>,
    vars: &TempVars,
    segments: &[Segment],
    index: usize,
    depth: usize,
) -> Option<DenyMatch> {
    if let Some((rule, message)) = rules::privilege(view) {
        return deny(rule, message);
    }
    if let Some(name) = view.name {
        if let Some((rule, message)) = rules::argv_rules(name, view.args) {
            return deny(rule, message);
        }
        if name == "rm" {
            let rm = parse_rm(&view.args[1..]);
            if let Some((rule, message)) = deny_rm(&rm, vars, segments, Some(index)) {
                return deny(rule, message);
            }
        }
    }
    for argv in &view.nested_argv {
        if let Some(hit) = check_argv(argv) {
            return Some(hit);
        }
    }
    for word in segment.all_words() {
        if let Some(what) = secret_in_word(word) {
            return deny("secrets", format!("`{}` touches {what}", word.text()));
        }
        let text = word.text();
        if text.contains("/dev/tcp/") || text.contains("/dev/udp/") {
            return deny(
                "reverse-shell",
                format!("`{text}` opens a raw network socket"),
            );
        }
    }
    for redirect in &segment.redirects {
        let writes = matches!(
            redirect.op,
            RedirectOp::Write | RedirectOp::Append | RedirectOp::ReadWrite | RedirectOp::Duplicate
        );
        if writes && is_block_device(&path_view(&redirect.target)) {
            return deny(
                "disk-write",
                format!(
                    "output redirected onto the device `{}`",
                    redirect.target.text()
                ),
            );
        }
    }
    for inline in &view.inline_scripts {
        let script = match lex_nested(inline, depth) {
            Ok(script) => script,
            Err(_) => super::lexer::lex(inline).script,
        };
        let tmpdir = assigns_tmpdir(&script) || vars.tmpdir_assigned;
        if let Some(hit) = check_script(&script, tmpdir, depth + 1) {
            return Some(hit);
        }
    }
    None
}

/// Rules for a command a program runs itself (`find -exec …`): argv only.
fn check_argv(argv: &[super::ast::Word]) -> Option<DenyMatch> {
    let view = command_view(argv);
    if let Some((rule, message)) = rules::privilege(&view) {
        return deny(rule, message);
    }
    let name = view.name?;
    if let Some((rule, message)) = rules::argv_rules(name, view.args) {
        return deny(rule, message);
    }
    if name == "rm" {
        let rm = parse_rm(&view.args[1..]);
        if let Some((rule, message)) = deny_rm(&rm, &TempVars::default(), &[], None) {
            return deny(rule, message);
        }
    }
    None
}

/// Downloaders whose output a following segment might run.
fn is_fetcher(name: &str) -> bool {
    matches!(
        name,
        "curl"
            | "wget"
            | "fetch"
            | "aria2c"
            | "http"
            | "https"
            | "xh"
            | "nc"
            | "ncat"
            | "netcat"
            | "socat"
            | "ftp"
            | "tftp"
            | "scp"
            | "sftp"
            | "rsync"
    )
}

/// Runs code: a shell, an interpreter, `eval`, `source` or `.`.
fn runs_code(name: &str) -> bool {
    is_shell_or_interpreter(name) || matches!(name, "eval" | "source" | ".")
}

/// Remote code execution: fetched text piped into a shell, handed to one through `$(…)`/`<(…)`,
/// or fetched and then run by a later segment. `fetched` holds the files earlier segments
/// downloaded, when any segment downloaded anything.
fn remote_code(
    script: &Script,
    views: &[CommandView<'_>],
    index: usize,
    fetched: Option<&[&str]>,
) -> Option<DenyMatch> {
    let segment = &script.segments[index];
    let name = views[index].name?;
    let runs_download = fetched.is_some_and(|files| runs_fetched_file(segment, files));
    if !runs_code(name) && !runs_download {
        return None;
    }
    if runs_code(name) {
        let mut k = index;
        while k > 0 && script.segments[k].connector == super::ast::Connector::Pipe {
            k -= 1;
            if views[k].name.is_some_and(is_fetcher) {
                return deny(
                    "remote-exec",
                    format!("downloaded text piped into `{name}`: remote code execution"),
                );
            }
        }
        let fetches_inside = segment.all_words().any(|w| {
            w.nested_scripts().any(|s| {
                let mut found = false;
                s.walk(&mut |inner| {
                    found |= inner.segments.iter().any(|seg| {
                        command_view(&seg.words).name.is_some_and(is_fetcher)
                            || seg
                                .words
                                .iter()
                                .filter_map(command_name)
                                .any(is_network_client)
                    });
                });
                found
            })
        });
        if fetches_inside {
            return deny(
                "remote-exec",
                format!("`{name}` runs code fetched from the network"),
            );
        }
    }
    if fetched.is_some() && segment.connector != super::ast::Connector::Pipe {
        return deny(
            "remote-exec",
            format!("a download followed by `{name}`: fetch-then-run is remote code execution"),
        );
    }
    None
}

/// Whether this segment runs a file an earlier segment downloaded (`curl -o x.sh …; ./x.sh`).
fn runs_fetched_file(segment: &Segment, files: &[&str]) -> bool {
    let Some(command) = segment.words.first().and_then(|w| w.literal()) else {
        return false;
    };
    let command = command.trim_start_matches("./");
    files
        .iter()
        .any(|file| *file == command || file.rsplit('/').next() == Some(command))
}

/// Files a downloader writes: `-o FILE`, `-O FILE` (wget), or the URL's last component.
fn fetched_files(args: &[super::ast::Word]) -> Vec<&str> {
    let mut files = Vec::new();
    let mut it = args.iter().skip(1).map(super::ast::Word::text).peekable();
    while let Some(t) = it.next() {
        if matches!(t, "-o" | "--output" | "-O" | "--output-document")
            && let Some(next) = it.peek()
            && !next.contains("://")
        {
            files.push(*next);
        }
        if let Some(file) = t
            .strip_prefix("--output=")
            .or_else(|| t.strip_prefix("--output-document="))
        {
            files.push(file);
        }
        if t.contains("://")
            && let Some(last) = t.trim_end_matches('/').rsplit('/').next()
        {
            files.push(last.split(['?', '#']).next().unwrap_or(last));
        }
    }
    files
}

/// A function whose body pipes into itself in the background: `:(){ :|:& };:`.
fn is_fork_bomb(name: &str, body: &Script) -> bool {
    let calls_self = |s: &Segment| s.words.first().is_some_and(|w| w.text() == name);
    let pipes_into_self = body.segments.iter().enumerate().any(|(i, s)| {
        i > 0
            && s.connector == super::ast::Connector::Pipe
            && calls_self(s)
            && calls_self(&body.segments[i - 1])
    });
    pipes_into_self && body.features.background
}

#[cfg(test)]
mod tests;
