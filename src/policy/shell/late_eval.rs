//! Strings bash evaluates as code after the gate has looked: arithmetic evaluates array
//! subscripts, and a subscript can hold a command substitution — `x='a[$(cmd)]'; echo $((x))`
//! runs `cmd`, as do `[[ $x -eq 0 ]]`, `${!x}` and `${x@P}`. No rule can see what such a string
//! holds once it comes from a quoted literal, a file or standard input, so a command that both
//! brings in such a string and evaluates strings is high-risk ([`super::facts::Facts`] gathers
//! both over the whole command).

use super::ast::{Segment, Word, WordPart};
use super::command::command_name;

/// Arithmetic on strings, indirection or prompt expansion in this segment.
pub(super) fn evaluates_strings(segment: &Segment) -> bool {
    let mut words = segment.words.iter().map(Word::literal);
    let first = segment.words.first().and_then(command_name);
    let arithmetic_test = matches!(first, Some("[[" | "[" | "test"))
        && words.any(|w| matches!(w, Some("-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge")));
    let mut words = segment.words.iter().map(Word::literal);
    let integer_declaration = matches!(first, Some("declare" | "typeset" | "local"))
        && words.any(|w| w.is_some_and(|w| w.starts_with('-') && w.contains('i')));
    arithmetic_test
        || integer_declaration
        || segment.all_words().any(|w| {
            w.parts.iter().any(|p| match p {
                WordPart::Arithmetic { .. } => true,
                WordPart::Param {
                    name, op, braced, ..
                } => {
                    *braced
                        && (name.starts_with('!')
                            || op.contains('@')
                            || op.starts_with('[')
                            || op.starts_with(':'))
                }
                _ => false,
            })
        })
}

/// Strings that no rule read: a quoted literal holding `$(` or a backtick, input read by
/// `read`/`mapfile`, a heredoc or a here-string, or a value put together when it runs
/// (`x="z[$a$b]"` with `a='$'`, `printf -v x …`): its pieces need not show `$(` one by one.
pub(super) fn brings_in_strings(segment: &Segment) -> bool {
    let command = segment.words.first().and_then(command_name);
    let reads = matches!(command, Some("read" | "mapfile" | "readarray"))
        || (command == Some("printf") && segment.words.iter().any(|w| w.text().starts_with("-v")));
    let assembled = |w: &Word| w.parts.iter().any(|p| matches!(p, WordPart::Param { .. }));
    let declares = matches!(
        command,
        Some("declare" | "typeset" | "local" | "export" | "readonly")
    ) && segment
        .words
        .iter()
        .skip(1)
        .any(|w| w.text().contains('=') && assembled(w));
    let assigns_assembled = segment.assignments.iter().any(|a| assembled(&a.value));
    let inline_input = segment.redirects.iter().any(|r| r.feeds_inline_input());
    let hidden_code = segment.all_words().any(|w| {
        w.parts.iter().any(|p| {
            matches!(p, WordPart::Literal { text, quoted: true } if text.contains("$(") || text.contains('`'))
        })
    });
    reads || inline_input || hidden_code || declares || assigns_assembled
}

#[cfg(test)]
mod tests {
    use crate::policy::shell::ShellAnalysis;

    fn flagged(cmd: &str) -> bool {
        ShellAnalysis::new(cmd, &[]).high_risk.is_some()
    }

    #[test]
    fn strings_evaluated_later() {
        for cmd in [
            "x='a[$(id)]'; echo $((x))",
            "x='a[$(id)]'; echo ${!x}",
            "x='$(id)'; echo ${x@P}",
            "x='a[$(id)]'; [[ $x -eq 0 ]]",
            "read x < f; echo $((x + 1))",
            "while read n; do echo $((n*2)); done < nums",
            "x='a[`id`]'; declare -i y=x",
            "mapfile -t a < f; echo ${a[0]:$n}",
            "a='$'; b='(id)'; x=\"z[$a$b]\"; echo $((x))",
            "printf -v x 'z[%s(id)]' '$'; echo $((x))",
            "a='$'; declare x=\"z[${a}(id)]\"; [[ $x -eq 1 ]]",
        ] {
            assert!(flagged(cmd), "{cmd}");
        }
        for cmd in [
            "echo $((1 + 2))",
            "i=0; i=$((i+1)); echo $i",
            "for ((i=0;i<3;i++)); do echo $i; done",
            "x=5; [[ $x -eq 5 ]] && echo five",
            "read -r name < f; echo \"$name\"",
        ] {
            assert!(!flagged(cmd), "{cmd}");
        }
    }
}
