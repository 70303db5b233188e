//! The `sandbox-exec` helper: runs in the re-executed binary before anything else (no threads,
//! no runtime), so `fork` is safe. Steps: new user + mount + PID (+ network) namespaces, map our
//! own uid/gid, fork; the child — PID 1 of the new namespace — dies with the helper
//! (`PR_SET_PDEATHSIG`), mounts a fresh `/proc`, restricts itself with Landlock (files, plus
//! abstract sockets and signals where the kernel scopes them) and a seccomp filter (no Unix
//! sockets), and forks the command, which `exec`s `bash --noprofile --norc -c COMMAND`. PID 1
//! stays this code: it reaps, waits for the command and exits with its status, and its death
//! (with the helper's) ends every process in the namespace. Were the command PID 1, it could
//! clear its own death signal (`prctl`, or the exec of a program with file capabilities, which
//! clears it) and outlive the helper killed at its timeout, with the whole namespace. The
//! helper waits and exits with PID 1's status. Any setup step that fails ends the helper with
//! [`SETUP_FAILED`] before the command runs: never unconfined.

use super::spec::{BASH_ARGS, DEVICE_WRITE, SYSTEM_READ, SandboxSpec};
use crate::policy::mode::SandboxPolicy;
use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, Scope, path_beneath_rules,
};
use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

/// The helper's exit code when confinement could not be set up (the command never ran).
pub const SETUP_FAILED: i32 = 125;

/// The prefix of the helper's own error lines on stderr.
pub const ERROR_PREFIX: &str = "tollgate-sandbox:";

/// Entry point: `tollgate sandbox-exec SPEC_JSON COMMAND`. Never returns.
pub fn main(args: &[String]) -> ! {
    // Die with tollgate: if the service is killed or exits, this helper dies, and with it the
    // command's whole PID namespace (its PID 1 dies with this helper).
    // SAFETY: prctl with PR_SET_PDEATHSIG only sets this process's parent-death signal.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) } != 0 {
        fail(&format!("prctl: {}", std::io::Error::last_os_error()));
    }
    let (spec, command) = match (args.first(), args.get(1)) {
        (Some(spec), Some(command)) => match serde_json::from_str::<SandboxSpec>(spec) {
            Ok(spec) => (spec, command.clone()),
            Err(e) => fail(&format!("bad sandbox spec: {e}")),
        },
        _ => fail("usage: tollgate sandbox-exec SPEC_JSON COMMAND"),
    };
    // Setup failures go to a file only this helper can write (see `SandboxSpec::setup_errors`);
    // the descriptor closes on exec, so the command never holds it.
    if !spec.setup_errors.as_os_str().is_empty() {
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&spec.setup_errors)
        {
            Ok(file) => {
                let _ = SETUP_ERRORS.set(file);
            }
            Err(e) => fail(&format!("opening {}: {e}", spec.setup_errors.display())),
        }
    }
    if spec.sandbox == SandboxPolicy::DangerFullAccess {
        fail("danger-full-access is not run through the sandbox helper");
    }
    // A SIGCHLD ignored by whoever started the service would be inherited, and `waitpid` would
    // then find no child to wait for.
    // SAFETY: resetting a signal's disposition to its default touches no memory.
    unsafe {
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
    }
    if let Err(e) = enter_namespaces(&spec) {
        fail(&e);
    }
    // The helper holds this pipe's writing end for as long as it lives: PID 1 looks at the
    // reading end once its death signal is set, and ends if the helper died before that (a
    // kill between the fork and the `prctl`, which the signal would not cover).
    let mut alive = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(alive.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        fail(&format!("pipe: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: this process is single-threaded (the helper runs before any thread or runtime
    // starts), so the child may run arbitrary code after fork.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => fail(&format!("fork: {}", std::io::Error::last_os_error())),
        0 => {
            // SAFETY: closing this process's copy of the writing end.
            unsafe { libc::close(alive[1]) };
            child(&spec, &command, alive[0])
        }
        child_pid => {
            // SAFETY: closing this process's copy of the reading end.
            unsafe { libc::close(alive[0]) };
            std::process::exit(wait_for(child_pid))
        }
    }
}

/// Whether the helper (the only holder of the pipe's writing end) has died: its end closed.
fn helper_gone(alive: libc::c_int) -> bool {
    let mut watched = libc::pollfd {
        fd: alive,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: polling one descriptor we own, with a valid pollfd, without waiting.
    let ready = unsafe { libc::poll(&mut watched, 1, 0) };
    ready != 0 && watched.revents & (libc::POLLHUP | libc::POLLERR) != 0
}

/// The setup-errors file, once the spec named it.
static SETUP_ERRORS: std::sync::OnceLock<std::fs::File> = std::sync::OnceLock::new();

fn fail(message: &str) -> ! {
    eprintln!("{ERROR_PREFIX} {message}");
    if let Some(mut file) = SETUP_ERRORS.get() {
        use std::io::Write;
        let _ = writeln!(file, "{ERROR_PREFIX} {message}");
    }
    std::process::exit(SETUP_FAILED)
}

fn enter_namespaces(spec: &SandboxSpec) -> Result<(), String> {
    // SAFETY: getuid/getgid have no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // IPC and UTS too: System V shared memory, semaphores and message queues are per IPC
    // namespace, and the host's (and other sessions' commands') would otherwise be reachable
    // by key, and could hold memory after the command ends.
    let mut flags = libc::CLONE_NEWUSER
        | libc::CLONE_NEWNS
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS;
    if !spec.network {
        flags |= libc::CLONE_NEWNET;
    }
    // SAFETY: unshare only changes this process's namespaces.
    if unsafe { libc::unshare(flags) } != 0 {
        return Err(format!("unshare: {}", std::io::Error::last_os_error()));
    }
    // Map our own ids: inside, the command has the same identity (and no more) on host files.
    std::fs::write("/proc/self/setgroups", "deny")
        .map_err(|e| format!("writing setgroups: {e}"))?;
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1"))
        .map_err(|e| format!("writing uid_map: {e}"))?;
    std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1"))
        .map_err(|e| format!("writing gid_map: {e}"))?;
    Ok(())
}

/// Waits for child `pid` (and, as a namespace's PID 1 must, reaps any other process whose
/// parent died): its exit code, or 128 + the signal that killed it.
fn wait_for(pid: libc::pid_t) -> i32 {
    let mut status = 0;
    loop {
        // SAFETY: waiting on our own children with a valid status pointer.
        let r = unsafe { libc::waitpid(-1, &mut status, 0) };
        if r == pid {
            break;
        }
        if r == -1 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return SETUP_FAILED;
        }
    }
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        SETUP_FAILED
    }
}

