//! Recursive walks for `find` and `grep`, each directory opened beneath the root; symlinks are
//! listed, never followed. Output is capped and marked `truncated`.

use super::beneath::{Beneath, EntryKind};
use crate::policy::glob::{LeadingDot, glob_match};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Bytes of `find`/`grep` output kept.
pub const WALK_OUTPUT_CAP: usize = 256 * 1024;
/// Entries visited before giving up (a huge tree must not stall the call).
const MAX_ENTRIES: usize = 200_000;
/// Files larger than this are not searched by `grep`.
const MAX_GREP_FILE: u64 = 8 * 1024 * 1024;

/// Appends lines to a capped buffer.
pub struct Capped {
    pub text: String,
    pub truncated: bool,
}

impl Capped {
    fn new() -> Self {
        Capped {
            text: String::new(),
            truncated: false,
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

/// Visits every entry under `start` (relative to the root), depth first, in name order.
fn walk(
    root: &Beneath,
    start: &Path,
    visit: &mut dyn FnMut(&Path, EntryKind, u64) -> bool,
) -> std::io::Result<bool> {
    let mut stack: Vec<PathBuf> = vec![start.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = stack.pop() {
        let mut entries = root.list(&dir)?;
        entries.reverse();
        for (name, kind, size) in entries {
            seen += 1;
            if seen > MAX_ENTRIES {
                return Ok(false);
            }
            let path = dir.join(&name);
            if !visit(&path, kind, size) {
                return Ok(false);
            }
            if kind == EntryKind::Dir {
                stack.push(path);
            }
        }
    }
    Ok(true)
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
) -> std::io::Result<Capped> {
    let mut out = Capped::new();
    let pattern: Vec<char> = pattern.chars().collect();
    let complete = walk(root, start, &mut |path, kind, _| {
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
    out.truncated |= !complete;
    Ok(out)
}

/// Lines matching a regular expression in files under `start` (or in `start` itself).
pub fn grep(
    root: &Beneath,
    start: &Path,
    regex: &regex::Regex,
    shown_start: &Path,
    start_is_file: bool,
) -> std::io::Result<Capped> {
    let mut out = Capped::new();
    let search = |path: &Path, out: &mut Capped| -> bool {
        let Ok(mut file) = root.read_file(path) else {
            return true;
        };
        let mut bytes = Vec::new();
        if file
            .by_ref()
            .take(MAX_GREP_FILE)
            .read_to_end(&mut bytes)
            .is_err()
        {
            return true;
        }
        if bytes.iter().take(8192).any(|b| *b == 0) {
            return true;
        }
        let text = String::from_utf8_lossy(&bytes);
        for (number, line) in text.lines().enumerate() {
            if regex.is_match(line) {
                let at = format!(
                    "{}:{}:{}",
                    shown(path, start, shown_start),
                    number + 1,
                    line
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
    let complete = walk(root, start, &mut |path, kind, size| {
        if kind != EntryKind::File || size > MAX_GREP_FILE {
            return true;
        }
        search(path, &mut out)
    })?;
    out.truncated |= !complete;
    Ok(out)
}
