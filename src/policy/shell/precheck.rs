//! The deterministic high-risk pre-check: shapes of command that no model is asked about and no
//! allowlist covers. Only mode `high-risk` or an explicit config `allow` runs these unasked.
//! It walks every script of the command — substitutions, function bodies and the command
//! strings its programs run — so nothing nested escapes it.

use super::ast::{Connector, RedirectOp, Script, Segment, Word, WordPart};
use super::command::{
    CommandView, command_name, command_view, is_network_client, is_shell_or_interpreter,
    reads_code_from_stdin, reads_script_from_stdin,
};
use super::denylist::rm::{CarveOutTrust, TempVars, forceful_outside_carve_out, parse_rm};
use super::facts::Facts;
use super::hazards::{hidden_code, variables};
use super::inline_code::runs_inline_code;
use super::lexer::Lexed;
use super::names::{argument_sensitive, is_ruled};

/// Why a command is high-risk without asking the classifier, if it is. `lexed` has its inline
/// scripts expanded (as [`super::ShellAnalysis`] does).
#[must_use]
pub(crate) fn high_risk_reason(lexed: &Lexed, facts: &Facts) -> Option<String> {
    if let Some(error) = &lexed.error {
        return Some(format!("the command does not lex ({error})"));
    }
    if let Some(client) = &facts.network {
        return Some(format!("it uses the network client `{client}`"));
    }
    let mut reason = None;
    let trust = CarveOutTrust::of(facts);
    lexed.script.walk(&mut |script| {
        if reason.is_none() {
            reason = script_reason(script, &trust);
        }
    });
    reason
        .or_else(|| facts.late_evaluation())
        .or_else(|| facts.secret_from_input())
}

fn script_reason(script: &Script, trust: &CarveOutTrust) -> Option<String> {
    if script.features.endless_loop {
        return Some("it loops without end (`while true`, `for ((;;))` …)".into());
    }
    let mut vars = TempVars::for_script(trust, &script.segments);
    let mut fed = Feeds::of(script);
    for (index, segment) in script.segments.iter().enumerate() {
        let view = command_view(&segment.words);
        if let Some(reason) = segment_reason(segment, &view) {
            return Some(reason);
        }
        let name = view.name.unwrap_or("");
        // `{ bash; :; } <<EOF`, `… | { :; sh; }`, `exec <<EOF … bash`: a redirect or pipe on a
        // group, a loop or the shell itself reaches a program that reads code from its input.
        if fed.reaches(segment) && reads_code_from_stdin(name, view.args) {
            return Some(format!(
                "`{name}` reads code from standard input, which this command feeds"
            ));
        }
        if name == "rm" {
            let rm = parse_rm(view.args.get(1..).unwrap_or(&[]));
            // Targets fed by xargs are as unknown as an expansion.
            let fed = view
                .wrappers
                .iter()
                .any(|w| matches!(*w, "xargs" | "parallel"));
            if forceful_outside_carve_out(&rm, &vars, index) || (fed && (rm.recursive || rm.force))
            {
                return Some("`rm -r`/`-f` deletes without asking".into());
            }
        }
        fed.after(segment);
        vars.record(segment, index);
    }
    None
}

/// What can reach a segment's standard input besides its own redirects and pipe: `exec`
/// with an input redirect feeds every later command; a loop's redirect (`done < f`) or a
/// pipe into a group (`… | { :; sh; }`) feeds commands the lexer keeps apart from it.
struct Feeds {
    /// A loop or group in this script has its input fed somewhere.
    compound: bool,
    /// An earlier `exec` redirected the shell's own input.
    exec: bool,
}

fn feeds_input(segment: &Segment) -> bool {
    segment.redirects.iter().any(|r| {
        r.fd.is_none_or(|fd| fd == 0)
            && matches!(
                r.op,
                RedirectOp::Read
                    | RedirectOp::Heredoc
                    | RedirectOp::HereString
                    | RedirectOp::ReadWrite
            )
    })
}

impl Feeds {
    fn of(script: &Script) -> Self {
        let features = script.features;
        let shaped = features.compound || features.group || features.subshell;
        let fed_somewhere = script
            .segments
            .iter()
            .any(|s| s.connector == Connector::Pipe || (s.words.is_empty() && feeds_input(s)));
        Feeds {
            compound: shaped && fed_somewhere,
            exec: false,
        }
    }

