//! `execute_command`: the command is lexed and judged when proposed; its tier is `unknown` until
//! the pre-check, an allowlisted key or the classifier places it.

use super::{Builtin, Plan};
use crate::policy::shell::ShellAnalysis;
use crate::policy::tier::Tier;
use crate::tools::args::{ArgKind, optional, required, string};
use crate::tools::tool::ToolError;

/// Commands longer than this are refused before lexing: no real command needs it, and the
/// lexer's work stays bounded.
const MAX_COMMAND_BYTES: usize = 64 * 1024;

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
                    "Timeout in seconds (default 180)",
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
            if command.len() > MAX_COMMAND_BYTES {
                return Err(ToolError::InvalidArguments(format!(
                    "`command` is {} bytes; the limit is {MAX_COMMAND_BYTES}",
                    command.len()
                )));
            }
            if command.contains('\0') {
                return Err(ToolError::InvalidArguments(
                    "`command` contains a NUL byte".into(),
                ));
            }
            if let Some(t) = args.get("timeout_secs").and_then(serde_json::Value::as_i64)
                && t <= 0
            {
                return Err(ToolError::InvalidArguments(
                    "`timeout_secs` must be positive".into(),
                ));
            }
            Ok(Plan {
                message: format!("run `{command}`"),
                preview: Some(command.to_string()),
                shell: Some(ShellAnalysis::new(command, &ctx.prefix_binaries)),
                ..Plan::default()
            })
        },
    }]
}
