//! Files sent with a message: fetched through the chat's bridge into the session's workspace
//! under a sanitized name (no path separators, no leading dots, no control characters), at most
//! 20 MB each (less where the platform allows less), and named to the agent by path.
//!
//! The agent can write its workspace, so `attachments/` or a name in it may be a link it
//! planted. Files are therefore created beneath the workspace with `openat2`, following no link
//! at all and never over an existing name (`O_EXCL | O_NOFOLLOW`): a planted link makes the
//! file land under another name, or be refused, never written where the link points.

use super::gateway::BridgeHandle;
use crate::tools::fs::beneath::{Beneath, EntryKind};
use std::path::{Path, PathBuf};
use tollgate_surface::RemoteFile;

/// The directory attachments go to, relative to the workspace.
const DIR: &str = "attachments";

/// How many numbered names to try when a name is taken.
const NAME_TRIES: usize = 100;

/// Our own limit on one attachment.
pub const MAX_ATTACHMENT_BYTES: u64 = 20 * 1024 * 1024;

/// What one session's `attachments/` may hold: a chat member sending files as fast as the rate
/// limit lets them would otherwise fill the disk the store writes to (every chat's answers
/// then fail). Past it a file is refused with the fix (delete some).
pub const MAX_ATTACHMENTS_BYTES_PER_SESSION: u64 = 200 * 1024 * 1024;

/// Free space the disk holding the workspaces keeps: a file that could leave less is refused.
/// The per-session cap does not add up across sessions (each Discord mention opens a thread,
/// a session with a cap of its own), and the store usually shares the disk: full, it fails
/// every chat's answers.
pub const MIN_FREE_BYTES: u64 = 1 << 30;

/// Overrides [`MIN_FREE_BYTES`] in `test-support` builds, for tests of the refusal.
#[cfg(feature = "test-support")]
pub const MIN_FREE_BYTES_ENV: &str = "TOLLGATE_TEST_MIN_FREE_BYTES";

fn min_free_bytes() -> u64 {
    #[cfg(feature = "test-support")]
    if let Some(bytes) = std::env::var(MIN_FREE_BYTES_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return bytes;
    }
    MIN_FREE_BYTES
}

/// Bytes free to unprivileged writers on the filesystem holding `dir`.
fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes())?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: a NUL-terminated path and a buffer of the type statvfs fills.
    if unsafe { libc::statvfs(path.as_ptr(), stat.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: statvfs returned 0, so it filled the buffer.
    let stat = unsafe { stat.assume_init() };
    Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
}

const MAX_NAME_CHARS: usize = 100;

/// A file name that stays inside the directory it is joined to.
#[must_use]
pub fn sanitize_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let cleaned: String = base
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '.' | '-' | '_' | ' ') {
                c
            } else {
                '_'
            }
        })
        .take(MAX_NAME_CHARS)
        .collect();
    let trimmed = cleaned.trim().trim_start_matches('.');
    if trimmed.is_empty() {
        "file".to_string()
    } else {
        trimmed.to_string()
    }
}

