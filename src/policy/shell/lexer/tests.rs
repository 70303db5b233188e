use super::lex;
use crate::policy::shell::ast::{Connector, Script, WordPart};

fn words(script: &Script) -> Vec<Vec<String>> {
    script
        .segments
        .iter()
        .map(|s| s.words.iter().map(|w| w.text().to_string()).collect())
        .collect()
}

fn ok(input: &str) -> Script {
    let lexed = lex(input);
    assert_eq!(lexed.error, None, "{input:?} should lex");
    lexed.script
}

#[test]
fn splits_segments_on_operators() {
    let script = ok("a 1 && b 2 || c; d | e & f\ng");
    assert_eq!(
        words(&script),
        vec![
            vec!["a", "1"],
            vec!["b", "2"],
            vec!["c"],
            vec!["d"],
            vec!["e"],
            vec!["f"],
            vec!["g"]
        ]
    );
    let connectors: Vec<_> = script.segments.iter().map(|s| s.connector).collect();
    use Connector::*;
    assert_eq!(
        connectors,
        vec![Start, And, Or, Semicolon, Pipe, Background, Newline]
    );
}

#[test]
fn removes_quotes_and_escapes() {
    let script = ok(r#"r''m -"r"f \/ $'\x72\x6d' "a b"'c'"#);
    assert_eq!(words(&script), vec![vec!["rm", "-rf", "/", "rm", "a bc"]]);
    assert!(
        script.segments[0]
            .words
            .iter()
            .all(|w| w.literal().is_some())
    );
}

#[test]
fn finds_substitutions_everywhere() {
    let script = ok("echo \"$(rm -rf /)\" `id` <(ls) ${x:-$(whoami)}");
    let mut nested = Vec::new();
    script.walk(&mut |s| nested.push(words(s)));
    assert_eq!(nested.len(), 5, "{nested:?}");
    assert!(nested.contains(&vec![vec!["rm".to_string(), "-rf".into(), "/".into()]]));
    assert!(nested.contains(&vec![vec!["whoami".to_string()]]));
}

#[test]
fn subshells_groups_and_functions() {
    let script = ok("(cd x && ls) | { grep a; wc -l; }");
    assert_eq!(
        words(&script),
        vec![
            vec!["cd", "x"],
            vec!["ls"],
            vec!["grep", "a"],
            vec!["wc", "-l"]
        ]
    );
    assert!(script.features.subshell && script.features.group);
    assert_eq!(script.segments[2].connector, Connector::Pipe);

    let bomb = ok(":(){ :|:& };:");
    assert_eq!(bomb.functions.len(), 1);
    assert_eq!(bomb.functions[0].name, ":");
    assert_eq!(words(&bomb.functions[0].body), vec![vec![":"], vec![":"]]);
    assert_eq!(words(&bomb), vec![vec![":"]]);
}

#[test]
fn compound_commands() {
    let script = ok("for f in $(ls); do rm \"$f\"; done; if true; then reboot; fi");
    let all: Vec<_> = words(&script)
        .into_iter()
        .filter(|w| !w.is_empty())
        .collect();
    assert_eq!(all, vec![vec!["rm", "$f"], vec!["true"], vec!["reboot"]]);
    assert!(script.features.compound);
    assert!(script.segments[0].evaluated[0].has_substitution());

    let case = ok("case $x in a|b) echo ab;; *) shutdown now;; esac");
    let all: Vec<_> = words(&case).into_iter().filter(|w| !w.is_empty()).collect();
    assert_eq!(all, vec![vec!["echo", "ab"], vec!["shutdown", "now"]]);

    let loop_ = ok("while read l; do echo \"$l\"; done < in.txt > out.txt");
    let last = loop_.segments.last().unwrap();
    assert_eq!(last.redirects.len(), 2);
}

#[test]
fn redirections_and_heredocs() {
    let script = ok("cat <<EOF > out\nhello $(id)\nEOF\necho done 2>&1 >/dev/null");
    assert_eq!(words(&script), vec![vec!["cat"], vec!["echo", "done"]]);
    let first = &script.segments[0];
    assert_eq!(first.redirects.len(), 2);
    let body = first.redirects[0].heredoc.as_ref().unwrap();
    assert!(body.has_substitution());
    assert!(
        !script.segments[1]
            .redirects
            .iter()
            .any(|r| r.writes_output())
    );
    assert!(first.redirects[1].writes_output());

    let quoted = ok("cat <<'EOF'\n$(id)\nEOF");
    assert!(
        !quoted.segments[0].redirects[0]
            .heredoc
            .as_ref()
            .unwrap()
            .has_substitution()
    );

    let tabs = ok("cat <<-EOF\n\tx\n\tEOF\nls");
    assert_eq!(words(&tabs), vec![vec!["cat"], vec!["ls"]]);

    let herestring = ok("bash <<< 'rm -rf /'");
    assert_eq!(
        herestring.segments[0].redirects[0].target.text(),
        "rm -rf /"
    );
}

#[test]
fn assignments_and_tilde() {
    let script = ok("A=1 B=\"$(mktemp -d)\" cmd ~/x ~root --f=~/y a=b");
    let seg = &script.segments[0];
    assert_eq!(seg.assignments.len(), 2);
    assert_eq!(seg.assignments[1].name, "B");
    assert!(seg.assignments[1].value.has_substitution());
    assert_eq!(
        words(&script),
        vec![vec!["cmd", "~/x", "~root", "--f=~/y", "a=b"]]
    );
    assert!(matches!(seg.words[1].parts[0], WordPart::Tilde { .. }));
    assert!(matches!(seg.words[3].parts[1], WordPart::Tilde { .. }));
}

#[test]
fn globs_and_braces() {
    let script = ok("rm * '*' x{a,b} \"{a,b}\" {} a[1]");
    let w = &script.segments[0].words;
    assert!(w[1].glob);
    assert!(!w[2].glob);
    assert!(w[3].brace);
    assert!(!w[4].brace);
    assert!(!w[5].brace);
    assert!(w[6].glob);
}

#[test]
fn errors_are_reported_and_lenient_script_kept() {
    for bad in [
        "echo 'x",
        "echo \"x",
        "(ls",
        "echo $(ls",
        "ls )",
        "echo `ls",
    ] {
        let lexed = lex(bad);
        assert!(lexed.error.is_some(), "{bad:?} should not lex");
    }
    let lexed = lex("rm -rf / 'oops");
    assert!(lexed.error.is_some());
    assert_eq!(words(&lexed.script), vec![vec!["rm", "-rf", "/", "oops"]]);
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let deep = "$(".repeat(5000) + &")".repeat(5000);
    assert!(lex(&deep).error.is_some());
}

/// Every segment's words, at every depth (substitutions included), flattened.
fn all_commands(script: &Script) -> Vec<String> {
    let mut out = Vec::new();
    script.walk(&mut |s| {
        for segment in &s.segments {
            if !segment.words.is_empty() {
                let words: Vec<&str> = segment.words.iter().map(|w| w.text()).collect();
                out.push(words.join(" "));
            }
        }
    });
    out
}

#[test]
fn a_carriage_return_is_part_of_a_word() {
    // bash: the delimiter is `EOF\r`, the body ends at the second line, and `echo HIDDEN`
    // runs. A lexer that read `\r` as a blank kept it inside the heredoc.
    let lexed = lex("cat <<EOF\r\nEOF\r\necho HIDDEN\nEOF\n");
    assert!(
        all_commands(&lexed.script).contains(&"echo HIDDEN".to_string()),
        "{:?}",
        lexed.script
    );
    assert_eq!(words(&ok("ls\r")), vec![vec!["ls\r"]]);
}

#[test]
fn heredoc_bodies_start_after_the_logical_line() {
    // A substitution opened on the heredoc's line and closed below it is still a substitution;
    // the body starts after it.
    let script = ok("cat <<EOF; echo $(\nrm -rf /\n)\nbody line\nEOF\necho after");
    let commands = all_commands(&script);
    assert!(commands.contains(&"rm -rf /".to_string()), "{commands:?}");
    assert!(commands.contains(&"echo after".to_string()), "{commands:?}");
    let body = script.segments[0].redirects[0].heredoc.as_ref().unwrap();
    assert_eq!(body.text(), "body line\n");

    // Quotes, backticks, arithmetic and `${…}` keep the line going too.
    for input in [
        "cat <<EOF; x=\"a\nb\"\nbody\nEOF\necho after",
        "cat <<EOF; echo `\necho BT`\nbody\nEOF\necho after",
        "cat <<EOF; echo $((\n1+1))\nbody\nEOF\necho after",
        "cat <<EOF; echo ${x:-\nfoo}\nbody\nEOF\necho after",
        "cat <<EOF; echo \\\nCONT\nbody\nEOF\necho after",
    ] {
        let script = ok(input);
        let body = script.segments[0].redirects[0].heredoc.as_ref().unwrap();
        assert_eq!(body.text(), "body\n", "{input:?}");
        assert!(all_commands(&script).contains(&"echo after".to_string()));
    }

    // A subshell or group is not a word: its newline ends the line (bash: a syntax error).
    assert!(
        lex("cat <<EOF; (\necho SUB\n)\nbody\nEOF\n")
            .error
            .is_some()
    );

    // A heredoc inside a substitution reads its body there; the outer one after the line.
    let script = ok("cat <<A; x=$(cat <<B\ninner\nB\n)\nouter\nA\necho after");
    let bodies: Vec<String> = {
        let mut out = Vec::new();
        script.walk(&mut |s| {
            for seg in &s.segments {
                for r in &seg.redirects {
                    out.extend(r.heredoc.as_ref().map(|b| b.text().to_string()));
                }
            }
        });
        out
    };
    assert!(bodies.contains(&"outer\n".to_string()), "{bodies:?}");
    assert!(bodies.contains(&"inner\n".to_string()), "{bodies:?}");
    assert!(all_commands(&script).contains(&"echo after".to_string()));

    // Two heredocs on one line: bodies in order.
    let script = ok("cat <<A <<B\none\nA\ntwo\nB\necho after");
    let bodies: Vec<&str> = script.segments[0]
        .redirects
        .iter()
        .map(|r| r.heredoc.as_ref().unwrap().text())
        .collect();
    assert_eq!(bodies, vec!["one\n", "two\n"]);
    assert!(all_commands(&script).contains(&"echo after".to_string()));
}

#[test]
fn heredoc_delimiters_and_lines_as_bash_reads_them() {
    let visible = |input: &str| all_commands(&lex(input).script);
    // Backslash-newline joins body lines before they are compared.
    assert!(visible("cat <<EOF\nx\nEO\\\nF\necho HIDDEN\nEOF\n").contains(&"echo HIDDEN".into()));
    // … but not in a quoted heredoc.
    assert!(!visible("cat <<'EOF'\nx\nEO\\\nF\necho DATA\nEOF\n").contains(&"echo DATA".into()));
    // The delimiter is unexpanded: `$'E\x4fF'` is `EOF`, a backtick word is itself.
    assert!(visible("cat <<$'E\\x4fF'\nB\nEOF\necho AFTER\n").contains(&"echo AFTER".into()));
    assert!(visible("cat <<`x`\nA\n`x`\necho AFTER\n").contains(&"echo AFTER".into()));
    assert!(visible("cat <<$x\nC\n$x\necho AFTER\n").contains(&"echo AFTER".into()));
    assert!(visible("cat <<\"E\"O\\F\nD\nEOF\necho AFTER\n").contains(&"echo AFTER".into()));
    // Inside `$(…)`, a delimiter followed by `)` ends the body and the substitution.
    assert!(visible("echo $(cat <<EOF\nx\nEOF)\necho V4\n").contains(&"echo V4".into()));
    // A trailing blank keeps the line from being the delimiter.
    assert!(!visible("cat <<EOF\nx\nEOF \necho DATA\nEOF\n").contains(&"echo DATA".into()));
    // `<<-` strips leading tabs.
    assert!(visible("cat <<-EOF\n\tx\n\t\tEOF\necho AFTER\n").contains(&"echo AFTER".into()));
}

#[test]
fn loops_that_cannot_end() {
    for endless in [
        "while true; do ls; done",
        "while :; do ls; done",
        "while [ 1 ]; do ls; done",
        "while test x; do ls; done",
        "while (( 1 )); do ls; done",
        "until false; do ls; done",
        "for ((;;)); do ls; done",
        "for ((i=0;;i++)); do ls; done",
        "x=$(while true; do :; done)",
        "{ while true\ndo ls\ndone; }",
    ] {
        let lexed = lex(endless);
        let mut found = false;
        lexed.script.walk(&mut |s| found |= s.features.endless_loop);
        assert!(found, "{endless:?}");
    }
    for ending in [
        "while read l; do echo $l; done",
        "while [ -f x ]; do sleep 1; done",
        "until true; do ls; done",
        "while false; do ls; done",
        "for ((i=0;i<3;i++)); do ls; done",
        "for x in a b; do ls; done",
        "while (( i < 3 )); do i=$((i+1)); done",
    ] {
        let lexed = lex(ending);
        assert_eq!(lexed.error, None, "{ending:?}");
        let mut found = false;
        lexed.script.walk(&mut |s| found |= s.features.endless_loop);
        assert!(!found, "{ending:?}");
    }
}

#[test]
fn short_malformed_inputs_never_panic() {
    // Found by fuzzing: a trailing backslash inside `${…}` once stepped past the end.
    for input in [
        "${\\",
        "echo ${\\",
        "${",
        "$((",
        "$(",
        "`",
        "<<",
        "<<<",
        "${x:-\\",
        "a=(\\",
        "case",
        "case x in",
        "for",
        "for ((",
        "[[",
        "2>",
        "&>",
        "cat <<",
        "cat <<'",
        "cat <<$'",
        "f()",
        "function",
        "((",
        "$[",
        "${#",
        "${!",
        "\\",
        "'",
        "\"",
        "$'\\",
        "$'\\x",
        "cat <<E\n",
        "x=$(cat <<E\n",
        "echo $(( ( ",
    ] {
        let _ = lex(input);
    }
}

#[test]
fn comments_are_located() {
    let lexed = lex("ls # note\necho x #two");
    let text: Vec<char> = "ls # note\necho x #two".chars().collect();
    let found: Vec<String> = lexed
        .comments
        .iter()
        .map(|(a, b)| text[*a..*b].iter().collect())
        .collect();
    assert_eq!(found, vec!["# note", "#two"]);
}

#[test]
fn double_parens_are_arithmetic_only_when_bash_says_so() {
    // bash runs `rm x` here: the `)` matching the second `(` is not followed by `)`.
    for input in [
        "((rm x);ls)",
        "((rm x) )",
        "echo $((rm x) )",
        "x=$((rm x);ls)",
    ] {
        let lexed = lex(input);
        assert_eq!(lexed.error, None, "{input:?}");
        assert!(
            all_commands(&lexed.script).contains(&"rm x".to_string()),
            "{input:?}: {:?}",
            all_commands(&lexed.script)
        );
    }
    for input in [
        "((1 + (2)))",
        "(( x = (1+2) * 3 ))",
        "echo $(( (1) ))",
        "echo $((1))",
    ] {
        let lexed = lex(input);
        assert_eq!(lexed.error, None, "{input:?}");
        assert!(
            all_commands(&lexed.script)
                .iter()
                .all(|c| c.starts_with("echo")),
            "{input:?}"
        );
    }
}

/// Every reserved word is recognized as one, and nothing else is.
#[test]
fn reserved_words_are_exactly_the_list() {
    for word in super::RESERVED {
        let chars: Vec<char> = word.chars().collect();
        let budget = super::Budget::default();
        let parser = super::Parser::new(&chars, false, 0, &budget);
        assert_eq!(parser.peek_reserved(), Some(word), "{word}");
    }
    for word in ["iff", "done2", "x", "{}", "coprocs"] {
        let chars: Vec<char> = word.chars().collect();
        let budget = super::Budget::default();
        let parser = super::Parser::new(&chars, false, 0, &budget);
        assert_eq!(parser.peek_reserved(), None, "{word}");
    }
}

#[test]
fn nested_parameter_expansions_are_too_complex_not_a_crash() {
    // Each `${` nests once more; past the limit it is too complex, on any thread's stack.
    for opener in ["${x#", "${x:-", "${x/"] {
        let command = format!("echo {}", opener.repeat(2000));
        let lexed = super::lex(&command);
        assert_eq!(
            lexed.error.map(|e| e.kind),
            Some(super::LexErrorKind::TooComplex),
            "{opener}"
        );
    }
}

#[test]
fn ansi_c_escapes_without_digits_stay_as_written() {
    let script = ok("trap $'echo\\x; reboot' EXIT");
    assert_eq!(words(&script)[0][1], "echo\\x; reboot");
    let script = ok("echo $'\\#' $'\\u' $'\\x41'");
    assert_eq!(words(&script)[0][1..], ["\\#", "\\u", "A"]);
}
