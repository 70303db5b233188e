//! The sandbox step of the gate (step 3): the effects a call would have, judged against the
//! session's sandbox, the agent's roots and network access, and what this kernel can enforce.
//! The store, the config file and `/proc` are refused in every sandbox.

use super::effect::Effect;
use super::mode::SandboxPolicy;
use super::paths::is_under;
use super::reason::ReasonCode;
use std::path::{Path, PathBuf};

/// What this machine can enforce for the shell's sandbox, and whether it has the shell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SandboxSupport {
    /// The Landlock ABI version, when Landlock is available.
    pub landlock_abi: Option<u32>,
    /// Whether unprivileged user namespaces can be created.
    pub user_namespaces: bool,
    /// Whether bash is installed: commands run only under bash, the shell the gate parses.
    pub bash: bool,
}

/// Where bash is looked for: the shell's fixed `PATH`, in order.
pub const BASH_LOCATIONS: &[&str] = &["/usr/local/bin/bash", "/usr/bin/bash", "/bin/bash"];

/// The bash every command runs under, if this machine has one.
#[must_use]
pub fn bash_path() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    BASH_LOCATIONS.iter().map(PathBuf::from).find(|p| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// What the model is told when there is no bash.
pub const NO_BASH: &str = "bash is not installed, so the shell tool is unavailable: commands run only under bash, the shell the gate parses (install bash)";

impl SandboxSupport {
    /// Probes the running kernel and looks for bash.
    #[must_use]
    pub fn probe() -> Self {
        SandboxSupport {
            landlock_abi: landlock_abi(),
            user_namespaces: user_namespaces_allowed(),
            bash: bash_path().is_some(),
        }
    }

    /// Why `policy` cannot be enforced here, if it cannot.
    #[must_use]
    pub fn shortfall(&self, policy: SandboxPolicy) -> Option<String> {
        if policy == SandboxPolicy::DangerFullAccess {
            return None;
        }
        let mut missing = Vec::new();
        if self.landlock_abi.is_none() {
            missing.push("Landlock");
        }
        if !self.user_namespaces {
            missing.push("unprivileged user namespaces");
        }
        if missing.is_empty() {
            return None;
        }
        Some(format!(
            "this kernel cannot enforce sandbox `{policy}` (missing {}); set `sandbox = \"danger-full-access\"` for this agent to run commands unconfined",
            missing.join(" and ")
        ))
    }
}

fn landlock_abi() -> Option<u32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag, the syscall only
    // returns the ABI version (or an error); it creates nothing and touches no memory of ours.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(abi).ok().filter(|v| *v > 0)
}

fn read_number(path: &str) -> Option<i64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn user_namespaces_allowed() -> bool {
    if read_number("/proc/sys/user/max_user_namespaces").is_some_and(|n| n <= 0) {
        return false;
    }
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        return true;
    }
    read_number("/proc/sys/kernel/unprivileged_userns_clone").is_none_or(|n| n == 1)
        && read_number("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
            .is_none_or(|n| n == 0)
}

/// The paths one call may touch.
#[derive(Clone, Debug)]
pub struct Roots {
    /// The session's workspace.
    pub workspace: PathBuf,
    pub writable: Vec<PathBuf>,
    pub readable: Vec<PathBuf>,
    /// Never readable or writable, in any sandbox: the store, the config file, `/proc`.
    pub protected: Vec<PathBuf>,
}

impl Roots {
    fn protected_hit(&self, path: &Path) -> Option<&Path> {
        self.protected
            .iter()
            .find(|p| is_under(path, p))
            .map(PathBuf::as_path)
    }

    fn writable_hit(&self, path: &Path) -> bool {
        is_under(path, &self.workspace) || self.writable.iter().any(|r| is_under(path, r))
    }

    fn readable_hit(&self, path: &Path) -> bool {
        self.writable_hit(path) || self.readable.iter().any(|r| is_under(path, r))
    }
}

/// A sandbox finding: the reason code and what the model and the card are told.
pub type SandboxDenial = (ReasonCode, String);

/// Judges file and network effects. The first finding is returned; all are denials.
#[must_use]
pub fn check_effects(
    effects: &[Effect],
    sandbox: SandboxPolicy,
    roots: &Roots,
    network_access: bool,
    agent: &str,
) -> Option<SandboxDenial> {
    for effect in effects {
        match effect {
            Effect::Read(path) | Effect::Write(path) => {
                let write = matches!(effect, Effect::Write(_));
                let code = if write {
                    ReasonCode::SandboxWrite
                } else {
                    ReasonCode::SandboxRead
                };
                if let Some(protected) = roots.protected_hit(path) {
                    return Some((
                        code,
                        format!(
                            "`{}` is under `{}`, which no tool may touch in any sandbox",
                            path.display(),
                            protected.display()
                        ),
                    ));
                }
                match sandbox {
                    SandboxPolicy::DangerFullAccess => {}
                    SandboxPolicy::ReadOnly if write => {
                        return Some((
                            code,
                            format!(
                                "sandbox `read-only` allows no writes (`{}`)",
                                path.display()
                            ),
                        ));
                    }
                    _ if write && !roots.writable_hit(path) => {
                        return Some((
                            code,
                            format!(
                                "`{}` is outside the writable roots (the workspace `{}` and agent {agent}'s `writable_roots`)",
                                path.display(),
                                roots.workspace.display()
                            ),
                        ));
                    }
                    _ if !write && !roots.readable_hit(path) => {
                        return Some((
                            code,
                            format!(
                                "`{}` is outside the readable roots (the workspace `{}` and agent {agent}'s `readable_roots`/`writable_roots`)",
                                path.display(),
                                roots.workspace.display()
                            ),
                        ));
                    }
                    _ => {}
                }
            }
            Effect::Network { host, .. } => {
                if let Some(denial) = network_denial(sandbox, network_access, agent, host) {
                    return Some(denial);
                }
            }
        }
    }
    None
}

/// A network effect without `network_access` under a confining sandbox.
#[must_use]
pub fn network_denial(
    sandbox: SandboxPolicy,
    network_access: bool,
    agent: &str,
    what: &str,
) -> Option<SandboxDenial> {
    if sandbox == SandboxPolicy::DangerFullAccess || network_access {
        return None;
    }
    Some((
        ReasonCode::NetworkRequest,
        format!(
            "network access is off for agent {agent} (`{what}`); set `network_access = true` in [agents.{agent}] to allow it"
        ),
    ))
}
