//! The binary as a user runs it: exit codes, what `check` prints, `explain`'s JSON, the
//! allowlist round trip through a real store, `run` and `chat` against a scripted model.
//! This module holds the helpers that run the binary (`tollgate`, and `Live` for a process
//! read as it writes); the scenarios live in its submodules.

mod chat;
mod check;
mod explain;
mod run;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub(crate) fn tollgate(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args(args)
        .current_dir(cwd)
        .env_remove("TOLLGATE_LOG")
        .output()
        .unwrap()
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A child process's output, collected as it arrives.
pub(crate) struct Live {
    pub(crate) child: std::process::Child,
    seen: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Live {
    pub(crate) fn start(dir: &Path, args: &[&str]) -> Live {
        use std::io::Read;
        let mut child = Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .args(args)
            .current_dir(dir)
            .env("USER", "tester")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let mut stdout = child.stdout.take().unwrap();
        let sink = seen.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buffer[..n]));
            }
        });
        Live { child, seen }
    }

    pub(crate) fn send(&mut self, line: &str) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    pub(crate) fn wait_for(&self, pattern: &str) -> String {
        for _ in 0..300 {
            let text = self.seen.lock().unwrap().clone();
            if text.contains(pattern) {
                return text;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("never saw {pattern:?} in:\n{}", self.seen.lock().unwrap());
    }
}
