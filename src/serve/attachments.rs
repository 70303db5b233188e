//! Files sent with a message: fetched through the chat's bridge into the session's workspace
//! under a sanitized name (no path separators, no leading dots, no control characters), at most
//! 20 MB each (less where the platform allows less), and named to the agent by path.

use super::gateway::BridgeHandle;
use std::path::{Path, PathBuf};
use tollgate_surface::RemoteFile;

/// Our own limit on one attachment.
pub const MAX_ATTACHMENT_BYTES: u64 = 20 * 1024 * 1024;

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

/// A path in `dir` for `name` that does not exist yet.
fn free_path(dir: &Path, name: &str) -> PathBuf {
    let candidate = dir.join(name);
    if !candidate.exists() {
        return candidate;
    }
    (1..)
        .map(|n| dir.join(format!("{n}-{name}")))
        .find(|p| !p.exists())
        .unwrap_or(candidate)
}

/// Downloads the files into `<workspace>/attachments/`; returns the lines that tell the agent
/// (and, for refused files, the user) what happened.
pub async fn receive(
    handle: &BridgeHandle,
    workspace: &Path,
    files: &[RemoteFile],
) -> (Vec<String>, Vec<String>) {
    let mut for_agent = Vec::new();
    let mut refused = Vec::new();
    if files.is_empty() {
        return (for_agent, refused);
    }
    let dir = workspace.join("attachments");
    if let Err(e) = tokio::fs::create_dir_all(&dir).await {
        refused.push(format!("the attachments could not be saved ({e})"));
        return (for_agent, refused);
    }
    let cap = MAX_ATTACHMENT_BYTES.min(handle.bridge.limits().download_bytes);
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
        let path = free_path(&dir, &name);
        match handle.bridge.fetch(file, &path, cap).await {
            Ok(bytes) => {
                let relative = path.strip_prefix(workspace).unwrap_or(&path);
                for_agent.push(format!(
                    "[attached file: {} ({bytes} bytes)]",
                    relative.display()
                ));
            }
            Err(e) => refused.push(format!("`{name}` could not be downloaded: {e}")),
        }
    }
    (for_agent, refused)
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
