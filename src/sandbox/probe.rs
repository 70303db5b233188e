//! What this machine can enforce, read from the running kernel: the Landlock ABI version (a
//! syscall), whether unprivileged user namespaces can be created (`/proc/sys`), and where bash
//! is. The gate takes the answer as data ([`SandboxSupport`]); reading the kernel belongs here,
//! beside the confinement that relies on it.

use crate::policy::sandbox::SandboxSupport;
use std::path::PathBuf;

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

/// Where bash is, looked up once per process like [`probe`]'s answer (which says whether
/// there is one): a new session's runner no longer stats three paths.
#[must_use]
pub fn bash_path_once() -> Option<PathBuf> {
    static FOUND: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    FOUND.get_or_init(bash_path).clone()
}

/// What this machine can enforce, probed once per process: every session of every agent asks
/// (each assembles an executor), and the kernel's answer does not change while the process
/// runs (a sysctl changed later is read at the next start; until then a sandbox the kernel
/// refuses fails its command, closed).
#[must_use]
pub fn probe() -> SandboxSupport {
    static PROBED: std::sync::OnceLock<SandboxSupport> = std::sync::OnceLock::new();
    *PROBED.get_or_init(probe_now)
}

/// Probes the running kernel and looks for bash.
fn probe_now() -> SandboxSupport {
    SandboxSupport {
        landlock_abi: landlock_abi(),
        user_namespaces: user_namespaces_allowed(),
        bash: bash_path_once().is_some(),
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
