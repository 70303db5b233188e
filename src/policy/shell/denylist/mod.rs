//! The shell denylist: commands denied in every mode, per segment, through wrappers, and inside
//! `bash -c '…'`, `$(…)`, `<(…)`, function bodies and heredocs. It catches a confused model's
//! accidents and tells it why; it is not the boundary (the sandbox is).

mod credentials;
mod known;
pub mod paths;
mod places;
pub mod rm;
mod rules;

use super::ast::{Connector, RedirectOp, Script, Segment, Word};
use super::command::{
    self, CommandView, command_name, command_view, is_network_client, is_shell_or_interpreter,
};
use super::facts::Facts;
use super::lexer::Lexed;
use super::names::{is_privilege, is_ruled};
use known::Known;
use paths::{is_block_device, path_view, secret_in_word};
use places::{Aliases, Moves};
use rm::{CarveOutTrust, TempVars, deny_rm, parse_rm};
use std::collections::HashSet;
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

/// Checks a lexed command (its inline scripts expanded, as [`super::ShellAnalysis`] does)
/// against the denylist. Any denied segment denies the whole command.
#[must_use]
pub(crate) fn check(lexed: &Lexed, facts: &Facts) -> Option<DenyMatch> {
    check_script(&lexed.script, &CarveOutTrust::of(facts))
}

fn deny(rule: &'static str, message: String) -> Option<DenyMatch> {
    Some(DenyMatch { rule, message })
}

fn check_script(script: &Script, trust: &CarveOutTrust) -> Option<DenyMatch> {
    check_script_in(script, trust, None)
}

