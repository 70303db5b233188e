//! The shell child's confinement. Under `read-only` and `workspace-write` the binary re-executes
//! itself as a small `sandbox-exec` helper that enters fresh user, PID (with its own `/proc`),
//! mount and — without network access — network namespaces, applies Landlock and seccomp, and
//! runs the command under a PID 1 of its own code (which never execs, so the command cannot
//! clear its death signal): when the command ends, or when the helper is killed (timeout,
//! cancel), PID 1 ends and every process in the namespace dies with it, so a `setsid`
//! grandchild cannot outlive it. `danger-full-access` runs the command unconfined, in its own process group.
//! Either way the command runs under bash, started as `bash --noprofile --norc -c` — the shell
//! the gate's lexer models — never `/bin/sh` (dash on Debian reads `&>`, `[[ ]]`, `$'…'` and
//! aliases differently, which would hide commands from the gate).
//!
//! This module never decides whether a command may run (the gate does); it makes a decided
//! command run exactly as confined as the session's sandbox says, or not at all.

mod git;
pub mod helper;
mod output;
mod probe;
mod run;
mod seccomp;
mod spec;
mod trial;

pub use git::pin as pin_git;
pub use output::{CappedOutput, OUTPUT_CAP};
pub use probe::{BASH_LOCATIONS, bash_path, bash_path_once, probe};
pub use run::{RunError, RunOutcome, ShellRunner};
pub use spec::{BASH_ARGS, SYSTEM_READ, SandboxSpec};
pub use trial::confined_true;

/// The argument that turns the binary into the helper.
pub const HELPER_ARG: &str = "sandbox-exec";

/// The variable that gives the binary's allocator (jemalloc) options at its start. It never
/// reaches a child: the helper is this binary, and `background_thread:true` there would start
/// a thread before its `main`, which `unshare` then refuses, so every confined command would
/// fail.
pub const ALLOCATOR_OPTIONS_ENV: &str = "_RJEM_MALLOC_CONF";
