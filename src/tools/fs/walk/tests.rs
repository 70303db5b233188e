//! `grep` and `find` end: at their deadline between lines and entries, after a bounded part of
//! a long line, and refusing patterns too large to search in bounded time. Each slow search
//! runs on a thread and is waited for on a channel, so a search that does not end fails the
//! test instead of hanging it.

use super::*;
use std::sync::mpsc;
use std::time::Duration;

/// Repeated lowercase text without a digit: `(?:[a-z]{100}){40}[0-9]` searches 64 KiB of it
/// in about 1.6 s once its lazy DFA gives up (a release build; docs/benchmarks.md, "What one
/// `grep` can cost"), ten times that in a test build.
fn letters(bytes: usize) -> String {
    "abcdefghij".repeat(bytes / 10)
}

const COSTLY: &str = "(?:[a-z]{100}){40}[0-9]";

/// How long a search that should end soon may take before the test calls it stuck: far more
/// than the bounded searches take, far less than the unbounded ones would.
const STUCK: Duration = Duration::from_secs(60);

/// A deadline no test reaches.
fn far() -> Deadline {
    Deadline::at(Instant::now() + Duration::from_secs(3600))
}

/// `grep` of `rel` beneath `beneath` (a file or a directory, shown as `.` when it is the root).
fn grep_at(beneath: &Beneath, rel: &str, pattern: &Pattern, deadline: Deadline) -> Capped {
    let rel = Path::new(rel);
    let is_file = beneath.list(rel).is_err();
    let shown = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    grep(beneath, rel, pattern, shown, is_file, deadline).unwrap()
}

fn grep_on_a_thread(
    dir: &Path,
    rel: &str,
    pattern: &'static str,
    deadline: Deadline,
) -> mpsc::Receiver<Capped> {
    let (root, rel) = (dir.to_path_buf(), rel.to_string());
    let (done, found) = mpsc::channel();
    std::thread::spawn(move || {
        let beneath = Beneath::open(&root).unwrap();
        let pattern = Pattern::new(pattern).unwrap();
        let _ = done.send(grep_at(&beneath, &rel, &pattern, deadline));
    });
    found
}

#[test]
fn a_costly_search_stops_at_its_deadline_between_lines() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("logs")).unwrap();
    // 64 lines of 8 KiB: about 12 s for the costly pattern without a deadline in a release
    // build, two minutes in a test build (whose dependencies are not optimized).
    let line = letters(8 * 1024);
    let text: String = (0..64).map(|_| format!("{line}\n")).collect();
    std::fs::write(dir.path().join("logs/a.log"), &text).unwrap();
    let deadline = Deadline::at(Instant::now() + Duration::from_secs(1));
    let found = grep_on_a_thread(dir.path(), "logs", COSTLY, deadline)
        .recv_timeout(STUCK)
        .expect("the search ran on past its deadline");
    assert!(found.out_of_time && found.text.is_empty());
}

#[test]
fn a_long_line_is_searched_only_in_its_head() {
    let dir = tempfile::tempdir().unwrap();
    // One line of 4 MiB.
    let mut line = letters(4 << 20);
    line.replace_range(900_000..900_006, "NEEDLE");
    line.replace_range(2_000_000..2_000_005, "LATER");
    std::fs::write(dir.path().join("bundle.js"), &line).unwrap();
    let far = far();
    // Large once compiled, but quick to search: its head only.
    let large = "[a-j]{1000}NEEDLE";
    assert_eq!(Pattern::new(large).unwrap().line_cap, LARGE_PATTERN_LINE);
    let cut = grep_on_a_thread(dir.path(), "bundle.js", large, far.clone())
        .recv_timeout(STUCK)
        .unwrap();
    assert_eq!((cut.cut_lines, cut.line_cap), (1, LARGE_PATTERN_LINE));
    assert!(cut.text.is_empty(), "NEEDLE is past the first 64 KiB");
    // A small pattern searches the first megabyte of a line, and shows a match's line cut.
    let small = grep_on_a_thread(dir.path(), "bundle.js", "NEEDLE", far.clone())
        .recv_timeout(STUCK)
        .unwrap();
    assert_eq!((small.cut_lines, small.line_cap), (1, SMALL_PATTERN_LINE));
    let more = line.len() - SHOWN_LINE;
    assert_eq!(
        small.text,
        format!(
            "bundle.js:1:{} [… {more} more bytes]\n",
            &line[..SHOWN_LINE]
        )
    );
    let later = grep_on_a_thread(dir.path(), "bundle.js", "LATER", far)
        .recv_timeout(STUCK)
        .unwrap();
    assert!(later.text.is_empty(), "LATER is past the first megabyte");
}

