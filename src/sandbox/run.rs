//! Running one shell command: through the sandbox helper (or unconfined under
//! `danger-full-access`), with the sanitized environment, bounded output, a timeout and
//! cancellation that kill everything the command started.

use super::HELPER_ARG;
use super::helper::{ERROR_PREFIX, SETUP_FAILED};
use super::output::{CappedOutput, OUTPUT_CAP, read_capped};
use super::probe::bash_path_once;
use super::spec::{BASH_ARGS, SandboxSpec};
use crate::policy::mode::SandboxPolicy;
use crate::policy::sandbox::NO_BASH;
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

/// How a command ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunOutcome {
    /// The exit code (128 + signal when killed by one); `None` when it was killed for a
    /// timeout or cancel.
    pub exit_code: Option<i32>,
    pub stdout: CappedOutput,
    pub stderr: CappedOutput,
    pub timed_out: bool,
    pub cancelled: bool,
    pub duration: Duration,
}

/// Why a command did not run (or its end is unknown).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunError {
    /// It could not be started.
    Spawn(String),
    /// The sandbox could not be set up; the command never ran.
    SandboxSetup(String),
    /// There is no bash to run it with; it never ran.
    NoShell,
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Spawn(e) => write!(f, "could not start the command: {e}"),
            RunError::SandboxSetup(e) => write!(
                f,
                "the sandbox could not be set up, so the command did not run: {e}"
            ),
            RunError::NoShell => f.write_str(NO_BASH),
        }
    }
}

impl std::error::Error for RunError {}

/// Runs shell commands under bash, re-executing `helper` (the tollgate binary) to confine them.
#[derive(Clone, Debug)]
pub struct ShellRunner {
    helper: PathBuf,
    /// The bash every command runs under; `None` where there is none (nothing runs).
    bash: Option<PathBuf>,
}

/// After the command ended (or was killed), how long its output is read before it is given
/// up on: a process it left running (under `danger-full-access`, where no namespace ends with
/// the command; `setsid` escapes even its process group) may hold the pipes open for ever.
const DRAIN_AFTER_END: Duration = Duration::from_secs(2);

impl ShellRunner {
    /// A runner whose helper is `helper` (a tollgate binary), with this machine's bash.
    #[must_use]
    pub fn new(helper: PathBuf) -> Self {
        ShellRunner {
            helper,
            bash: bash_path_once(),
        }
    }

