//! The file tools' execute halves.

use super::beneath::{Beneath, EntryKind};
use super::walk::{Capped, Deadline, Pattern, find, grep};
use crate::policy::effect::Effect;
use crate::policy::mode::SandboxPolicy;
use crate::policy::paths::{is_under, resolve};
use crate::policy::sandbox::{Roots, check_effects};
use crate::tools::approved::{ApprovedCall, ToolOutput};
use crate::tools::exec::ExecContext;
use serde_json::Value;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Bytes of a file `read_file` returns.
const READ_CAP: usize = 256 * 1024;

/// Bytes a file may have for `write_file` and `edit_file` to change it: their preview reads
/// this much to fingerprint it, so a larger file could never match its preview anyway.
const CHANGE_CAP: u64 = 8 * 1024 * 1024;

/// Bytes a file may have for `cp` to copy it (it is copied in memory).
const COPY_CAP: u64 = 64 * 1024 * 1024;

/// What a file looked like when its preview was made: `absent`, or its length and FNV-1a hash.
#[must_use]
pub fn fingerprint_of(bytes: Option<&[u8]>) -> String {
    match bytes {
        None => "absent".into(),
        Some(b) => {
            let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
            for byte in b {
                hash ^= u64::from(*byte);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
            format!("{}:{hash:016x}", b.len())
        }
    }
}

/// The root a path is opened beneath: the longest allowed root holding it (`/` under
/// `danger-full-access`).
pub(crate) fn root_for(
    path: &Path,
    roots: &Roots,
    sandbox: SandboxPolicy,
    write: bool,
) -> Option<PathBuf> {
    if sandbox == SandboxPolicy::DangerFullAccess {
        return Some(PathBuf::from("/"));
    }
    let mut candidates: Vec<&PathBuf> = vec![&roots.workspace];
    candidates.extend(roots.writable.iter());
    if !write {
        candidates.extend(roots.readable.iter());
    }
    candidates
        .into_iter()
        .filter(|r| is_under(path, r))
        .max_by_key(|r| r.components().count())
        .cloned()
}

/// Reads a file for a preview, beneath a root the call could read.
pub fn read_for_preview(path: &Path, roots: &Roots, sandbox: SandboxPolicy) -> Option<Vec<u8>> {
    let root = root_for(path, roots, sandbox, false)?;
    let beneath = Beneath::open(&root).ok()?;
    let rel = path.strip_prefix(&root).ok()?;
    let mut bytes = Vec::new();
    beneath
        .read_file(rel)
        .ok()?
        .take(CHANGE_CAP)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

/// The first `limit` bytes of a regular file, read beneath a root the call could read, through
/// no link and never blocking (`Beneath::read_regular`).
pub fn read_head(
    path: &Path,
    roots: &Roots,
    sandbox: SandboxPolicy,
    limit: u64,
) -> Option<Vec<u8>> {
    let root = root_for(path, roots, sandbox, false)?;
    let beneath = Beneath::open(&root).ok()?;
    let rel = path.strip_prefix(&root).ok()?;
    beneath.read_regular(rel, limit).ok()
}

struct Target {
    beneath: Beneath,
    rel: PathBuf,
    shown: PathBuf,
}

fn target(
    call: &ApprovedCall,
    ctx: &ExecContext,
    key: &str,
    write: bool,
) -> Result<Target, String> {
    let args = call.execute_args();
    let raw = args.get(key).and_then(Value::as_str).unwrap_or(".");
    let path = resolve(&ctx.workspace, raw).map_err(|e| format!("`{key}`: {e}"))?;
    // The effect judged for this very argument (`to` is the second of `mv` and `cp`; every
    // other path is the first): matching any judged path let two swapped links run a move
    // the other way round.
    let index = usize::from(key == "to");
    let judged = call.proposal().effects.get(index).is_some_and(|e| match e {
        Effect::Read(p) | Effect::Write(p) => *p == path,
        Effect::Network { .. } => false,
    });
    if !judged {
        return Err(format!(
            "`{raw}` now resolves to {}, not where it pointed when approved (a symlink changed?); propose again",
            path.display()
        ));
    }
    let effect = if write {
        Effect::Write(path.clone())
    } else {
        Effect::Read(path.clone())
    };
    if let Some((_, reason)) = check_effects(
        &[effect],
        ctx.sandbox,
        &ctx.roots,
        // A path alone: no network effect to judge.
        &crate::policy::sandbox::Network::NONE,
        &ctx.agent,
    ) {
        return Err(format!("the sandbox now refuses this: {reason}"));
    }
    let root = root_for(&path, &ctx.roots, ctx.sandbox, write)
        .ok_or_else(|| format!("{} is outside every allowed root", path.display()))?;
    let beneath = Beneath::open(&root).map_err(|e| format!("opening {}: {e}", root.display()))?;
    let rel = path
        .strip_prefix(&root)
        .map(Path::to_path_buf)
        .map_err(|_| format!("{} is outside {}", path.display(), root.display()))?;
    let shown = path
        .strip_prefix(&ctx.workspace)
        .map(Path::to_path_buf)
        .unwrap_or(path);
    Ok(Target {
        beneath,
        rel,
        shown,
    })
}

/// The file's first `cap` bytes and its size, or `None` if it does not exist. Never more than
/// `cap` in memory: a file of many gigabytes (a sparse one costs nothing to make) read whole
/// by a turn's ten calls at once would bring the OOM killer down on serve.
fn read_capped(t: &Target, cap: u64) -> Result<Option<(Vec<u8>, u64)>, String> {
    match t.beneath.read_file(&t.rel) {
        Ok(file) => {
            let reading = |e: std::io::Error| format!("reading {}: {e}", t.shown.display());
            let size = file.metadata().map_err(reading)?.len();
            let mut bytes = Vec::new();
            file.take(cap).read_to_end(&mut bytes).map_err(reading)?;
            Ok(Some((bytes, size)))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("opening {}: {e}", t.shown.display())),
    }
}

/// The whole file, or `None` if it does not exist; refused, naming `tool`, past `cap` bytes.
fn read_whole(t: &Target, cap: u64, tool: &str) -> Result<Option<Vec<u8>>, String> {
    match read_capped(t, cap.saturating_add(1))? {
        Some((bytes, size)) if size > cap || bytes.len() as u64 > cap => Err(format!(
            "{} has {} bytes; {tool} handles files of up to {} MiB",
            t.shown.display(),
            size.max(bytes.len() as u64),
            cap >> 20
        )),
        whole => Ok(whole.map(|(bytes, _)| bytes)),
    }
}

fn check_unchanged(call: &ApprovedCall, current: Option<&[u8]>) -> Result<(), String> {
    let expected = call.execute_args().get("expected").and_then(Value::as_str);
    if expected != Some(fingerprint_of(current).as_str()) {
        return Err("the file changed since the approved preview; propose again".into());
    }
    Ok(())
}

fn write_bytes(t: &Target, bytes: &[u8]) -> Result<(), String> {
    if let Some(parent) = t.rel.parent()
        && !parent.as_os_str().is_empty()
    {
        t.beneath
            .create_dir_all(parent)
            .map_err(|e| format!("creating {}: {e}", parent.display()))?;
    }
    let mut file = t
        .beneath
        .create_file(&t.rel)
        .map_err(|e| format!("opening {} for writing: {e}", t.shown.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("writing {}: {e}", t.shown.display()))
}

/// The approved `path` of `call` for `analyze_media`: its name as the workspace shows it and at
/// most `cap` bytes (more is refused before it is all read). Blocking.
pub fn read_media(
    call: &ApprovedCall,
    ctx: &ExecContext,
    cap: u64,
) -> Result<(String, Vec<u8>), String> {
    let t = target(call, ctx, "path", false)?;
    let bytes = match t.beneath.read_regular(&t.rel, cap.saturating_add(1)) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("{} does not exist", t.shown.display()));
        }
        Err(e) => return Err(format!("reading {}: {e}", t.shown.display())),
    };
    if bytes.len() as u64 > cap {
        return Err(format!(
            "{} is larger than this agent sends to a companion ({} MiB, media_max_mb)",
            t.shown.display(),
            cap / (1024 * 1024)
        ));
    }
    Ok((t.shown.display().to_string(), bytes))
}

