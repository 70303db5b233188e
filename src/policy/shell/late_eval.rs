//! Strings bash evaluates as code after the gate has looked: arithmetic evaluates array
//! subscripts, and a subscript can hold a command substitution — `x='a[$(cmd)]'; echo $((x))`
//! runs `cmd`, as do `[[ $x -eq 0 ]]`, `${!x}` and `${x@P}`. No rule can see what such a string
//! holds once it comes from a quoted literal, a file or standard input, so a command that both
//! brings in such a string and evaluates strings is high-risk ([`super::facts::Facts`] gathers
//! both over the whole command).

use super::ast::{Segment, Word, WordPart};
use super::command::command_name;
use super::names::sets_variables;

/// Arithmetic on strings, indirection or prompt expansion in this segment.
pub(super) fn evaluates_strings(segment: &Segment) -> bool {
    let mut words = segment.words.iter().map(Word::literal);
    let first = segment.words.first().and_then(command_name);
    let arithmetic_test = matches!(first, Some("[[" | "[" | "test"))
        && words.any(|w| matches!(w, Some("-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge")));
    let mut words = segment.words.iter().map(Word::literal);
    let integer_declaration = matches!(first, Some("declare" | "typeset" | "local"))
        && words.any(|w| w.is_some_and(|w| w.starts_with('-') && w.contains('i')));
    // `printf -v 'a[$(…)]'`, `declare 'a[$(…)]=1'`, `unset 'a[…]'`, `read 'a[…]'`: a name
    // with a subscript is evaluated; so is `declare -a a='(…)'`, a compound assignment.
    let names_command = first.is_some_and(sets_variables);
    let subscripted_name = names_command
        && segment
            .words
            .iter()
            .skip(1)
            .any(|w| w.text().contains('[') || w.text().contains("=("));
    arithmetic_test
        || integer_declaration
        || subscripted_name
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
                            || (op.starts_with(':') && !numeric_substring(op)))
                }
                _ => false,
            })
        })
}

/// `${x:2}`, `${x:0:3}`, `${x: -2}`: a substring whose offset and length are plain numbers,
/// which evaluates nothing it was given.
fn numeric_substring(op: &str) -> bool {
    let Some(rest) = op.strip_prefix(':') else {
        return false;
    };
    let number = |n: &str| {
        let n = n.trim();
        let digits = n.strip_prefix('-').unwrap_or(n);
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    };
    !rest.starts_with(['-', '=', '?', '+']) && rest.split(':').all(number)
}

/// Strings that no rule read: a literal holding a `$` or a backtick (whole, or a piece of one
/// put together later: `a='$'; b='(id)'; x="z[$a$b]"`, or a lone unquoted `$`), the names of
/// files a glob matches (a file may be named `x[$(cmd)].log`), the working directory's name
/// (`$PWD`, `$OLDPWD`, `$DIRSTACK`, `$(pwd)`: `cd -P` into a link named `a[$(cmd)]`), input
/// read by `read`/`mapfile` or `printf -v`, a heredoc or a here-string.
pub(super) fn brings_in_strings(segment: &Segment) -> bool {
    let command = segment.words.first().and_then(command_name);
    let reads = matches!(command, Some("read" | "mapfile" | "readarray"))
        || (command == Some("printf") && segment.words.iter().any(|w| w.text().starts_with("-v")));
    let inline_input = segment.redirects.iter().any(|r| r.feeds_inline_input());
    let hidden_code = segment.all_words().any(|w| {
        w.glob
            || w.parts.iter().any(|p| match p {
                WordPart::Literal { text, .. } => text.contains('$') || text.contains('`'),
                WordPart::Param { name, .. } => {
                    matches!(name.as_str(), "PWD" | "OLDPWD" | "DIRSTACK")
                }
                WordPart::CommandSub { script, .. } => script.segments.iter().any(|s| {
                    s.words
                        .first()
                        .and_then(command_name)
                        .is_some_and(|name| matches!(name, "pwd" | "dirs"))
                }),
                _ => false,
            })
    });
    reads || inline_input || hidden_code
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
            "printf -v 'a[$(id)]' x",
            "declare 'a[$(id)]=1'",
            "declare -a a='([0]=$(id))'",
            "a=(); unset 'a[$(id)]'",
            "a=(); read 'a[$(id)]' <<< x",
            // A lone unquoted `$` put together with a quoted `(cmd)`.
            "p=$; f=a[$p\"(bash p)]\"; [[ $f -eq 0 ]]",
            // A file named `x[$(cmd)].log`, matched by the glob.
            "for f in *.log; do n=${f%.log}; [[ $n -gt 5 ]] && echo \"$f\"; done",
            "ls *.log | while read n; do echo $((n)); done",
            "for f in *.log; do echo ${f:$n}; done",
            // A directory's name, taken from where `cd -P` (a planted link) led.
            "cd -P d && [[ ${PWD##*/} -eq 0 ]]",
            "cd -P d && echo ${PWD@P}",
            "cd -P d && declare -i n=${PWD##*/}",
            "cd -P d && cd .. && [[ ${OLDPWD##*/} -eq 0 ]]",
            "cd -P d && n=$(pwd); [[ ${n##*/} -eq 0 ]]",
        ] {
            assert!(flagged(cmd), "{cmd}");
        }
        for cmd in [
            "echo $((1 + 2))",
            "i=0; i=$((i+1)); echo $i",
            "for ((i=0;i<3;i++)); do echo $i; done",
            "x=5; [[ $x -eq 5 ]] && echo five",
            "read -r name < f; echo \"$name\"",
            "n=\"$1\"; echo $((n * 2))",
            "total=\"$a\"; [[ $total -gt 5 ]] && echo big",
            "for f in *.txt; do n=\"${f%.txt}\"; echo \"${n:0:3}\"; done",
            "for f in *.txt; do echo \"${f: -4}\"; done",
            "x=abc; echo ${x:1}",
        ] {
            assert!(!flagged(cmd), "{cmd}");
        }
    }
}