    fn reaches(&self, segment: &Segment) -> bool {
        self.compound || self.exec || segment.connector == Connector::Pipe || feeds_input(segment)
    }

    fn after(&mut self, segment: &Segment) {
        let bare_exec = segment.words.len() == 1
            && segment.words.first().and_then(command_name) == Some("exec");
        self.exec |= bare_exec && feeds_input(segment);
    }
}

/// What makes one segment high-risk, looking at it alone.
fn segment_reason(segment: &Segment, view: &CommandView<'_>) -> Option<String> {
    if segment.all_words().any(|w| w.has_substitution()) {
        return Some("it uses command or process substitution".into());
    }
    if let Some(word) = view.args.first()
        && word.has_expansion()
    {
        return Some(format!(
            "the command to run is an expansion (`{}`)",
            word.text()
        ));
    }
    if let Some(redirect) = segment.redirects.iter().find(|r| r.writes_output()) {
        return Some(format!(
            "it redirects output to `{}`",
            redirect.target.text()
        ));
    }
    // A redirection to or from a path built when it runs could be anything (`/dev/tcp/…`).
    if let Some(redirect) = segment
        .redirects
        .iter()
        .find(|r| !r.feeds_inline_input() && runtime_built(&r.target))
    {
        return Some(format!(
            "it redirects from or to a path built when it runs (`{}`)",
            redirect.target.text()
        ));
    }
    if let Some(reason) = variables::sets_code_variable(segment, view) {
        return Some(reason);
    }
    if segment.inline.iter().any(|inline| !inline.lexes) {
        return Some("a nested command does not lex".into());
    }
    let name = view.name.unwrap_or("");
    // `python3 {-c,'…'}`, `X=-delete; find . $X`: options built when it runs are invisible
    // here, and for these programs options can be code.
    if (is_shell_or_interpreter(name) || argument_sensitive(name) || argv_decides(name))
        && let Some(word) = view.args.iter().skip(1).find(|w| runtime_built(w))
    {
        return Some(format!(
            "the arguments of `{name}` are built when it runs (`{}`)",
            word.text()
        ));
    }
    // `chmod $m f`: a mode or owner built when it runs (a built file name is only a file).
    if matches!(name, "chmod" | "chown" | "chgrp")
        && let Some(word) = view
            .args
            .iter()
            .skip(1)
            .find(|w| !w.text().starts_with('-') || w.has_expansion())
            .filter(|w| runtime_built(w))
    {
        return Some(format!(
            "the mode or owner `{name}` sets is built when it runs (`{}`)",
            word.text()
        ));
    }
    let stdin_script = segment
        .redirects
        .iter()
        .any(|r| r.feeds_inline_input() || r.op == RedirectOp::Read);
    if is_shell_or_interpreter(name) || reads_script_from_stdin(name) {
        if stdin_script {
            return Some(format!("it feeds a script to `{name}` on standard input"));
        }
        if runs_inline_code(name, view.args) {
            return Some(format!("`{name}` runs inline code"));
        }
    }
    if segment.connector == Connector::Pipe
        && (is_shell_or_interpreter(name)
            || reads_script_from_stdin(name)
            || matches!(name, "xargs" | "parallel")
            || view.wrappers.contains(&"xargs"))
    {
        return Some(format!("input is piped into `{name}`"));
    }
    if matches!(name, "eval" | "source" | ".") {
        return Some(format!("`{name}` runs code from its arguments or a file"));
    }
    if let Some(reason) = hidden_code(name, view.args) {
        return Some(reason);
    }
    for (wrapper, argv) in view.wrappers.iter().zip(&view.wrapper_argv) {
        if let Some(reason) = hidden_code(wrapper, argv) {
            return Some(reason);
        }
    }
    view.nested_argv.iter().find_map(|argv| {
        let inner = command_view(argv);
        let name = inner.name.unwrap_or("");
        if is_network_client(name) {
            return Some(format!("it runs the network client `{name}`"));
        }
        if is_shell_or_interpreter(name) && runs_inline_code(name, inner.args) {
            return Some(format!("`{name}` runs inline code"));
        }
        hidden_code(name, inner.args)
    })
}