#[test]
fn find_stops_at_its_deadline() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "").unwrap();
    let beneath = Beneath::open(dir.path()).unwrap();
    let passed = Deadline::at(Instant::now());
    let found = find(&beneath, Path::new(""), "*", Path::new("."), passed).unwrap();
    assert!(found.out_of_time && found.text.is_empty());
    let far = far();
    let found = find(&beneath, Path::new(""), "*", Path::new("."), far).unwrap();
    assert!(!found.out_of_time);
    assert_eq!(found.text, "./a.txt\n");
}

/// The cut in a long line is not its end: `$` and `\b` match there only where they would in
/// the whole line.
#[test]
fn a_long_lines_cut_is_not_its_end() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("long.txt"),
        "a".repeat(SMALL_PATTERN_LINE + 10),
    )
    .unwrap();
    let beneath = Beneath::open(dir.path()).unwrap();
    for pattern in ["a$", r"a\b"] {
        let found = grep_at(&beneath, "long.txt", &Pattern::new(pattern).unwrap(), far());
        assert_eq!((found.text.as_str(), found.cut_lines), ("", 1), "{pattern}");
    }
    let found = grep_at(&beneath, "long.txt", &Pattern::new("^a").unwrap(), far());
    assert!(
        found.text.starts_with("long.txt:1:aaa"),
        "{}",
        &found.text[..40]
    );
}

/// `/stop` ends a search at once, whatever time is left.
#[test]
fn a_stopped_run_ends_its_search() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "match\n").unwrap();
    let beneath = Beneath::open(dir.path()).unwrap();
    let stop = CancellationToken::new();
    let far = far().or_cancelled(stop.clone());
    let pattern = Pattern::new("match").unwrap();
    let found = grep_at(&beneath, "", &pattern, far.clone());
    assert!(!found.out_of_time);
    assert_eq!(found.text, "./a.txt:1:match\n");
    stop.cancel();
    let found = grep_at(&beneath, "", &pattern, far.clone());
    assert!(found.out_of_time && found.text.is_empty());
    let found = find(&beneath, Path::new(""), "*", Path::new("."), far).unwrap();
    assert!(found.out_of_time && found.text.is_empty());
}

/// A file over 8 MiB is skipped in a directory's search and searched in its head alone; both
/// are counted, for the output to say so.
#[test]
fn files_over_the_cap_are_counted_when_skipped_or_cut() {
    let dir = tempfile::tempdir().unwrap();
    let big = std::fs::File::create(dir.path().join("big.log")).unwrap();
    let head = format!("NEEDLE\n{}", "x\n".repeat(5000));
    std::io::Write::write_all(&mut &big, head.as_bytes()).unwrap();
    big.set_len(MAX_GREP_FILE + 1).unwrap();
    std::fs::write(dir.path().join("small.txt"), "NEEDLE\n").unwrap();
    let beneath = Beneath::open(dir.path()).unwrap();
    let pattern = Pattern::new("NEEDLE").unwrap();
    let all = grep_at(&beneath, "", &pattern, far());
    assert_eq!(all.text, "./small.txt:1:NEEDLE\n");
    assert_eq!((all.large_skipped, all.large_cut), (1, false));
    let alone = grep_at(&beneath, "big.log", &pattern, far());
    assert_eq!(alone.text, "big.log:1:NEEDLE\n");
    assert_eq!((alone.large_skipped, alone.large_cut), (0, true));
}

#[test]
fn patterns_too_large_to_search_in_bounded_time_are_refused_saying_how_to_shrink_them() {
    for too_large in ["[a-z]{20000}", r"\w{50}x"] {
        let refused = Pattern::new(too_large).err().unwrap();
        assert!(
            refused.contains("too large once compiled (over 1024 KiB)")
                && refused.contains("(?-u)"),
            "{refused}"
        );
    }
    // ASCII-only, the same class is small.
    assert_eq!(
        Pattern::new(r"(?-u)\w{50}x").unwrap().line_cap,
        SMALL_PATTERN_LINE
    );
    assert_eq!(Pattern::new(COSTLY).unwrap().line_cap, LARGE_PATTERN_LINE);
    let invalid = Pattern::new("(").err().unwrap();
    assert!(
        invalid.contains("not a valid regular expression"),
        "{invalid}"
    );
}