/// PID 1 of the new namespace.
fn child(spec: &SandboxSpec, command: &str, alive: libc::c_int) -> ! {
    // SAFETY: prctl with PR_SET_PDEATHSIG only sets this process's parent-death signal.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) } != 0 {
        fail(&format!("prctl: {}", std::io::Error::last_os_error()));
    }
    if helper_gone(alive) {
        fail("the sandbox helper ended before its command started");
    }
    // SAFETY: closing our own descriptor; nothing reads it again.
    unsafe { libc::close(alive) };
    // A session of its own, without the service's controlling terminal: a command must not
    // type into the operator's console (`TIOCSTI`, answering its approval prompt), read its
    // keys or draw on it (bubblewrap's CVE-2017-5226).
    // SAFETY: setsid only changes this process's session and process group.
    if unsafe { libc::setsid() } == -1 {
        fail(&format!("setsid: {}", std::io::Error::last_os_error()));
    }
    if let Err(e) = remount_proc() {
        fail(&e);
    }
    if let Err(e) = restrict(spec) {
        fail(&e);
    }
    // Only stdin, stdout and stderr go on: every descriptor from 3 up (one the service left
    // open by mistake — a connected socket, a store file — and the setup-errors file, which
    // must stay open until then) is closed by the exec.
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only marks this process's own descriptors.
    if unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    } != 0
    {
        fail(&format!("close_range: {}", std::io::Error::last_os_error()));
    }
    // Last: the filter would refuse nothing the steps above need, but it belongs to what runs.
    if let Err(e) = super::seccomp::refuse_unix_sockets() {
        fail(&format!(
            "seccomp: {e}; set `sandbox = \"danger-full-access\"` to run commands unconfined"
        ));
    }
    if !spec.shell.is_absolute() {
        fail("no shell given: commands run only under bash");
    }
    // Not dumpable from before the command exists, so it never finds this process traceable:
    // its memory and `/proc/1/fd` are out of the command's reach (it could otherwise clear
    // this process's death signal through `ptrace`, or take the setup-errors file's
    // descriptor). The command's own exec makes the command dumpable again.
    // SAFETY: prctl with PR_SET_DUMPABLE only changes this process's own flag.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0);
    }
    // SAFETY: this process is single-threaded (forked from the single-threaded helper).
    match unsafe { libc::fork() } {
        -1 => fail(&format!("fork: {}", std::io::Error::last_os_error())),
        0 => {
            let error = std::process::Command::new(&spec.shell)
                .args(BASH_ARGS)
                .arg(command)
                .current_dir(&spec.workspace)
                .exec();
            fail(&format!("exec {}: {error}", spec.shell.display()))
        }
        command_pid => init(command_pid),
    }
}

