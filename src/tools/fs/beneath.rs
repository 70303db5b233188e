//! Opening files beneath an allowed root with `openat2(RESOLVE_BENEATH)`: a symlink swapped in
//! after the gate checked a path cannot lead outside the root, because the kernel refuses any
//! resolution that leaves it (and magic links such as `/proc/self/fd/*`).

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// A root directory, held open.
pub struct Beneath {
    root: OwnedFd,
    path: PathBuf,
}

fn cstring(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

/// A relative path with no `..` (the gate resolved it already; this refuses anything else).
fn checked_relative(rel: &Path) -> io::Result<&Path> {
    let plain = rel
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !plain {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("`{}` is not a plain path beneath the root", rel.display()),
        ));
    }
    Ok(rel)
}

impl Beneath {
    /// Opens `root` (which must be a directory).
    pub fn open(root: &Path) -> io::Result<Self> {
        let c = cstring(root)?;
        // SAFETY: a valid NUL-terminated path; the returned fd is owned below.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by open and is ours.
        let root_fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Beneath {
            root: root_fd,
            path: root.to_path_buf(),
        })
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `openat2` beneath the root.
    pub fn open_at(&self, rel: &Path, flags: i32, mode: u32) -> io::Result<OwnedFd> {
        self.open_resolving(rel, flags, mode, 0)
    }

    /// Creates a new file for writing, following no link on the way — not even one that stays
    /// beneath the root — and never over an existing name (a planted symlink there included).
    pub fn create_new(&self, rel: &Path) -> io::Result<File> {
        let fd = self.open_resolving(
            rel,
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
            0o644,
            libc::RESOLVE_NO_SYMLINKS,
        )?;
        Ok(File::from(fd))
    }

    fn open_resolving(
        &self,
        rel: &Path,
        flags: i32,
        mode: u32,
        extra_resolve: u64,
    ) -> io::Result<OwnedFd> {
        let rel = checked_relative(rel)?;
        let rel = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        };
        let c = cstring(rel)?;
        // SAFETY: open_how is plain data; zeroed is a valid value, then its fields are set.
        let mut how: libc::open_how = unsafe { std::mem::zeroed() };
        how.flags = (flags | libc::O_CLOEXEC) as u64;
        how.mode = u64::from(mode);
        how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS | extra_resolve;
        // SAFETY: valid dirfd, NUL-terminated path, and a pointer to a live open_how of the
        // size passed.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                self.root.as_raw_fd(),
                c.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = i32::try_from(fd).map_err(|_| io::Error::other("fd out of range"))?;
        // SAFETY: `fd` was just returned by openat2 and is ours.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    pub fn read_file(&self, rel: &Path) -> io::Result<File> {
        Ok(File::from(self.open_at(rel, libc::O_RDONLY, 0)?))
    }

    /// Creates or truncates a file for writing.
    pub fn create_file(&self, rel: &Path) -> io::Result<File> {
        Ok(File::from(self.open_at(
            rel,
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
            0o644,
        )?))
    }

    /// The parent directory of `rel` (opened beneath) and the last component's name.
    fn parent_of(&self, rel: &Path) -> io::Result<(OwnedFd, CString)> {
        let rel = checked_relative(rel)?;
        let name = rel.file_name().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "the path has no file name")
        })?;
        let parent = rel.parent().unwrap_or(Path::new(""));
        let dir = self.open_at(parent, libc::O_PATH | libc::O_DIRECTORY, 0)?;
        let name = CString::new(name.as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in name"))?;
        Ok((dir, name))
    }

    /// Creates `rel` and its missing parents, one component at a time beneath the root.
    pub fn create_dir_all(&self, rel: &Path) -> io::Result<()> {
        let rel = checked_relative(rel)?;
        let mut so_far = PathBuf::new();
        for component in rel.components() {
            so_far.push(component);
            let (dir, name) = self.parent_of(&so_far)?;
            // SAFETY: valid dirfd and NUL-terminated name.
            let r = unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o755) };
            if r != 0 {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::AlreadyExists {
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Removes a file, or an empty directory.
    pub fn remove(&self, rel: &Path, directory: bool) -> io::Result<()> {
        let (dir, name) = self.parent_of(rel)?;
        let flags = if directory { libc::AT_REMOVEDIR } else { 0 };
        // SAFETY: valid dirfd and NUL-terminated name.
        if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flags) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Renames `from` (beneath this root) to `to` (beneath `other`), never replacing a file.
    pub fn rename(&self, from: &Path, other: &Beneath, to: &Path) -> io::Result<()> {
        let (from_dir, from_name) = self.parent_of(from)?;
        let (to_dir, to_name) = other.parent_of(to)?;
        // SAFETY: valid dirfds and NUL-terminated names.
        let r = unsafe {
            libc::renameat2(
                from_dir.as_raw_fd(),
                from_name.as_ptr(),
                to_dir.as_raw_fd(),
                to_name.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The entries of a directory beneath the root: name, whether a directory, size.
    pub fn list(&self, rel: &Path) -> io::Result<Vec<(String, EntryKind, u64)>> {
        let dir = self.open_at(rel, libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
        // The fd's /proc link names the very directory opened, whatever its path now is.
        let listing = std::fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd()))?;
        let mut out = Vec::new();
        for entry in listing {
            let entry = entry?;
            let meta = entry.metadata()?;
            let kind = if meta.file_type().is_symlink() {
                EntryKind::Symlink
            } else if meta.is_dir() {
                EntryKind::Dir
            } else {
                EntryKind::File
            };
            out.push((
                entry.file_name().to_string_lossy().into_owned(),
                kind,
                meta.len(),
            ));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }
}

/// What a directory entry is (symlinks are reported, never followed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::fs::symlink;

    #[test]
    fn symlinks_cannot_lead_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/ok.txt"), "inside").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "outside").unwrap();
        symlink(dir.path().join("secret.txt"), root.join("escape")).unwrap();
        symlink("/etc", root.join("etc")).unwrap();
        symlink("sub/ok.txt", root.join("relative-inside")).unwrap();
        let b = Beneath::open(&root).unwrap();
        let mut text = String::new();
        b.read_file(Path::new("sub/ok.txt"))
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "inside");
        assert!(b.read_file(Path::new("relative-inside")).is_ok());
        assert!(b.read_file(Path::new("escape")).is_err());
        assert!(b.read_file(Path::new("etc/hostname")).is_err());
        assert!(b.read_file(Path::new("../secret.txt")).is_err());
        assert!(b.create_file(Path::new("escape")).is_err());
        b.create_dir_all(Path::new("a/b/c")).unwrap();
        assert!(root.join("a/b/c").is_dir());
        assert!(b.create_dir_all(Path::new("etc/x")).is_err());
        let names: Vec<String> = b
            .list(Path::new(""))
            .unwrap()
            .into_iter()
            .map(|e| e.0)
            .collect();
        assert!(names.contains(&"sub".to_string()));
        b.rename(Path::new("sub/ok.txt"), &b, Path::new("moved.txt"))
            .unwrap();
        assert!(root.join("moved.txt").exists());
        b.remove(Path::new("moved.txt"), false).unwrap();
        assert!(!root.join("moved.txt").exists());
    }
}
