//! File tools: paths resolve against the session's workspace with symlinks followed, so the
//! sandbox step judges where a call really lands.

use super::{Builtin, Plan};
use crate::policy::effect::Effect;
use crate::policy::paths::resolve;
use crate::policy::tier::Tier;
use crate::tools::args::{ArgKind, optional, required, string};
use crate::tools::tool::{ProposeContext, ToolError};
use serde_json::{Map, Value};
use std::path::PathBuf;

pub(super) fn tools() -> Vec<Builtin> {
    use ArgKind::String as S;
    vec![
        Builtin {
            name: "read_file",
            description: "Read a text file in the workspace.",
            args: const {
                &[required(
                    "path",
                    S,
                    "File to read, relative to the workspace",
                )]
            },
            tier: Tier::ReadOnly,
            long_running: false,
            plan: |a, c| reads(a, c, "path", "read"),
        },
        Builtin {
            name: "ls",
            description: "List a directory.",
            args: const {
                &[optional(
                    "path",
                    S,
                    "Directory to list (default: the workspace)",
                )]
            },
            tier: Tier::ReadOnly,
            long_running: false,
            plan: |a, c| reads(a, c, "path", "list"),
        },
        Builtin {
            name: "find",
            description: "Find files whose names match a glob pattern under a directory.",
            args: const {
                &[
                    optional("path", S, "Directory to search (default: the workspace)"),
                    required("pattern", S, "Glob pattern for file names, e.g. *.rs"),
                ]
            },
            tier: Tier::ReadOnly,
            long_running: false,
            plan: |a, c| reads(a, c, "path", "search"),
        },
        Builtin {
            name: "grep",
            description: "Search file contents for a regular expression under a path.",
            args: const {
                &[
                    optional(
                        "path",
                        S,
                        "File or directory to search (default: the workspace)",
                    ),
                    required("pattern", S, "Regular expression"),
                ]
            },
            tier: Tier::ReadOnly,
            long_running: false,
            plan: |a, c| reads(a, c, "path", "grep"),
        },
        Builtin {
            name: "write_file",
            description: "Create or overwrite a file with the given content.",
            args: const {
                &[
                    required("path", S, "File to write, relative to the workspace"),
                    required("content", S, "The whole new content"),
                ]
            },
            tier: Tier::HighRisk,
            long_running: false,
            plan: |a, c| {
                let path = path_arg(a, c, "path")?;
                let current = preview_read(c, &path);
                let content = string(a, "content").unwrap_or_default();
                Ok(Plan {
                    message: format!("write {}", path.display()),
                    preview: Some(diff(&path, current.as_deref(), content)),
                    execute_args: Some(with_fingerprint(a, current.as_deref())),
                    effects: vec![Effect::Write(path)],
                    ..Plan::default()
                })
            },
        },
        Builtin {
            name: "edit_file",
            description: "Replace one exact occurrence of `old` with `new` in a file.",
            args: const {
                &[
                    required("path", S, "File to edit"),
                    required("old", S, "Exact text to replace"),
                    required("new", S, "Replacement text"),
                ]
            },
            tier: Tier::HighRisk,
            long_running: false,
            plan: |a, c| {
                let path = path_arg(a, c, "path")?;
                let current = preview_read(c, &path);
                let (old, new) = (
                    string(a, "old").unwrap_or_default(),
                    string(a, "new").unwrap_or_default(),
                );
                let preview = match &current {
                    Some(bytes) => {
                        let text = String::from_utf8_lossy(bytes);
                        let count = text.matches(old).count();
                        if count != 1 && !old.is_empty() {
                            return Err(ToolError::InvalidArguments(format!(
                                "`old` occurs {count} times in {}; it must occur exactly once",
                                path.display()
                            )));
                        }
                        Some(diff(&path, Some(bytes), &text.replacen(old, new, 1)))
                    }
                    None => None,
                };
                Ok(Plan {
                    message: format!("edit {}", path.display()),
                    preview,
                    execute_args: Some(with_fingerprint(a, current.as_deref())),
                    effects: vec![Effect::Read(path.clone()), Effect::Write(path)],
                    ..Plan::default()
                })
            },
        },
        Builtin {
            name: "mkdir",
            description: "Create a directory (and its parents).",
            args: const { &[required("path", S, "Directory to create")] },
            tier: Tier::LowRisk,
            long_running: false,
            plan: |a, c| writes(a, c, "create directory"),
        },
        Builtin {
            name: "rm",
            description: "Remove a file or an empty directory.",
            args: const { &[required("path", S, "Path to remove")] },
            tier: Tier::HighRisk,
            long_running: false,
            plan: |a, c| writes(a, c, "remove"),
        },
        Builtin {
            name: "mv",
            description: "Move or rename a file or directory.",
            args: const {
                &[
                    required("from", S, "Source path"),
                    required("to", S, "Destination path"),
                ]
            },
            tier: Tier::HighRisk,
            long_running: false,
            plan: |a, c| {
                from_to(a, c, "move", |from, to| {
                    vec![Effect::Write(from), Effect::Write(to)]
                })
            },
        },
        Builtin {
            name: "cp",
            description: "Copy a file.",
            args: const {
                &[
                    required("from", S, "Source path"),
                    required("to", S, "Destination path"),
                ]
            },
            tier: Tier::HighRisk,
            long_running: false,
            plan: |a, c| {
                from_to(a, c, "copy", |from, to| {
                    vec![Effect::Read(from), Effect::Write(to)]
                })
            },
        },
    ]
}

