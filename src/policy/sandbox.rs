//! The sandbox step of the gate (step 3): the effects a call would have, judged against the
//! session's sandbox, the agent's roots and network access, and what this kernel can enforce.
//! The store, the config file and `/proc` are refused in every sandbox. What the kernel can
//! enforce comes in as data ([`SandboxSupport`], probed by `crate::sandbox::probe`), so every
//! decision here is pure.

use super::effect::Effect;
use super::mode::SandboxPolicy;
use super::paths::is_under;
use super::private_hosts::{HostPattern, host_refusal, not_own};
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

/// What the model is told when there is no bash.
pub const NO_BASH: &str = "bash is not installed, so the shell tool is unavailable: commands run only under bash, the shell the gate parses (install bash)";

impl SandboxSupport {
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

/// What an agent's calls may reach over the network.
#[derive(Clone, Copy, Debug)]
pub struct Network<'a> {
    /// `network_access`: off, a confining sandbox refuses every network effect.
    pub access: bool,
    /// Non-public hosts the web tools may reach (refused in every sandbox otherwise).
    pub private_hosts: &'a [HostPattern],
}

impl Network<'_> {
    /// No network: for judging paths alone.
    pub const NONE: Network<'static> = Network {
        access: false,
        private_hosts: &[],
    };
}

/// A sandbox finding: the reason code and what the model and the card are told.
pub type SandboxDenial = (ReasonCode, String);

/// Judges file and network effects. The first finding is returned; all are denials.
#[must_use]
pub fn check_effects(
    effects: &[Effect],
    sandbox: SandboxPolicy,
    roots: &Roots,
    network: &Network<'_>,
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
                if let Some(denial) = network_denial(sandbox, network.access, agent, host) {
                    return Some(denial);
                }
                if let Some(refusal) = host_refusal(network.private_hosts, host, agent, &not_own) {
                    return Some((ReasonCode::NetworkRequest, refusal));
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
