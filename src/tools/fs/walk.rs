//! Recursive walks for `find` and `grep`, each directory opened beneath the root; symlinks are
//! listed, never followed. Output is capped and marked `truncated`.
//!
//! Both stop at a [`Deadline`]: a tool's work on a blocking thread cannot be taken back (its
//! timeout only stops the executor waiting), so the walk itself must end. `grep` checks it
//! between lines, and bounds what one line costs: a regular expression's search is linear in
//! the text, but its factor (the automaton's states) can reach thousands, and a 1 MB line then
//! takes tens of seconds inside one call that cannot look at the clock.

use super::beneath::{Beneath, EntryKind};
use crate::policy::glob::{LeadingDot, glob_match};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// Bytes of `find`/`grep` output kept.
pub const WALK_OUTPUT_CAP: usize = 256 * 1024;
/// Entries visited before giving up (a huge tree must not stall the call).
const MAX_ENTRIES: usize = 200_000;
/// Files larger than this are not searched by `grep` in a directory, and searched only this
/// far when named alone.
pub const MAX_GREP_FILE: u64 = 8 * 1024 * 1024;
/// The compiled size a `grep` pattern may reach (the `regex` crate's default is 10 MiB).
/// `[a-z]{8000}` is about this size and searches 64 KiB in about 3 s on this project's test
/// machine when its lazy DFA gives up (docs/benchmarks.md, "What one `grep` can cost").
const PATTERN_SIZE_LIMIT: usize = 1 << 20;
/// A pattern that compiles within this size is small: its automaton has a few hundred states
/// at most, and a line is searched up to [`SMALL_PATTERN_LINE`].
const SMALL_PATTERN_SIZE: usize = 64 * 1024;
/// How much of one line a small pattern searches.
const SMALL_PATTERN_LINE: usize = 1024 * 1024;
/// How much of one line a larger pattern searches.
const LARGE_PATTERN_LINE: usize = 64 * 1024;
/// How much of a matching line is shown.
const SHOWN_LINE: usize = 4 * 1024;

/// When a walk or search stops: at a time, or once its run is stopped.
#[derive(Clone, Debug)]
pub struct Deadline {
    at: Instant,
    cancel: Option<CancellationToken>,
}

impl Deadline {
    #[must_use]
    pub fn at(when: Instant) -> Self {
        Deadline {
            at: when,
            cancel: None,
        }
    }

    /// The same deadline, passed early once `cancel` is (`/stop`).
    #[must_use]
    pub fn or_cancelled(self, cancel: CancellationToken) -> Self {
        Deadline {
            cancel: Some(cancel),
            ..self
        }
    }

    fn passed(&self) -> bool {
        Instant::now() >= self.at || self.cancel.as_ref().is_some_and(|c| c.is_cancelled())
    }
}

/// Appends lines to a capped buffer.
pub struct Capped {
    pub text: String,
    pub truncated: bool,
    /// The deadline passed before the walk or search was done.
    pub out_of_time: bool,
    /// Lines searched only in their first `line_cap` bytes.
    pub cut_lines: usize,
    /// How much of a line was searched.
    pub line_cap: usize,
    /// Files over [`MAX_GREP_FILE`] a directory's search skipped.
    pub large_skipped: usize,
    /// A file over [`MAX_GREP_FILE`] searched alone, that far.
    pub large_cut: bool,
}

impl Capped {
    fn new() -> Self {
        Capped {
            text: String::new(),
            truncated: false,
            out_of_time: false,
            cut_lines: 0,
            line_cap: 0,
            large_skipped: 0,
            large_cut: false,
        }
    }

    /// Adds a line; false once the cap is reached.
    fn line(&mut self, line: &str) -> bool {
        if self.text.len() + line.len() + 1 > WALK_OUTPUT_CAP {
            self.truncated = true;
            return false;
        }
        self.text.push_str(line);
        self.text.push('\n');
        true
    }
}

/// How a walk ended.
enum Walked {
    Complete,
    /// Too many entries, or its visitor said stop (the output is full).
    Cut,
    /// Its deadline passed.
    OutOfTime,
}

impl Capped {
    /// The output, marked with how the walk that filled it ended.
    fn walked(mut self, walked: Walked) -> Self {
        match walked {
            Walked::Complete => {}
            Walked::Cut => self.truncated = true,
            Walked::OutOfTime => self.out_of_time = true,
        }
        self
    }
}

/// A `grep` pattern, compiled, and how much of a line it searches.
pub struct Pattern {
    regex: regex_automata::meta::Regex,
    line_cap: usize,
}

impl Pattern {
    /// Compiles `pattern` as `regex::Regex` would (leftmost-first, Unicode, UTF-8), with a
    /// smaller size limit; the error says what would make it acceptable.
    pub fn new(pattern: &str) -> Result<Self, String> {
        use regex_automata::meta;
        let compile = |limit| {
            meta::Builder::new()
                .configure(
                    meta::Config::new()
                        .nfa_size_limit(Some(limit))
                        .utf8_empty(true),
                )
                .syntax(regex_automata::util::syntax::Config::new().utf8(true))
                .build(pattern)
                // Whether it was too large, and what the builder said.
                .map_err(|e| (e.size_limit().is_some(), e.to_string()))
        };
        if let Ok(regex) = compile(SMALL_PATTERN_SIZE) {
            return Ok(Pattern {
                regex,
                line_cap: SMALL_PATTERN_LINE,
            });
        }
        match compile(PATTERN_SIZE_LIMIT) {
            Ok(regex) => Ok(Pattern {
                regex,
                line_cap: LARGE_PATTERN_LINE,
            }),
            Err((true, _)) => Err(format!(
                "`pattern` is too large once compiled (over {} KiB): use fewer or smaller \
                 counted repetitions (`{{n}}`), or `(?-u)` to make classes like `\\w` and `.` \
                 ASCII-only",
                PATTERN_SIZE_LIMIT / 1024
            )),
            Err((false, e)) => Err(format!("`pattern` is not a valid regular expression: {e}")),
        }
    }
}