/// The current content of a file, read for a preview only where the call itself could read.
fn preview_read(ctx: &ProposeContext, path: &std::path::Path) -> Option<Vec<u8>> {
    if !ctx.may_read(path) {
        return None;
    }
    crate::tools::fs::read_for_preview(path, &ctx.roots, ctx.sandbox)
}

/// How long a card's diff may take to compute.
const DIFF_DEADLINE: std::time::Duration = std::time::Duration::from_millis(250);

/// A unified diff of a file's change, as the card shows it.
fn diff(path: &std::path::Path, old: Option<&[u8]>, new: &str) -> String {
    diff_within(path, old, new, DIFF_DEADLINE)
}

/// [`diff`], computed within `deadline`.
fn diff_within(
    path: &std::path::Path,
    old: Option<&[u8]>,
    new: &str,
    deadline: std::time::Duration,
) -> String {
    let old_text = old.map(String::from_utf8_lossy).unwrap_or_default();
    let name = path.display().to_string();
    let header_old = if old.is_some() {
        name.clone()
    } else {
        "/dev/null".to_string()
    };
    // Deadline-bounded: past it, similar finishes with a coarser (still correct) diff, so a
    // pathological pair of files cannot hold the gate (which proposes on every re-decision).
    similar::TextDiff::configure()
        .timeout(deadline)
        .diff_lines(old_text.as_ref(), new)
        .unified_diff()
        .context_radius(3)
        .header(&header_old, &name)
        .to_string()
}

/// The call's arguments plus the fingerprint of the file the preview was made from.
fn with_fingerprint(args: &Map<String, Value>, current: Option<&[u8]>) -> Value {
    let mut stored = args.clone();
    stored.insert(
        "expected".into(),
        Value::from(crate::tools::fs::fingerprint_of(current)),
    );
    Value::Object(stored)
}

/// Resolves a path argument (`.` when an optional one is absent).
fn path_arg(
    args: &Map<String, Value>,
    ctx: &ProposeContext,
    key: &str,
) -> Result<PathBuf, ToolError> {
    let raw = string(args, key).unwrap_or(".");
    resolve(&ctx.workspace, raw)
        .map_err(|e| ToolError::InvalidArguments(format!("`{key}` ({raw:?}): {e}")))
}

pub(super) fn reads(
    args: &Map<String, Value>,
    ctx: &ProposeContext,
    key: &str,
    verb: &str,
) -> Result<Plan, ToolError> {
    let path = path_arg(args, ctx, key)?;
    Ok(Plan {
        message: format!("{verb} {}", path.display()),
        effects: vec![Effect::Read(path)],
        ..Plan::default()
    })
}

/// `mv` and `cp`: both paths resolved; `effects` says what each does to them.
fn from_to(
    args: &Map<String, Value>,
    ctx: &ProposeContext,
    verb: &str,
    effects: fn(PathBuf, PathBuf) -> Vec<Effect>,
) -> Result<Plan, ToolError> {
    let from = path_arg(args, ctx, "from")?;
    let to = path_arg(args, ctx, "to")?;
    Ok(Plan {
        message: format!("{verb} {} to {}", from.display(), to.display()),
        effects: effects(from, to),
        ..Plan::default()
    })
}

fn writes(args: &Map<String, Value>, ctx: &ProposeContext, verb: &str) -> Result<Plan, ToolError> {
    let path = path_arg(args, ctx, "path")?;
    Ok(Plan {
        message: format!("{verb} {}", path.display()),
        effects: vec![Effect::Write(path)],
        ..Plan::default()
    })
}

#[cfg(test)]
mod tests {
    use super::diff_within;
    use std::time::Duration;

    /// Past its deadline the diff is coarser but still right: the lines between the first and
    /// the last change show as removed and added again, not as context.
    #[test]
    fn a_diff_past_its_deadline_is_coarser_not_wrong() {
        let old: String = (b'a'..=b'j').map(|c| format!("{}\n", c as char)).collect();
        let new = old.replace("c\n", "C\n").replace("i\n", "I\n");
        let path = std::path::Path::new("f.txt");
        let in_time = diff_within(path, Some(old.as_bytes()), &new, Duration::from_secs(60));
        let late = diff_within(path, Some(old.as_bytes()), &new, Duration::ZERO);
        for diff in [&in_time, &late] {
            for line in ["-c\n", "+C\n", "-i\n", "+I\n"] {
                assert!(diff.contains(line), "{line} in {diff}");
            }
        }
        assert!(in_time.contains("\n e\n"), "{in_time}");
        assert!(late.contains("\n-e\n") && late.contains("\n+e\n"), "{late}");
    }
}
