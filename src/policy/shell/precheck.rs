//! The deterministic high-risk pre-check: shapes of command that no model is asked about and no
//! allowlist covers. Only mode `high-risk` or an explicit config `allow` runs these unasked.

use super::ast::{Connector, RedirectOp, Script};
use super::command::{
    command_name, command_view, is_network_client, is_shell_or_interpreter, runs_inline_code,
};
use super::denylist::rm::{TempVars, assigns_tmpdir, forceful_outside_carve_out, parse_rm};
use super::lexer::{Lexed, lex_nested};

/// Why a command is high-risk without asking the classifier, if it is.
#[must_use]
pub fn high_risk_reason(lexed: &Lexed) -> Option<String> {
    if let Some(error) = &lexed.error {
        return Some(format!("the command does not lex ({error})"));
    }
    let tmpdir_assigned = assigns_tmpdir(&lexed.script);
    let mut reason = None;
    lexed.script.walk(&mut |script| {
        if reason.is_none() {
            reason = script_reason(script, tmpdir_assigned, 0);
        }
    });
    reason
}

fn script_reason(script: &Script, tmpdir_assigned: bool, depth: usize) -> Option<String> {
    let mut vars = TempVars::new(tmpdir_assigned);
    for (index, segment) in script.segments.iter().enumerate() {
        if segment.all_words().any(|w| w.has_substitution()) {
            return Some("it uses command or process substitution".into());
        }
        let view = command_view(&segment.words);
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
        for word in segment.words.iter().chain(segment.evaluated.iter()) {
            if let Some(name) = command_name(word)
                && is_network_client(name)
            {
                return Some(format!("it uses the network client `{name}`"));
            }
        }
        let name = view.name.unwrap_or("");
        if is_shell_or_interpreter(name) {
            if segment
                .redirects
                .iter()
                .any(|r| r.feeds_inline_input() || r.op == RedirectOp::Read)
            {
                return Some(format!("it feeds a script to `{name}` on standard input"));
            }
            if runs_inline_code(name, view.args) {
                return Some(format!("`{name}` runs inline code"));
            }
        }
        if segment.connector == Connector::Pipe
            && (is_shell_or_interpreter(name)
                || matches!(name, "xargs" | "parallel")
                || view.wrappers.contains(&"xargs"))
        {
            return Some(format!("input is piped into `{name}`"));
        }
        if matches!(name, "eval" | "source" | ".") {
            return Some(format!("`{name}` runs code from its arguments or a file"));
        }
        if name == "find"
            && view.args.iter().any(|w| {
                matches!(
                    w.text(),
                    "-exec" | "-execdir" | "-ok" | "-okdir" | "-delete"
                )
            })
        {
            return Some("`find` runs commands or deletes files".into());
        }
        if matches!(name, "awk" | "gawk" | "mawk" | "nawk")
            && view.args.iter().any(|w| {
                let t = w.text();
                t.contains("system(") || t.contains("getline") || t.contains("print >")
            })
        {
            return Some(format!(
                "the `{name}` program runs commands or writes files"
            ));
        }
        if name == "rm" {
            let rm = parse_rm(&view.args[1..]);
            if forceful_outside_carve_out(&rm, &vars, &script.segments, index) {
                return Some("`rm -r`/`-f` deletes without asking".into());
            }
        }
        for inline in &view.inline_scripts {
            if let Ok(inner) = lex_nested(inline, depth) {
                if let Some(reason) = script_reason(&inner, tmpdir_assigned, depth + 1) {
                    return Some(reason);
                }
            } else {
                return Some("a nested command does not lex".into());
            }
        }
        vars.record(segment, index);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::high_risk_reason;
    use crate::policy::shell::lexer::lex;

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
        ] {
            assert!(high_risk_reason(&lex(cmd)).is_some(), "{cmd:?}");
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
        ] {
            assert_eq!(high_risk_reason(&lex(cmd)), None, "{cmd:?}");
        }
    }
}