    /// Runs `command` in `spec.workspace` with `env` (already sanitized), confined by `spec`
    /// with a fresh private temp dir (`TMPDIR`), killed after `timeout` or when `cancel`
    /// completes.
    pub async fn run(
        &self,
        command: &str,
        spec: &SandboxSpec,
        env: &BTreeMap<String, String>,
        timeout: Duration,
        cancel: impl Future<Output = ()>,
    ) -> Result<RunOutcome, RunError> {
        let bash = self.bash.clone().ok_or(RunError::NoShell)?;
        std::fs::create_dir_all(&spec.workspace)
            .map_err(|e| RunError::Spawn(format!("creating {}: {e}", spec.workspace.display())))?;
        // `<outer>/tmp` is the command's; `<outer>/setup-errors` is the helper's alone.
        let tmp = tempfile::Builder::new()
            .prefix("tollgate-")
            .tempdir()
            .map_err(|e| RunError::Spawn(format!("creating a private temp dir: {e}")))?;
        let mut spec = spec.clone();
        spec.tmpdir = tmp.path().join("tmp");
        spec.setup_errors = tmp.path().join("setup-errors");
        std::fs::create_dir(&spec.tmpdir)
            .map_err(|e| RunError::Spawn(format!("creating a private temp dir: {e}")))?;
        spec.shell = bash.clone();
        let mut env = env.clone();
        env.insert("HOME".into(), spec.workspace.display().to_string());
        // HOME is the workspace, which the agent can write: a config file there that names a
        // program must not be read by a command a key allows as harmless (`kubectl get`
        // runs `~/.kube/config`'s credential plugins; `~/.config/go/env` can set
        // `GOFLAGS=-toolexec=./p`). Unless the service says where, they read nothing.
        env.entry("KUBECONFIG".into())
            .or_insert_with(|| "/dev/null".into());
        env.entry("GOENV".into()).or_insert_with(|| "off".into());
        // `less` reads key bindings from `~/.config/lesskey` or `~/.lesskey`, whose `#env`
        // section can set `LESSOPEN`, a program it runs on every file it shows.
        env.entry("LESSKEYIN".into())
            .or_insert_with(|| "/dev/null".into());
        env.entry("LESSKEY".into())
            .or_insert_with(|| "/dev/null".into());
        env.insert("PWD".into(), spec.workspace.display().to_string());
        env.insert("TMPDIR".into(), spec.tmpdir.display().to_string());
        if !spec.trust_git_config {
            super::git::pin(&mut env);
        }

        let confined = spec.sandbox != SandboxPolicy::DangerFullAccess;
        let mut cmd = if confined {
            let spec_json = serde_json::to_string(&spec)
                .map_err(|e| RunError::Spawn(format!("encoding the sandbox spec: {e}")))?;
            let mut cmd = Command::new(&self.helper);
            cmd.arg(HELPER_ARG).arg(spec_json).arg(command);
            cmd
        } else {
            let mut cmd = Command::new(&bash);
            cmd.args(BASH_ARGS).arg(command);
            // Its own process group, so a kill reaches its children too.
            cmd.process_group(0);
            cmd
        };
        cmd.env_clear()
            .envs(&env)
            .current_dir(&spec.workspace)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let started = Instant::now();
        let mut child = cmd.spawn().map_err(|e| RunError::Spawn(e.to_string()))?;
        let pid = child.id();
        let stop_reading = CancellationToken::new();
        // A run dropped before its end (the executor's timeout) stops its readers too.
        let _stop_on_drop = stop_reading.clone().drop_guard();
        let stdout = child
            .stdout
            .take()
            .map(|s| tokio::spawn(read_capped(s, OUTPUT_CAP, stop_reading.clone())));
        let stderr = child
            .stderr
            .take()
            .map(|s| tokio::spawn(read_capped(s, OUTPUT_CAP, stop_reading.clone())));

        let mut timed_out = false;
        let mut cancelled = false;
        let status = tokio::select! {
            status = child.wait() => status.ok(),
            () = tokio::time::sleep(timeout) => { timed_out = true; None }
            () = cancel => { cancelled = true; None }
        };
        if status.is_none() {
            kill(&mut child, pid, confined).await;
        }
        // A confined command that ended took its namespace with it: its pipes are at their
        // end, and are read to it however long a loaded machine takes.
        let drain = (!confined || status.is_none()).then_some(DRAIN_AFTER_END);
        let (stdout, stderr) = collect(stdout, stderr, drain, &stop_reading).await;
        let exit_code = status.and_then(|s| {
            use std::os::unix::process::ExitStatusExt;
            s.code().or_else(|| s.signal().map(|sig| 128 + sig))
        });
        // Only the helper can write the setup-errors file (the command runs under Landlock,
        // which lets it write its temp dir, not the file beside it): a command that prints the
        // helper's prefix and exits 125 is a command that failed, not a sandbox that did.
        if confined && exit_code == Some(SETUP_FAILED) {
            let reported = std::fs::read_to_string(&spec.setup_errors).unwrap_or_default();
            if let Some(line) = reported.lines().find(|l| l.starts_with(ERROR_PREFIX)) {
                return Err(RunError::SandboxSetup(
                    line.trim_start_matches(ERROR_PREFIX).trim().to_string(),
                ));
            }
        }
        drop(tmp);
        Ok(RunOutcome {
            exit_code,
            stdout,
            stderr,
            timed_out,
            cancelled,
            duration: started.elapsed(),
        })
    }
}

/// Kills a command and everything it started: the helper's death takes the whole PID namespace
/// down (its PID 1 has `PR_SET_PDEATHSIG`); an unconfined command's process group is killed.
async fn kill(child: &mut tokio::process::Child, pid: Option<u32>, confined: bool) {
    if !confined && let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: signalling a process group we created; no memory is touched.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let _ = child.start_kill();
    let _ = child.wait().await;
}

/// The output read once the command ended: up to its end, or what was read within `drain`.
async fn collect(
    stdout: Option<tokio::task::JoinHandle<CappedOutput>>,
    stderr: Option<tokio::task::JoinHandle<CappedOutput>>,
    drain: Option<Duration>,
    stop_reading: &CancellationToken,
) -> (CappedOutput, CappedOutput) {
    let joined = async {
        let mut outputs = [CappedOutput::default(), CappedOutput::default()];
        for (task, output) in [stdout, stderr].into_iter().zip(&mut outputs) {
            if let Some(task) = task {
                *output = task.await.unwrap_or_default();
            }
        }
        outputs
    };
    let mut joined = std::pin::pin!(joined);
    let Some(drain) = drain else {
        return joined.await.into();
    };
    tokio::select! {
        outputs = &mut joined => return outputs.into(),
        () = tokio::time::sleep(drain) => {}
    }
    // The readers return what they have read at once.
    stop_reading.cancel();
    joined.await.into()
}