/// `start`: the directory the script starts in, when the words say (a subshell after `cd /`,
/// `bash -c '…'` after `env -C /`).
fn check_script_in(
    script: &Script,
    trust: &CarveOutTrust,
    start: Option<&str>,
) -> Option<DenyMatch> {
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
        if let Some(hit) = check_script(&function.body, trust) {
            return Some(hit);
        }
    }
    let mut vars = TempVars::for_script(trust, &script.segments);
    let mut downloads = Downloads::default();
    // Where earlier `cd`s moved, as far as literal words say.
    let mut cwd = Moves::starting_in(start);
    let mut known = Known::default();
    let mut aliases = Aliases::default();
    for (index, segment) in script.segments.iter().enumerate() {
        let view = command_view(&segment.words);
        if let Some(hit) = check_segment(segment, &view, &vars, index, cwd.now.as_deref()) {
            return Some(hit);
        }
        // `env -C /etc cat shadow`, `tar -C /etc -cf x shadow`: read from the directory an
        // option names, as after a `cd` there.
        for dir in places::option_dirs(&view, cwd.now.as_deref()) {
            if let Some(hit) = check_segment(segment, &view, &vars, index, Some(&dir)) {
                return Some(hit);
            }
        }
        // The same words with the values of variables assigned from literals put in.
        if let Some(words) = known.substituted(&segment.words) {
            if let Some(hit) = check_argv(&words, cwd.now.as_deref()) {
                return Some(hit);
            }
            for word in &words {
                if let Some(what) = secret_in_word(word, word.marks, cwd.now.as_deref()) {
                    return deny("secrets", format!("`{}` touches {what}", word.text()));
                }
            }
        }
        // `~-/shadow`, `~1/shadow`: a directory the command moved through earlier.
        if let Some(hit) = cwd.stack_paths(segment) {
            return Some(hit);
        }
        // `ln -s /etc e && cat e/shadow`: a name made earlier for a secret's directory.
        if let Some(hit) = aliases.check(segment) {
            return Some(hit);
        }
        aliases.record(&view);
        known.record(segment);
        if let Some(name) = view.name {
            cwd.follow(name, view.args);
        }
        if let Some(hit) = downloads.remote_code(segment, &view) {
            return Some(hit);
        }
        vars.record(segment, index);
        for nested in segment.nested_scripts() {
            if let Some(hit) = check_script_in(nested, trust, cwd.now.as_deref()) {
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
    index: usize,
    cwd: Option<&str>,
) -> Option<DenyMatch> {
    if let Some((rule, message)) = rules::privilege(view) {
        return deny(rule, message);
    }
    if let Some(name) = view.name {
        if let Some((rule, message)) = rules::argv_rules(name, view.args) {
            return deny(rule, message);
        }
        if name == "rm" {
            let rm = parse_rm(view.args.get(1..).unwrap_or(&[]));
            if let Some((rule, message)) = deny_rm(&rm, vars, Some(index)) {
                return deny(rule, message);
            }
            if let Some(hit) = rm_from(&rm, cwd) {
                return Some(hit);
            }
        }
    }
    // `cmake -E chdir / rm -rf etc`: a launcher's command runs where it is told to.
    for argv in &view.nested_argv {
        if let Some(hit) = check_argv(argv, cwd) {
            return Some(hit);
        }
    }
    // `{sudo,reboot}`, `command {rm,-rf,/}`, `timeout 5 {sudo,reboot}`: bash expands the
    // braces into words before anything runs.
    // Only where an argv rule could care: the command word braced, or a ruled command or a
    // wrapper in front (`echo {1..300}` has nothing to check).
    let may_matter = segment.words.first().is_some_and(|first| {
        first.brace
            || command_name(first).is_none_or(|n| {
                is_ruled(n) || is_privilege(n) || command::is_wrapper(n) || n == "rm"
            })
    });
    if may_matter && segment.words.iter().any(|w| w.brace) {
        let mut argv: Vec<Word> = Vec::new();
        for word in &segment.words {
            if !word.brace {
                argv.push(word.clone());
                continue;
            }
            let expanded = paths::expand_braces(word.text(), paths::MAX_BRACE_WORDS)
                .filter(|e| argv.len() + e.len() <= paths::MAX_BRACE_WORDS);
            let Some(expanded) = expanded else {
                return deny(
                    "brace-command",
                    format!(
                        "`{}` expands to more than {} words, too many to check",
                        word.text(),
                        paths::MAX_BRACE_WORDS
                    ),
                );
            };
            argv.extend(expanded.iter().map(|w| Word::plain(w)));
        }
        if let Some(hit) = check_argv(&argv, cwd) {
            return Some(hit);
        }
    }
    for word in segment.all_words() {
        let text = word.text();
        let marks = word.marks;
        if let Some(what) = secret_in_word(word, marks, cwd) {
            return deny("secrets", format!("`{text}` touches {what}"));
        }
        if marks.raw_socket {
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
    for inline in &segment.inline {
        if let Some(hit) = check_script_in(&inline.script, &vars.trust, cwd) {
            return Some(hit);
        }
    }
    None
}

/// Rules for a command a program runs itself (`find -exec …`): argv only, and the commands it
/// runs in turn (`find -exec find -exec …`). Its command strings (`find -exec bash -c '…'`) are
/// judged as the segment's inline scripts.
/// `cwd`: the directory it runs in, when the words say (after `cd /`, or a launcher's
/// `--directory /`).
fn check_argv(argv: &[super::ast::Word], cwd: Option<&str>) -> Option<DenyMatch> {
    let view = command_view(argv);
    if let Some((rule, message)) = rules::privilege(&view) {
        return deny(rule, message);
    }
    for inner in &view.nested_argv {
        if let Some(hit) = check_argv(inner, cwd) {
            return Some(hit);
        }
    }
    let name = view.name?;
    if let Some((rule, message)) = rules::argv_rules(name, view.args) {
        return deny(rule, message);
    }
    if name == "rm" {
        let rm = parse_rm(view.args.get(1..).unwrap_or(&[]));
        if let Some((rule, message)) = deny_rm(&rm, &TempVars::default(), None) {
            return deny(rule, message);
        }
        return rm_from(&rm, cwd);
    }
    None
}

/// After `cd /` (or any directory named from the root or home), a relative target is that
/// absolute path: `cd / && rm -rf usr` is `rm -rf /usr`.
fn rm_from(rm: &rm::RmArgs<'_>, cwd: Option<&str>) -> Option<DenyMatch> {
    let dir = cwd.filter(|d| d.starts_with('/') || d.starts_with('~'))?;
    if !(rm.recursive || rm.force) {
        return None;
    }
    let target = rm
        .targets
        .iter()
        .find(|t| !t.text().starts_with(['/', '~', '$']))?;
    let full = paths::normalize(&format!("{dir}/{}", target.text()));
    deny(
        "rm-recursive",
        format!(
            "`rm -r`/`-f` on `{}` after `cd {dir}` is `{full}`; delete inside the workspace instead",
            target.text()
        ),
    )
}

/// Runs code: a shell, an interpreter, `eval`, `source` or `.`.
fn runs_code(name: &str) -> bool {
    is_shell_or_interpreter(name) || matches!(name, "eval" | "source" | ".")
}

/// What earlier segments of one script downloaded, for the remote-code rules: whether the
/// current pipeline reads from a network client, and the files downloads wrote.
#[derive(Default)]
struct Downloads {
    /// A network client appears earlier in the pipeline being read.
    in_pipeline: bool,
    /// Some earlier segment downloaded.
    any: bool,
    /// Base names of the files downloads wrote (`-o x.sh`, `-O`, `> x.sh`, the URL's name).
    files: HashSet<String>,
}

impl Downloads {
    /// Remote code execution at this segment: downloaded text piped into a shell, handed to
    /// one through `$(…)`/`<(…)`, or downloaded and then run by a later segment. Then records
    /// what this segment downloads.
    fn remote_code(&mut self, segment: &Segment, view: &CommandView<'_>) -> Option<DenyMatch> {
        if segment.connector != Connector::Pipe {
            self.in_pipeline = false;
        }
        let name = view.name.unwrap_or("");
        let fetcher = runs_download(view);
        let fetched_inside = fetches_inside(segment);
        let hit = self.judge(segment, view, name, fetched_inside);
        if fetcher {
            self.in_pipeline = true;
            self.any = true;
            self.files.extend(fetched_files(view.args, segment));
        }
        // `x=$(curl …)` and `git clone URL` bring code in too, to be run by a later segment.
        if fetched_inside || fetches_repository(name, view.args) {
            self.any = true;
        }
        hit
    }

    fn judge(
        &self,
        segment: &Segment,
        view: &CommandView<'_>,
        name: &str,
        fetched_inside: bool,
    ) -> Option<DenyMatch> {
        // Piped into a command chosen when it runs (`curl … | $BASH`): assume a shell.
        let unknown_command = view.name.is_none() && !segment.words.is_empty();
        if unknown_command && segment.connector == Connector::Pipe && self.in_pipeline {
            return deny(
                "remote-exec",
                "downloaded text piped into a command chosen when it runs".into(),
            );
        }
        if runs_code(name) {
            if segment.connector == Connector::Pipe && self.in_pipeline {
                return deny(
                    "remote-exec",
                    format!("downloaded text piped into `{name}`: remote code execution"),
                );
            }
            if fetched_inside {
                return deny(
                    "remote-exec",
                    format!("`{name}` runs code fetched from the network"),
                );
            }
            if self.any {
                return deny(
                    "remote-exec",
                    format!(
                        "a download followed by `{name}`: fetch-then-run is remote code execution"
                    ),
                );
            }
        }
        if self.any && self.runs_downloaded_file(view) {
            return deny(
                "remote-exec",
                format!(
                    "`{}` runs a file downloaded earlier in the command",
                    view.args.first().map_or("", Word::text)
                ),
            );
        }
        None
    }

    /// Whether this segment runs a file a download wrote (`curl -o x.sh …; ./x.sh`), by name
    /// or as an interpreter's script.
    fn runs_downloaded_file(&self, view: &CommandView<'_>) -> bool {
        let base = |w: &Word| {
            let text = w.text();
            text.rsplit('/').next().unwrap_or(text).to_string()
        };
        let command_is_download = view
            .args
            .first()
            .is_some_and(|w| self.files.contains(&base(w)));
        let script_is_download = view.name.is_some_and(runs_code)
            && view
                .args
                .iter()
                .skip(1)
                .any(|w| self.files.contains(&base(w)));
        command_is_download || script_is_download
    }
}

/// A network client, run directly or by another program at any depth (`find -exec curl …`,
/// `gdb --args wget …`): a download either way.
fn runs_download(view: &CommandView<'_>) -> bool {
    view.name.is_some_and(is_network_client)
        || view
            .nested_argv
            .iter()
            .any(|argv| runs_download(&command_view(argv)))
}

/// Version control and package commands that fetch code (`git clone`, `hg pull`, `svn co`).
fn fetches_repository(name: &str, args: &[Word]) -> bool {
    let sub = args
        .iter()
        .skip(1)
        .map(Word::text)
        .find(|t| !t.starts_with('-'));
    matches!(
        (name, sub),
        ("git", Some("clone" | "fetch" | "pull" | "submodule"))
            | ("hg", Some("clone" | "pull"))
            | ("svn", Some("checkout" | "co" | "export"))
            | ("pip" | "pip3", Some("download"))
    )
}

/// Whether a substitution in this segment runs a network client.
fn fetches_inside(segment: &Segment) -> bool {
    segment.all_words().any(|w| {
        w.nested_scripts().any(|s| {
            let mut found = false;
            s.walk(&mut |inner| {
                found |= inner.segments.iter().any(|seg| {
                    command_view(&seg.words).name.is_some_and(is_network_client)
                        || seg
                            .words
                            .iter()
                            .filter_map(command_name)
                            .any(is_network_client)
                });
            });
            found
        })
    })
}

/// Base names of the files a download writes: `-o FILE` / `-O FILE` (also clustered, `-sSLo
/// x.sh`, or attached, `-ox.sh`), `--output[=]FILE`, `--output-document[=]FILE`, a `>`
/// redirect, and the URL's last component (`curl -O`, `wget URL`).
fn fetched_files(args: &[Word], segment: &Segment) -> Vec<String> {
    let mut files = Vec::new();
    let texts: Vec<&str> = args.iter().skip(1).map(Word::text).collect();
    let mut i = 0;
    while i < texts.len() {
        let t = texts[i];
        let next = texts.get(i + 1).copied();
        if let Some(file) = ["--output=", "--output-document=", "-O=", "-o="]
            .iter()
            .find_map(|p| t.strip_prefix(p))
        {
            files.push(file.to_string());
        } else if matches!(t, "--output" | "--output-document") {
            files.extend(next.map(str::to_string));
            i += 1;
        } else if let Some(cluster) = t.strip_prefix('-').filter(|c| !c.starts_with('-')) {
            if let Some(at) = cluster.find(['o', 'O']) {
                let attached = &cluster[at + 1..];
                if attached.is_empty() {
                    files.extend(next.map(str::to_string));
                    i += 1;
                } else {
                    files.push(attached.to_string());
                }
            }
        } else if t.contains("://")
            && let Some(last) = t.trim_end_matches('/').rsplit('/').next()
        {
            files.push(last.split(['?', '#']).next().unwrap_or(last).to_string());
        }
        i += 1;
    }
    for redirect in &segment.redirects {
        if matches!(redirect.op, RedirectOp::Write | RedirectOp::Append) {
            files.push(redirect.target.text().to_string());
        }
    }
    files
        .into_iter()
        .filter(|f| !f.is_empty() && f != "-")
        .map(|f| f.rsplit('/').next().unwrap_or(&f).to_string())
        .collect()
}

/// A function whose body pipes into itself in the background: `:(){ :|:& };:`.
fn is_fork_bomb(name: &str, body: &Script) -> bool {
    let calls_self = |s: &Segment| s.words.first().is_some_and(|w| w.text() == name);
    let pipes_into_self = body.segments.iter().enumerate().any(|(i, s)| {
        i > 0
            && s.connector == Connector::Pipe
            && calls_self(s)
            && calls_self(&body.segments[i - 1])
    });
    pipes_into_self && body.features.background
}

#[cfg(test)]
mod tests;