/// What PID 1 does once the command runs: nothing the command can reach, then its status.
fn init(command_pid: libc::pid_t) -> ! {
    // Every descriptor from 3 up closed: nothing stays open here that the command does not
    // hold itself. (A failure leaves them marked close-on-exec, and this process never execs.)
    // SAFETY: close_range only closes this process's own descriptors.
    unsafe {
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
    }
    std::process::exit(wait_for(command_pid))
}

fn mount(
    source: &str,
    target: &str,
    fstype: Option<&str>,
    flags: libc::c_ulong,
) -> Result<(), String> {
    let c = |s: &str| CString::new(s).map_err(|e| e.to_string());
    let source = c(source)?;
    let target_c = c(target)?;
    let fstype = fstype.map(c).transpose()?;
    // SAFETY: every pointer is a valid NUL-terminated string or null, as mount(2) expects.
    let r = unsafe {
        libc::mount(
            source.as_ptr(),
            target_c.as_ptr(),
            fstype.as_ref().map_or(std::ptr::null(), |f| f.as_ptr()),
            flags,
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(format!(
            "mount {target}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Makes mounts private to this namespace, then mounts a `/proc` that shows only it.
fn remount_proc() -> Result<(), String> {
    mount("none", "/", None, libc::MS_REC | libc::MS_PRIVATE)?;
    mount(
        "proc",
        "/proc",
        Some("proc"),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
    )
}

/// Landlock: read the system paths, the workspace and the roots; write only where the sandbox
/// allows. A kernel that enforces none of it fails the command. One that enforces part (an
/// older ABI without the newest rights, e.g. truncation before ABI 3 or the scopes before ABI
/// 6) runs it with what the kernel has; the seccomp filter and the namespaces still apply.
fn restrict(spec: &SandboxSpec) -> Result<(), String> {
    let abi = ABI::V5;
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);
    let mut readable: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
    readable.push(spec.workspace.clone());
    readable.extend(spec.readable_roots.iter().cloned());
    readable.extend(spec.writable_roots.iter().cloned());
    let mut writable: Vec<PathBuf> = DEVICE_WRITE.iter().map(PathBuf::from).collect();
    writable.push(spec.tmpdir.clone());
    if spec.sandbox == SandboxPolicy::WorkspaceWrite {
        writable.push(spec.workspace.clone());
        writable.extend(spec.writable_roots.iter().cloned());
    }
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .map_err(|e| format!("landlock: {e}"))?
        // Where the kernel has scopes (ABI 6): no abstract Unix socket and no signal outside
        // the sandbox. The seccomp filter refuses Unix sockets anyway; this is the second layer.
        .scope(Scope::from_all(ABI::V6))
        .map_err(|e| format!("landlock: {e}"))?
        .create()
        .map_err(|e| format!("landlock: {e}"))?
        .add_rules(path_beneath_rules(&readable, read))
        .map_err(|e| format!("landlock: {e}"))?
        .add_rules(path_beneath_rules(&writable, all))
        .map_err(|e| format!("landlock: {e}"))?
        .restrict_self()
        .map_err(|e| format!("landlock: {e}"))?;
    if status.ruleset == RulesetStatus::NotEnforced || !status.no_new_privs {
        return Err(format!(
            "landlock is not enforced on this kernel ({:?}); set `sandbox = \"danger-full-access\"` to run commands unconfined",
            status.ruleset
        ));
    }
    Ok(())
}
