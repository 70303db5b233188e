//! What the helper is told: the sandbox, the roots, the private temp dir, the network, and the
//! command. Paths only — never a secret (the helper's command line is visible inside).

use crate::policy::mode::SandboxPolicy;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The confinement of one shell command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxSpec {
    pub sandbox: SandboxPolicy,
    /// The session's workspace: the command's cwd and `HOME`; writable under `workspace-write`.
    pub workspace: PathBuf,
    pub writable_roots: Vec<PathBuf>,
    pub readable_roots: Vec<PathBuf>,
    /// The call's private temp dir: always writable.
    pub tmpdir: PathBuf,
    /// Where the helper writes why setup failed: beside the temp dir, where the command cannot
    /// write, so a command cannot pass its own exit for a sandbox failure (set by the runner).
    #[serde(default)]
    pub setup_errors: PathBuf,
    /// The bash the command runs under (set by the runner).
    #[serde(default)]
    pub shell: PathBuf,
    /// Keep the host's network (no network namespace).
    pub network: bool,
    /// Let git read configuration and hooks the agent could have written (agent key
    /// `trust_git_config`); otherwise its code-running keys are pinned.
    #[serde(default)]
    pub trust_git_config: bool,
}

/// How the command is handed to bash: no startup files, no aliases, the string as the script.
pub const BASH_ARGS: &[&str] = &["--noprofile", "--norc", "-c"];

/// System paths programs need to read: binaries, libraries, and the parts of `/etc` that
/// programs consult (the account and sudo files are left out on purpose).
pub const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/opt",
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/nsswitch.conf",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/os-release",
    "/etc/debian_version",
    "/etc/mime.types",
    "/etc/gitconfig",
    "/etc/bash.bashrc",
    "/etc/profile",
    "/etc/profile.d",
    "/etc/inputrc",
    "/etc/environment",
    "/etc/terminfo",
    "/etc/magic",
    "/etc/protocols",
    "/etc/services",
    "/etc/locale.alias",
    "/etc/python3",
    "/etc/perl",
    "/proc",
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Device files any command may write.
/// Not `/dev/tty`: a command has no terminal (it runs in a session of its own), and the
/// service's must stay out of its reach.
pub const DEVICE_WRITE: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];