/// Creates `attachments/<name>` (or `attachments/<n>-<name>` when taken) beneath the
/// workspace; returns its path relative to the workspace and the open file.
fn create_free(workspace: &Beneath, name: &str) -> std::io::Result<(PathBuf, std::fs::File)> {
    let mut last = std::io::Error::other("no free name");
    for n in 0..NAME_TRIES {
        let candidate = if n == 0 {
            name.to_string()
        } else {
            format!("{n}-{name}")
        };
        let rel = Path::new(DIR).join(candidate);
        match workspace.create_new(&rel) {
            Ok(file) => return Ok((rel, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// Why a file could not be created, in words for the chat (no host paths).
fn creation_failure(e: &std::io::Error) -> String {
    if e.raw_os_error() == Some(libc::ELOOP) || e.raw_os_error() == Some(libc::EXDEV) {
        format!("`{DIR}` in the workspace is a link, and files are never written through one")
    } else {
        format!("it could not be saved ({})", e.kind())
    }
}

/// Downloads the files into `<workspace>/attachments/`; returns the lines that tell the agent
/// (and, for refused files, the user) what happened.
pub async fn receive(handle: &BridgeHandle, workspace: &Path, files: &[RemoteFile]) -> Received {
    let mut received = Received::default();
    let (for_agent, refused, saved) = (
        &mut received.for_agent,
        &mut received.refused,
        &mut received.saved,
    );
    if files.is_empty() {
        return received;
    }
    let beneath = match std::fs::create_dir_all(workspace).and_then(|()| Beneath::open(workspace)) {
        Ok(beneath) => beneath,
        Err(e) => {
            refused.push(format!("the attachments could not be saved ({})", e.kind()));
            return received;
        }
    };
    if let Err(e) = beneath.create_dir_all(Path::new(DIR)) {
        refused.push(format!("the attachments could not be saved ({})", e.kind()));
        return received;
    }
    let cap = MAX_ATTACHMENT_BYTES.min(handle.bridge.limits().download_bytes);
    // What is there already (files only). A directory that cannot be listed takes nothing:
    // each file is refused with the reason (a link planted there, say).
    let mut held: u64 = match beneath.list(Path::new(DIR)) {
        Ok(entries) => entries
            .iter()
            .filter(|(_, kind, _)| *kind == EntryKind::File)
            .map(|(_, _, bytes)| *bytes)
            .sum(),
        Err(e) => {
            for file in files {
                let name = sanitize_name(&file.name);
                refused.push(format!("`{name}`: {}", creation_failure(&e)));
            }
            return received;
        }
    };
    let floor = min_free_bytes();
    for file in files {
        let name = sanitize_name(&file.name);
        if file.bytes > cap {
            refused.push(format!(
                "`{name}` is {:.1} MB; files up to {:.1} MB are accepted",
                file.bytes as f64 / 1_048_576.0,
                cap as f64 / 1_048_576.0
            ));
            continue;
        }
        // A file whose size the platform did not say may be as large as the cap.
        let at_most = if file.bytes == 0 { cap } else { file.bytes };
        if held.saturating_add(at_most) > MAX_ATTACHMENTS_BYTES_PER_SESSION {
            refused.push(format!(
                "`{name}` was not saved: this chat's attachments already hold {:.1} MB of the {:.0} MB allowed; ask me to delete some from `attachments/`, then send it again",
                held.min(MAX_ATTACHMENTS_BYTES_PER_SESSION) as f64 / 1_048_576.0,
                MAX_ATTACHMENTS_BYTES_PER_SESSION as f64 / 1_048_576.0
            ));
            continue;
        }
        let short_of_space = match free_bytes(workspace) {
            Ok(free) if free.saturating_sub(at_most) >= floor => None,
            Ok(_) => Some(format!(
                "`{name}` was not saved: the disk holding this chat's files is nearly full \
                 (less than {} GiB would be left); the bot's operator can free space",
                floor >> 30
            )),
            Err(e) => Some(format!(
                "`{name}` was not saved: the free disk space could not be read ({e})"
            )),
        };
        if let Some(why) = short_of_space {
            refused.push(why);
            continue;
        }
        let (relative, created) = match create_free(&beneath, &name) {
            Ok(created) => created,
            Err(e) => {
                refused.push(format!("`{name}`: {}", creation_failure(&e)));
                continue;
            }
        };
        let mut sink = tokio::fs::File::from_std(created);
        let outcome = match handle.bridge.fetch(file, &mut sink, cap).await {
            Ok(bytes) => tokio::io::AsyncWriteExt::flush(&mut sink)
                .await
                .map(|()| bytes)
                .map_err(|e| format!("writing it failed ({})", e.kind())),
            Err(e) => Err(e.to_string()),
        };
        drop(sink);
        match outcome {
            Ok(bytes) => {
                held = held.saturating_add(bytes);
                for_agent.push(format!(
                    "[attached file: {} ({bytes} bytes)]",
                    relative.display()
                ));
                saved.push(relative);
            }
            Err(why) => {
                // Nothing half-written stays behind (the file is the one created above).
                let _ = beneath.remove(&relative, false);
                refused.push(format!("`{name}` could not be downloaded: {why}"));
            }
        }
    }
    received
}

/// What became of a message's files.
#[derive(Debug, Default)]
pub struct Received {
    /// One line per saved file, for the agent.
    pub for_agent: Vec<String>,
    /// Why a file was not saved, for the chat.
    pub refused: Vec<String>,
    /// Where each saved file is, relative to the session's workspace.
    pub saved: Vec<std::path::PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_inside_the_directory() {
        assert_eq!(sanitize_name("../../etc/passwd"), "passwd");
        assert_eq!(sanitize_name("..\\..\\x.txt"), "x.txt");
        assert_eq!(sanitize_name(".bashrc"), "bashrc");
        assert_eq!(sanitize_name("report (final).pdf"), "report _final_.pdf");
        assert_eq!(sanitize_name("a\nb\u{0}c"), "a_b_c");
        assert_eq!(sanitize_name(".."), "file");
        assert_eq!(sanitize_name(""), "file");
        assert_eq!(sanitize_name(&"x".repeat(300)).chars().count(), 100);
    }
}
