//! `execute_command`: the command is lexed and judged when proposed; its tier is `unknown` until
//! the pre-check, an allowlisted key or the classifier places it.

use super::{Builtin, Plan};
use crate::policy::mode::SandboxPolicy;
use crate::policy::shell::ShellAnalysis;
use crate::policy::tier::Tier;
use crate::sandbox::SandboxSpec;
use crate::tools::approved::{ApprovedCall, ToolOutput};
use crate::tools::args::{ArgKind, optional, required, string};
use crate::tools::exec::ExecContext;
use crate::tools::tool::ToolError;
use std::path::PathBuf;
use std::time::Duration;

/// The longest timeout a call may ask for.
pub const MAX_TIMEOUT_SECS: u64 = 24 * 60 * 60;

pub(super) fn tools() -> Vec<Builtin> {
    vec![Builtin {
        name: "execute_command",
        description: "Run a shell command in the session's workspace (sandboxed).",
        args: const {
            &[
                required("command", ArgKind::String, "The shell command line"),
                optional(
                    "timeout_secs",
                    ArgKind::Integer,
                    "Timeout in seconds (default 180, at most 86400)",
                ),
            ]
        },
        tier: Tier::Unknown,
        long_running: false,
        plan: |args, ctx| {
            let command = string(args, "command").unwrap_or_default();
            if command.trim().is_empty() {
                return Err(ToolError::InvalidArguments("`command` is empty".into()));
            }
            if command.contains('\0') {
                return Err(ToolError::InvalidArguments(
                    "`command` contains a NUL byte".into(),
                ));
            }
            // Bounded (design: "Bounded"): a timeout past a day, or past what the integer
            // reader takes, would leave a command running unbounded (or overflow the deadline).
            let asked_timeout = args.get("timeout_secs").filter(|t| !t.is_null());
            if let Some(t) = asked_timeout
                && !t
                    .as_u64()
                    .is_some_and(|t| (1..=MAX_TIMEOUT_SECS).contains(&t))
            {
                return Err(ToolError::InvalidArguments(format!(
                    "`timeout_secs` must be between 1 and {MAX_TIMEOUT_SECS} (a day), not {t}"
                )));
            }
            let timeout = asked_timeout
                .map(|t| format!(" (timeout {t} s)"))
                .unwrap_or_default();
            Ok(Plan {
                message: format!("run `{command}`{timeout}"),
                preview: Some(command.to_string()),
                shell: Some(ShellAnalysis::new(command, &ctx.prefix_binaries)),
                ..Plan::default()
            })
        },
    }]
}

/// Runs an approved command under the sandbox current when it starts.
pub(super) async fn execute(call: &ApprovedCall, ctx: &ExecContext) -> ToolOutput {
    let args = call.execute_args();
    let Some(command) = args.get("command").and_then(serde_json::Value::as_str) else {
        return ToolOutput::error("`command` is missing");
    };
    let timeout = args
        .get("timeout_secs")
        .and_then(serde_json::Value::as_u64)
        .map_or(ctx.default_timeout, Duration::from_secs);
    let spec = SandboxSpec {
        sandbox: ctx.sandbox,
        workspace: ctx.workspace.clone(),
        writable_roots: ctx.roots.writable.clone(),
        readable_roots: ctx.roots.readable.clone(),
        tmpdir: PathBuf::new(),
        setup_errors: PathBuf::new(),
        network: ctx.network_access || ctx.sandbox == SandboxPolicy::DangerFullAccess,
        shell: PathBuf::new(),
        trust_git_config: ctx.trust_git_config,
    };
    let outcome = ctx
        .runner
        .run(
            command,
            &spec,
            &ctx.child_env,
            timeout,
            ctx.cancel.cancelled(),
        )
        .await;
    match outcome {
        Err(e) => ToolOutput::error(e.to_string()),
        Ok(run) => {
            let status = if run.timed_out {
                format!(
                    "timed out after {}s; the command and everything it started were killed",
                    timeout.as_secs()
                )
            } else if run.cancelled {
                "cancelled; the command and everything it started were killed".to_string()
            } else {
                format!("exit code {}", run.exit_code.unwrap_or(-1))
            };
            let mut text = status;
            if !run.stdout.bytes.is_empty() || run.stdout.truncated() {
                text.push_str("\n--- stdout ---\n");
                text.push_str(&run.stdout.text());
            }
            if !run.stderr.bytes.is_empty() || run.stderr.truncated() {
                text.push_str("\n--- stderr ---\n");
                text.push_str(&run.stderr.text());
            }
            // After a kill the status line says what became of its processes.
            if !run.timed_out && !run.cancelled && (run.stdout.left_open || run.stderr.left_open) {
                text.push_str(
                    "\n[a process the command left running still held its output, which is no \
                     longer read (its next write may fail): start such a process with its output \
                     redirected, e.g. `server > server.log 2>&1 &`]",
                );
            }
            ToolOutput {
                text,
                is_error: run.exit_code != Some(0),
                truncated: run.stdout.truncated() || run.stderr.truncated(),
            }
        }
    }
}