/// Runs a file tool's execute half. Blocking: call it off the async threads.
#[must_use]
/// `started`: when the call started (before it waited for a thread), for the searches'
/// deadline.
pub fn execute_file_tool(
    tool: &str,
    call: &ApprovedCall,
    ctx: &ExecContext,
    started: Instant,
) -> ToolOutput {
    match run(tool, call, ctx, started) {
        Ok(output) => output,
        Err(message) => ToolOutput::error(message),
    }
}

fn run(
    tool: &str,
    call: &ApprovedCall,
    ctx: &ExecContext,
    started: Instant,
) -> Result<ToolOutput, String> {
    let args = call.execute_args();
    let text = |k: &str| {
        args.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    match tool {
        "read_file" => {
            let t = target(call, ctx, "path", false)?;
            let (bytes, size) = read_capped(&t, READ_CAP as u64)?
                .ok_or_else(|| format!("{} does not exist", t.shown.display()))?;
            let size = size.max(bytes.len() as u64);
            if bytes.iter().take(8192).any(|b| *b == 0) {
                return Err(format!(
                    "{} is a binary file ({size} bytes); read_file shows text only",
                    t.shown.display(),
                ));
            }
            let truncated = size > bytes.len() as u64;
            let mut out = String::from_utf8_lossy(&bytes).into_owned();
            if truncated {
                out.push_str(&format!(
                    "\n[… {} more bytes not shown]",
                    size - bytes.len() as u64
                ));
            }
            Ok(ToolOutput {
                text: out,
                is_error: false,
                truncated,
            })
        }
        "write_file" => {
            let t = target(call, ctx, "path", true)?;
            let current = read_whole(&t, CHANGE_CAP, "write_file")?;
            check_unchanged(call, current.as_deref())?;
            let content = text("content");
            write_bytes(&t, content.as_bytes())?;
            Ok(ToolOutput::ok(format!(
                "wrote {} ({} bytes)",
                t.shown.display(),
                content.len()
            )))
        }
        "edit_file" => {
            let t = target(call, ctx, "path", true)?;
            let current = read_whole(&t, CHANGE_CAP, "edit_file")?
                .ok_or_else(|| format!("{} does not exist", t.shown.display()))?;
            check_unchanged(call, Some(&current))?;
            let old_text =
                String::from_utf8(current).map_err(|_| "the file is not UTF-8 text".to_string())?;
            let (old, new) = (text("old"), text("new"));
            if old_text.matches(&old).count() != 1 {
                return Err("`old` must occur exactly once in the file".into());
            }
            write_bytes(&t, old_text.replacen(&old, &new, 1).as_bytes())?;
            Ok(ToolOutput::ok(format!("edited {}", t.shown.display())))
        }
        "ls" => {
            let t = target(call, ctx, "path", false)?;
            let entries = t
                .beneath
                .list(&t.rel)
                .map_err(|e| format!("listing {}: {e}", t.shown.display()))?;
            let lines: Vec<String> = entries
                .into_iter()
                .map(|(name, kind, size)| match kind {
                    EntryKind::Dir => format!("{name}/"),
                    EntryKind::Symlink => format!("{name}@"),
                    EntryKind::File => format!("{name}\t{size} bytes"),
                })
                .collect();
            Ok(ToolOutput::ok(if lines.is_empty() {
                "(empty)".to_string()
            } else {
                lines.join("\n")
            }))
        }
        "find" | "grep" => {
            let t = target(call, ctx, "path", false)?;
            let pattern = text("pattern");
            let limit = search_limit(ctx.default_timeout);
            let deadline = Deadline::at(started + limit).or_cancelled(ctx.cancel.clone());
            let found = if tool == "find" {
                find(&t.beneath, &t.rel, &pattern, &t.shown, deadline)
            } else {
                let pattern = Pattern::new(&pattern)?;
                let is_file = t.beneath.list(&t.rel).is_err();
                grep(&t.beneath, &t.rel, &pattern, &t.shown, is_file, deadline)
            }
            .map_err(|e| format!("searching {}: {e}", t.shown.display()))?;
            Ok(search_output(found, limit))
        }
        "mkdir" => {
            let t = target(call, ctx, "path", true)?;
            t.beneath
                .create_dir_all(&t.rel)
                .map_err(|e| format!("creating {}: {e}", t.shown.display()))?;
            Ok(ToolOutput::ok(format!("created {}", t.shown.display())))
        }
        "rm" => {
            let t = target(call, ctx, "path", true)?;
            let is_dir = t.beneath.list(&t.rel).is_ok();
            t.beneath
                .remove(&t.rel, is_dir)
                .map_err(|e| format!("removing {}: {e}", t.shown.display()))?;
            Ok(ToolOutput::ok(format!("removed {}", t.shown.display())))
        }
        "mv" => {
            let from = target(call, ctx, "from", true)?;
            let to = target(call, ctx, "to", true)?;
            from.beneath
                .rename(&from.rel, &to.beneath, &to.rel)
                .map_err(|e| {
                    format!(
                        "moving {} to {}: {e}",
                        from.shown.display(),
                        to.shown.display()
                    )
                })?;
            Ok(ToolOutput::ok(format!(
                "moved {} to {}",
                from.shown.display(),
                to.shown.display()
            )))
        }
        "cp" => {
            let from = target(call, ctx, "from", false)?;
            let to = target(call, ctx, "to", true)?;
            let bytes = read_whole(&from, COPY_CAP, "cp")?
                .ok_or_else(|| format!("{} does not exist", from.shown.display()))?;
            write_bytes(&to, &bytes)?;
            Ok(ToolOutput::ok(format!(
                "copied {} to {}",
                from.shown.display(),
                to.shown.display()
            )))
        }
        other => Err(format!("`{other}` is not a file tool")),
    }
}

/// How long `find` and `grep` search: they stop before the executor's `timeout`, to hand back
/// what they found, by a margin that leaves room for the one line in progress (a second or
/// more for a costly pattern, `walk.rs`); the thread is let go either way.
fn search_limit(timeout: Duration) -> Duration {
    let margin = (timeout / 10).max(Duration::from_secs(5).min(timeout / 2));
    timeout.saturating_sub(margin)
}

/// What `find` or `grep` found, with why it stopped early, if it did.
fn search_output(found: Capped, limit: Duration) -> ToolOutput {
    let mut out = if found.text.is_empty() {
        "(no matches)".to_string()
    } else {
        found.text
    };
    if found.out_of_time {
        out.push_str(&format!(
            "[… stopped at the time limit ({} s), or by /stop, before the search was done: \
             search a narrower `path`, or a simpler `pattern`]",
            limit.as_secs_f32()
        ));
    } else if found.truncated {
        out.push_str("[… output truncated]");
    }
    let large = super::walk::MAX_GREP_FILE >> 20;
    if found.large_skipped > 0 {
        out.push_str(&format!(
            "\n[{} file(s) over {large} MiB not searched]",
            found.large_skipped
        ));
    }
    if found.large_cut {
        out.push_str(&format!(
            "\n[the file is over {large} MiB: searched only in its first {large} MiB]"
        ));
    }
    if found.cut_lines > 0 {
        out.push_str(&format!(
            "\n[{} line(s) longer than {} KiB searched only in their first {} KiB]",
            found.cut_lines,
            found.line_cap / 1024,
            found.line_cap / 1024
        ));
    }
    ToolOutput {
        text: out,
        is_error: false,
        truncated: found.truncated || found.out_of_time,
    }
}

#[cfg(test)]
mod tests {
    use super::search_limit;
    use std::time::Duration;

    /// A search stops before the executor's timeout by a tenth of it, and by at least the five
    /// seconds one costly line can take, or half of a timeout shorter than ten seconds.
    #[test]
    fn searches_stop_before_the_timeout_with_room_for_a_line() {
        let secs = |s: f32| Duration::from_secs_f32(s);
        for (timeout, limit) in [(180.0, 162.0), (30.0, 25.0), (10.0, 5.0), (1.0, 0.5)] {
            assert_eq!(search_limit(secs(timeout)), secs(limit), "{timeout} s");
        }
    }
}
