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
