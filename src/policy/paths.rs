//! Path resolution for file tools: relative to the session's workspace, with every symlink
//! followed and `..` applied after it (physically, as the kernel would), so `link-to-etc/x` and
//! `../x` resolve to where they really point before the sandbox judges them.

use std::ffi::OsString;
use std::fmt;
use std::path::{Component, Path, PathBuf};

/// Symlinks followed before giving up, as Linux's `MAXSYMLINKS`.
const MAX_SYMLINKS: usize = 40;

/// Why a path could not be resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathError {
    /// NUL bytes cannot be passed to the kernel; a path holding one is never what it looks like.
    Nul,
    Empty,
    TooManySymlinks(String),
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathError::Nul => f.write_str("the path contains a NUL byte"),
            PathError::Empty => f.write_str("the path is empty"),
            PathError::TooManySymlinks(p) => write!(f, "too many levels of symlinks at `{p}`"),
        }
    }
}

impl std::error::Error for PathError {}

/// Resolves `input` against `base`: symlinks that exist are followed, components that do not
/// exist yet are appended as written. `base` must itself be resolved already (as
/// [`canonical_root`] makes it): only the components of `input` are looked at.
pub fn resolve(base: &Path, input: &str) -> Result<PathBuf, PathError> {
    if input.contains('\0') {
        return Err(PathError::Nul);
    }
    if input.is_empty() {
        return Err(PathError::Empty);
    }
    let input_path = Path::new(input);
    let joined = base.join(input_path);
    if let Some(resolved) = resolve_without_symlinks(&joined) {
        return Ok(resolved);
    }
    resolve_walking(base, input_path)
}

/// The common case in one system call: a path that exists and has no symlink anywhere in it
/// (the kernel refuses it otherwise, `RESOLVE_NO_SYMLINKS`) is where it lexically says, `..`
/// included. Anything else — a symlink, a missing component, an old kernel — is `None`, and the
/// walk decides.
fn resolve_without_symlinks(joined: &Path) -> Option<PathBuf> {
    use rustix::fs::{CWD, Mode, OFlags, ResolveFlags, openat2};
    let opened = openat2(
        CWD,
        joined,
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    );
    opened.ok()?;
    if is_plain(joined) {
        return Some(joined.to_path_buf());
    }
    let mut resolved = PathBuf::with_capacity(joined.as_os_str().len());
    for component in joined.components() {
        match component {
            Component::RootDir => resolved.push("/"),
            Component::Normal(name) => resolved.push(name),
            Component::ParentDir => {
                resolved.pop();
            }
            Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Some(resolved)
}

/// An absolute path already in normal form: no `.` or `..` component, no `//`, no trailing `/`.
fn is_plain(path: &Path) -> bool {
    let bytes = path.as_os_str().as_encoded_bytes();
    bytes.first() == Some(&b'/')
        && (bytes.len() == 1 || bytes.last() != Some(&b'/'))
        && bytes
            .split(|&b| b == b'/')
            .skip(1)
            .all(|c| !c.is_empty() && c != b"." && c != b"..")
}

/// Resolves component by component, one `lstat` each, following symlinks as the kernel would.
fn resolve_walking(base: &Path, input_path: &Path) -> Result<PathBuf, PathError> {
    let mut pending: Vec<OsString> = Vec::new();
    let mut resolved = if input_path.is_absolute() {
        PathBuf::from("/")
    } else {
        base.to_path_buf()
    };
    push_components(input_path, &mut pending);
    let mut links = 0;
    // `pending` is a stack: the next component to apply is at the end.
    while let Some(component) = pending.pop() {
        if component == ".." {
            resolved.pop();
            continue;
        }
        if component == "." || component.is_empty() {
            continue;
        }
        let candidate = resolved.join(&component);
        match std::fs::symlink_metadata(&candidate) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(PathError::TooManySymlinks(candidate.display().to_string()));
                }
                let target = std::fs::read_link(&candidate)
                    .map_err(|_| PathError::TooManySymlinks(candidate.display().to_string()))?;
                if target.is_absolute() {
                    resolved = PathBuf::from("/");
                }
                push_components(&target, &mut pending);
            }
            _ => resolved = candidate,
        }
    }
    Ok(resolved)
}

