//! Opening files beneath an allowed root with `openat2(RESOLVE_BENEATH)`: a symlink swapped in
//! after the gate checked a path cannot lead outside the root, because the kernel refuses any
//! resolution that leaves it (and magic links such as `/proc/self/fd/*`).
//!
//! The system calls go through rustix: safe wrappers whose errors convert to `io::Error` with
//! the kernel's errno kept (callers match on `ELOOP`, `EXDEV` and `AlreadyExists`).

use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags, ResolveFlags};
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
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
        let root_fd = rustix::fs::open(
            c.as_c_str(),
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Beneath {
            root: root_fd,
            path: root.to_path_buf(),
        })
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `openat2` beneath the root; `flags` are `libc::O_*` flags.
    pub fn open_at(&self, rel: &Path, flags: i32, mode: u32) -> io::Result<OwnedFd> {
        self.open_resolving(
            rel,
            OFlags::from_bits_retain(flags.cast_unsigned()),
            mode,
            ResolveFlags::empty(),
        )
    }

    /// Creates a new file for writing, following no link on the way — not even one that stays
    /// beneath the root — and never over an existing name (a planted symlink there included).
    pub fn create_new(&self, rel: &Path) -> io::Result<File> {
        let fd = self.open_resolving(
            rel,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW,
            0o644,
            ResolveFlags::NO_SYMLINKS,
        )?;
        Ok(File::from(fd))
    }

    fn open_resolving(
        &self,
        rel: &Path,
        flags: OFlags,
        mode: u32,
        extra_resolve: ResolveFlags,
    ) -> io::Result<OwnedFd> {
        let rel = checked_relative(rel)?;
        let rel = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        };
        let c = cstring(rel)?;
        // Never blocking in `open`: a FIFO opened for reading waits for a writer, and for
        // writing for a reader, forever, on a thread neither a tool's timeout nor `/stop` can
        // take back. A chat that made one (`mkfifo`) and had it read eight times would hold
        // every blocking thread. `O_NONBLOCK` changes nothing for files and directories; an
        // `O_PATH` open never blocks, and `openat2` refuses other flags beside it.
        let never_wait = if flags.contains(OFlags::PATH) {
            OFlags::empty()
        } else {
            OFlags::NONBLOCK
        };
        let fd = rustix::fs::openat2(
            &self.root,
            c.as_c_str(),
            flags | OFlags::CLOEXEC | never_wait,
            Mode::from_bits_retain(mode),
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS | extra_resolve,
        )?;
        let kind = rustix::fs::FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode);
        if !matches!(
            kind,
            rustix::fs::FileType::RegularFile | rustix::fs::FileType::Directory
        ) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{}` is not a regular file or a directory", rel.display()),
            ));
        }
        Ok(fd)
    }

    pub fn read_file(&self, rel: &Path) -> io::Result<File> {
        Ok(File::from(self.open_at(rel, libc::O_RDONLY, 0)?))
    }

    /// At most `limit` bytes of a regular file, following no link on the way (every open here
    /// already refuses a FIFO without waiting; a directory is refused too): what
    /// `analyze_media` and voice transcription send to a companion model.
    pub fn read_regular(&self, rel: &Path, limit: u64) -> io::Result<Vec<u8>> {
        use std::io::Read;
        let fd = self.open_resolving(
            rel,
            OFlags::RDONLY | OFlags::NOFOLLOW,
            0,
            ResolveFlags::NO_SYMLINKS,
        )?;
        let stat = rustix::fs::fstat(&fd)?;
        if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{}` is not a regular file", rel.display()),
            ));
        }
        let mut bytes = Vec::new();
        File::from(fd).take(limit).read_to_end(&mut bytes)?;
        Ok(bytes)
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
            match rustix::fs::mkdirat(&dir, name.as_c_str(), Mode::from_bits_retain(0o755)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Removes a file, or an empty directory.
    pub fn remove(&self, rel: &Path, directory: bool) -> io::Result<()> {
        let (dir, name) = self.parent_of(rel)?;
        let flags = if directory {
            AtFlags::REMOVEDIR
        } else {
            AtFlags::empty()
        };
        Ok(rustix::fs::unlinkat(&dir, name.as_c_str(), flags)?)
    }

    /// Renames `from` (beneath this root) to `to` (beneath `other`), never replacing a file.
    pub fn rename(&self, from: &Path, other: &Beneath, to: &Path) -> io::Result<()> {
        let (from_dir, from_name) = self.parent_of(from)?;
        let (to_dir, to_name) = other.parent_of(to)?;
        Ok(rustix::fs::renameat_with(
            &from_dir,
            from_name.as_c_str(),
            &to_dir,
            to_name.as_c_str(),
            RenameFlags::NOREPLACE,
        )?)
    }

    /// The entries of a directory beneath the root: name, whether a directory, size.
    pub fn list(&self, rel: &Path) -> io::Result<Vec<(String, EntryKind, u64)>> {
        let dir = self.open_at(rel, libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
        // The fd's /proc link names the very directory opened, whatever its path now is.
        let listing = std::fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd()))?;
        let mut out = Vec::new();
        for entry in listing {
            let entry = entry?;
            let meta = match entry.metadata() {
                Ok(meta) => meta,
                // Removed since the directory was read (a build, another call): listed as
                // it is now, not failed as a whole.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
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

    /// Files removed while a directory is listed (a build, a cleanup in the background) are
    /// left out of the listing instead of failing it: `ls`, `find` and `grep` go on.
    #[test]
    fn files_removed_during_a_listing_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<_> = (0..3000)
            .map(|i| dir.path().join(format!("f{i}")))
            .collect();
        for name in &names {
            std::fs::write(name, "x").unwrap();
        }
        let b = Beneath::open(dir.path()).unwrap();
        let removing = std::thread::spawn(move || {
            for name in names {
                std::fs::remove_file(name).unwrap();
            }
        });
        let mut listings = 0;
        while !removing.is_finished() {
            b.list(Path::new("")).unwrap();
            listings += 1;
        }
        removing.join().unwrap();
        assert!(
            b.list(Path::new("")).unwrap().is_empty(),
            "after {listings}"
        );
    }

    /// A FIFO is refused at once, for reading and for writing: `open` on one would wait for
    /// the other end forever. Waited for on a channel, so a hang fails the test.
    #[test]
    fn a_fifo_is_refused_without_waiting_for_its_other_end() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = std::ffi::CString::new(
            dir.path()
                .join("pipe")
                .into_os_string()
                .into_encoded_bytes(),
        )
        .unwrap();
        // SAFETY: a valid C string; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        // And through a link to it, which `openat2` follows beneath the root.
        symlink("pipe", dir.path().join("notes.txt")).unwrap();
        let root = dir.path().to_path_buf();
        let (done, results) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let b = Beneath::open(&root).unwrap();
            let read = b.read_file(Path::new("pipe")).map(drop);
            let written = b.create_file(Path::new("notes.txt")).map(drop);
            let listed = b.list(Path::new("pipe")).map(drop);
            let linked = b.read_file(Path::new("notes.txt")).map(drop);
            let _ = done.send((read, written, listed, linked));
        });
        let (read, written, listed, linked) = results
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("opening a FIFO waited for its other end");
        assert!(
            read.unwrap_err()
                .to_string()
                .contains("is not a regular file"),
            "read"
        );
        assert!(written.is_err(), "written");
        assert!(listed.is_err(), "listed");
        assert!(linked.is_err(), "read through a link");
    }

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
        let escape = b.read_file(Path::new("escape")).unwrap_err();
        assert_eq!(escape.raw_os_error(), Some(libc::EXDEV));
        assert!(b.read_file(Path::new("etc/hostname")).is_err());
        assert!(b.read_file(Path::new("../secret.txt")).is_err());
        assert!(b.create_file(Path::new("escape")).is_err());
        b.create_dir_all(Path::new("a/b/c")).unwrap();
        assert!(root.join("a/b/c").is_dir());
        assert!(b.create_dir_all(Path::new("etc/x")).is_err());
        // Callers match on these: the kernel's errno and kind come through unchanged.
        let through_link = b.create_new(Path::new("etc/x")).unwrap_err();
        assert_eq!(through_link.raw_os_error(), Some(libc::ELOOP));
        let out = b.open_at(Path::new("../x"), libc::O_RDONLY, 0);
        assert_eq!(
            out.unwrap_err().kind(),
            io::ErrorKind::PermissionDenied,
            "refused before the kernel sees it"
        );
        drop(b.create_new(Path::new("new.txt")).unwrap());
        let again = b.create_new(Path::new("new.txt")).unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);
        let onto = b.rename(Path::new("new.txt"), &b, Path::new("sub/ok.txt"));
        assert_eq!(onto.unwrap_err().kind(), io::ErrorKind::AlreadyExists);
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