/// Commands whose arguments a denylist rule reads to decide (`systemctl reboot`, `kill -9 1`,
/// `dd of=/dev/sda`): an argument built when it runs could be what the rule refuses. File
/// copiers and permission changes are left out (their rules look at fixed system paths, and a
/// built file name is everyday use); `chmod`'s mode is checked on its own.
fn argv_decides(name: &str) -> bool {
    is_ruled(name)
        && !matches!(
            name,
            "tee" | "cp" | "mv" | "install" | "ln" | "history" | "truncate" | "chmod" | "chown"
        )
}

/// A word whose value is only known when it runs: a parameter, a substitution, arithmetic, a
/// glob or a brace expansion (a `~` alone names a home, nothing more).
fn runtime_built(word: &Word) -> bool {
    word.glob
        || word.brace
        || word
            .parts
            .iter()
            .any(|p| !matches!(p, WordPart::Literal { .. } | WordPart::Tilde { .. }))
}

#[cfg(test)]
mod tests {
    use crate::policy::shell::ShellAnalysis;

    fn reason(cmd: &str) -> Option<String> {
        ShellAnalysis::new(cmd, &[]).high_risk
    }

    #[test]
    fn marks_hazards() {
        for cmd in [
            "ls $(pwd)",
            "$EDITOR notes.md",
            "git log > log.txt",
            "python3 <<EOF\nx\nEOF",
            "sh < script.sh",
            "echo ls | sh",
            "ls | xargs rm",
            "eval ls",
            ". ./env.sh",
            "python -c 1",
            "ssh host ls",
            "time curl x",
            "rm -rf ./build",
            "rm -f x.txt",
            "echo 'unterminated",
            "find . -delete",
            "awk 'BEGIN{system(\"id\")}'",
            "watch 'ls > out'",
            "PAGER='sh -c id' git log",
            "env LD_PRELOAD=./x.so ls",
            "export BASH_ENV=./x; bash script.sh",
            "GIT_SSH_COMMAND=id git fetch",
            "LESSOPEN='|id %s' less f",
            "while true; do ls; done",
            "while :; do ls; done",
            "until false; do ls; done",
            "for ((;;)); do ls; done",
            "ed f <<EOF\n!id\nEOF",
            "trap -- 'ls > x' EXIT",
        ] {
            assert!(reason(cmd).is_some(), "{cmd:?}");
        }
    }

    #[test]
    fn leaves_plain_commands_to_the_classifier() {
        for cmd in [
            "ls -la",
            "git status 2>&1",
            "cat <<EOF\nhi\nEOF",
            "grep x < in.txt",
            "ls >/dev/null 2>&1",
            "ps -ef | grep node",
            "rm tmpfile.txt",
            "echo hi >&2",
            "for f in a b; do echo $f; done",
            "while read l; do echo \"$l\"; done < f",
            "while IFS= read -r l; do echo \"$l\"; done < f",
            "for ((i=0; i<3; i++)); do echo $i; done",
            "LANG=C sort f",
            "export NAME=x",
            // Everyday shapes the rules added after the attack rounds must not catch.
            "cp \"$f\" backup/",
            "cp *.txt out/",
            "mv *.log logs/",
            "ln -sf \"$target\" current",
            "echo x | tee \"$LOG\"",
            "chmod +x \"$f\"",
            "for f in *.sh; do chmod +x \"$f\"; done",
            "ls | head; python3 --version",
            "sort < f; node --version",
            "n=\"$1\"; echo $((n * 2))",
            "total=\"$a\"; [[ $total -gt 5 ]] && echo big",
            "for f in *.txt; do n=\"${f%.txt}\"; echo \"${n:0:3}\"; done",
            "git config submodule.recurse true",
            "git config --global protocol.version 2",
            "make test VERBOSE=1",
            "export GOPATH=$HOME/go",
            "ls ~/$dir",
            "cd \"$HOME/$project\" && ls",
            "cat /etc/$name.conf",
            "echo {1..300}",
            "npm init -y",
        ] {
            assert_eq!(reason(cmd), None, "{cmd:?}");
        }
    }
}