/// Pushes `path`'s components onto the stack so the first component is popped first.
fn push_components(path: &Path, pending: &mut Vec<OsString>) {
    let parts: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
        })
        .collect();
    pending.extend(parts.into_iter().rev());
}

/// A configured root made absolute and resolved once (when it exists), so comparisons are
/// between resolved paths.
#[must_use]
pub fn canonical_root(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    // From `/`, so every component of the root itself is resolved.
    resolve(Path::new("/"), &absolute.to_string_lossy()).unwrap_or(absolute)
}

/// Whether `path` is `root` or beneath it (component-wise: `/srv2` is not under `/srv`). Both
/// are resolved paths, so comparing their bytes up to a `/` is comparing their components.
#[must_use]
pub fn is_under(path: &Path, root: &Path) -> bool {
    let (path, root) = (
        path.as_os_str().as_encoded_bytes(),
        root.as_os_str().as_encoded_bytes(),
    );
    let root = match root {
        [rest @ .., b'/'] if !rest.is_empty() => rest,
        _ => root,
    };
    path.starts_with(root) && (path.len() == root.len() || root == b"/" || path[root.len()] == b'/')
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn follows_symlinks_before_dot_dot() {
        let dir = tempfile::tempdir().unwrap();
        let base = canonical_root(dir.path());
        std::fs::create_dir_all(base.join("ws/real/deep")).unwrap();
        symlink("/etc", base.join("ws/link-to-etc")).unwrap();
        symlink(base.join("ws/real/deep"), base.join("ws/jump")).unwrap();
        let ws = base.join("ws");
        assert_eq!(
            resolve(&ws, "link-to-etc/x").unwrap(),
            PathBuf::from("/etc/x")
        );
        assert_eq!(resolve(&ws, "../x").unwrap(), base.join("x"));
        // `jump/..` is `real`, not `ws`: the kernel applies `..` after the link.
        assert_eq!(resolve(&ws, "jump/../y").unwrap(), base.join("ws/real/y"));
        assert_eq!(resolve(&ws, "new/dir/../f").unwrap(), base.join("ws/new/f"));
        assert_eq!(
            resolve(&ws, "/etc//shadow").unwrap(),
            PathBuf::from("/etc/shadow")
        );
        assert_eq!(resolve(&ws, "a\0b"), Err(PathError::Nul));
        symlink("loop", base.join("ws/loop")).unwrap();
        assert!(matches!(
            resolve(&ws, "loop/x"),
            Err(PathError::TooManySymlinks(_))
        ));
    }

    #[test]
    fn under_is_component_wise() {
        assert!(is_under(Path::new("/srv/a"), Path::new("/srv")));
        assert!(is_under(Path::new("/srv"), Path::new("/srv")));
        assert!(is_under(Path::new("/srv/a"), Path::new("/srv/")));
        assert!(is_under(Path::new("/x"), Path::new("/")));
        assert!(is_under(Path::new("/"), Path::new("/")));
        assert!(!is_under(Path::new("/srv2/a"), Path::new("/srv")));
        assert!(!is_under(Path::new("/sr"), Path::new("/srv")));
    }

    /// The one-call fast path answers exactly what the component walk answers.
    #[test]
    fn the_fast_path_agrees_with_the_walk() {
        let dir = tempfile::tempdir().unwrap();
        let base = canonical_root(dir.path());
        let ws = base.join("ws");
        std::fs::create_dir_all(ws.join("real/deep")).unwrap();
        std::fs::write(ws.join("real/deep/f"), "x").unwrap();
        symlink("/etc", ws.join("link-to-etc")).unwrap();
        symlink(ws.join("real/deep"), ws.join("jump")).unwrap();
        for input in [
            "real/deep/f",
            "real/./deep//f",
            "real/deep/../deep/f",
            "real/deep/f/",
            "../ws/real",
            "jump/f",
            "jump/../f",
            "link-to-etc/hostname",
            "missing/x",
            "/etc/hostname",
            "/etc/../etc/hostname",
            "/proc/self/status",
            ".",
            "..",
            "/",
        ] {
            let walked = resolve_walking(&ws, Path::new(input)).unwrap();
            assert_eq!(resolve(&ws, input).unwrap(), walked, "{input}");
        }
    }
}
