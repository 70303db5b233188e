//! A trial run: `true` under `workspace-write` in a scratch workspace, through the same helper
//! every shell command uses. The probe reads what the kernel says it allows; a container can
//! still refuse a step (a masked `/proc` makes the fresh `/proc` mount fail, a seccomp profile
//! refuses `unshare`), and only running the helper shows that. `check` runs it.

use super::{SandboxSpec, ShellRunner};
use crate::policy::mode::SandboxPolicy;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Long enough for a slow machine to start a helper; a sandbox that works answers in ms.
const TRIAL_TIMEOUT: Duration = Duration::from_secs(20);

/// Runs `true` confined, with `helper` as the sandbox helper: `Ok` when it ran and exited 0,
/// else what went wrong (as the helper reported it).
pub fn confined_true(helper: PathBuf) -> Result<(), String> {
    let scratch = tempfile::Builder::new()
        .prefix("tollgate-trial-")
        .tempdir()
        .map_err(|e| format!("creating a scratch workspace: {e}"))?;
    let spec = SandboxSpec {
        sandbox: SandboxPolicy::WorkspaceWrite,
        workspace: scratch.path().to_path_buf(),
        writable_roots: Vec::new(),
        readable_roots: Vec::new(),
        tmpdir: PathBuf::new(),
        setup_errors: PathBuf::new(),
        network: false,
        shell: PathBuf::new(),
        trust_git_config: false,
    };
    let env: BTreeMap<String, String> = [(
        "PATH".to_string(),
        crate::policy::env::BASE_PATH.to_string(),
    )]
    .into();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the async runtime: {e}"))?;
    let outcome = runtime
        .block_on(ShellRunner::new(helper).run(
            "true",
            &spec,
            &env,
            TRIAL_TIMEOUT,
            std::future::pending(),
        ))
        .map_err(|e| e.to_string())?;
    match outcome.exit_code {
        Some(0) => Ok(()),
        Some(code) => Err(format!(
            "`true` exited {code}: {}",
            outcome.stderr.text().trim()
        )),
        None => Err("`true` did not finish in time".into()),
    }
}