/// Visits every entry under `start` (relative to the root), depth first, in name order, until
/// `visit` says stop, too many entries were seen, or the deadline passed.
fn walk(
    root: &Beneath,
    start: &Path,
    deadline: &Deadline,
    visit: &mut dyn FnMut(&Path, EntryKind, u64) -> bool,
) -> std::io::Result<Walked> {
    let mut stack: Vec<PathBuf> = vec![start.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = stack.pop() {
        let mut entries = root.list(&dir)?;
        entries.reverse();
        for (name, kind, size) in entries {
            seen += 1;
            if seen > MAX_ENTRIES {
                return Ok(Walked::Cut);
            }
            if deadline.passed() {
                return Ok(Walked::OutOfTime);
            }
            let path = dir.join(&name);
            if !visit(&path, kind, size) {
                return Ok(Walked::Cut);
            }
            if kind == EntryKind::Dir {
                stack.push(path);
            }
        }
    }
    Ok(Walked::Complete)
}

/// How a root-relative path under `start` is shown: under `shown_start`.
fn shown(path: &Path, start: &Path, shown_start: &Path) -> String {
    let rest = path.strip_prefix(start).unwrap_or(path);
    if rest.as_os_str().is_empty() {
        return shown_start.display().to_string();
    }
    shown_start.join(rest).display().to_string()
}

/// Names matching a glob pattern (`*`, `?`, `[…]`) under `start`.
pub fn find(
    root: &Beneath,
    start: &Path,
    pattern: &str,
    shown_start: &Path,
    deadline: Deadline,
) -> std::io::Result<Capped> {
    let mut out = Capped::new();
    let pattern: Vec<char> = pattern.chars().collect();
    let walked = walk(root, start, &deadline, &mut |path, kind, _| {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if glob_match(
            &pattern,
            &name.chars().collect::<Vec<_>>(),
            LeadingDot::Matched,
        ) {
            let mut line = shown(path, start, shown_start);
            if kind == EntryKind::Dir {
                line.push('/');
            }
            return out.line(&line);
        }
        true
    })?;
    Ok(out.walked(walked))
}

/// Lines matching a pattern in files under `start` (or in `start` itself).
pub fn grep(
    root: &Beneath,
    start: &Path,
    pattern: &Pattern,
    shown_start: &Path,
    start_is_file: bool,
    deadline: Deadline,
) -> std::io::Result<Capped> {
    let mut out = Capped::new();
    out.line_cap = pattern.line_cap;
    let search = |path: &Path, out: &mut Capped| -> bool {
        let Ok(mut file) = root.read_file(path) else {
            return true;
        };
        let mut bytes = Vec::new();
        if file
            .by_ref()
            .take(MAX_GREP_FILE + 1)
            .read_to_end(&mut bytes)
            .is_err()
        {
            return true;
        }
        if bytes.len() as u64 > MAX_GREP_FILE {
            bytes.truncate(MAX_GREP_FILE as usize);
            out.large_cut = true;
        }
        if bytes.iter().take(8192).any(|b| *b == 0) {
            return true;
        }
        let text = String::from_utf8_lossy(&bytes);
        for (number, line) in text.lines().enumerate() {
            if deadline.passed() {
                out.out_of_time = true;
                return false;
            }
            // The head is searched with the rest of the line in view: `$` and `\b` see what
            // follows the cut, and match there only where they would in the whole line.
            let searched = line.floor_char_boundary(pattern.line_cap);
            if searched < line.len() {
                out.cut_lines += 1;
            }
            let input = regex_automata::Input::new(line)
                .range(..searched)
                .earliest(true);
            if pattern.regex.is_match(input) {
                let at = format!(
                    "{}:{}:{}",
                    shown(path, start, shown_start),
                    number + 1,
                    shown_line(line)
                );
                if !out.line(&at) {
                    return false;
                }
            }
        }
        true
    };
    if start_is_file {
        search(start, &mut out);
        return Ok(out);
    }
    let walked = walk(root, start, &deadline, &mut |path, kind, size| {
        if kind != EntryKind::File {
            return true;
        }
        if size > MAX_GREP_FILE {
            out.large_skipped += 1;
            return true;
        }
        search(path, &mut out)
    })?;
    Ok(out.walked(walked))
}

/// A matching line as shown: its first [`SHOWN_LINE`] bytes, and how many more it has.
fn shown_line(line: &str) -> std::borrow::Cow<'_, str> {
    if line.len() <= SHOWN_LINE {
        return line.into();
    }
    let head = &line[..line.floor_char_boundary(SHOWN_LINE)];
    format!("{head} [… {} more bytes]", line.len() - head.len()).into()
}

#[cfg(test)]
mod tests;
