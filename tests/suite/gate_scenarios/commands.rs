//! Rows for step 12 of the resolution order: an unknown command — the pre-check, the command
//! allowlist, the classifier; code hidden from a saved prefix key; commands too complex to
//! judge; a machine without bash.

use super::Tweak::*;
use super::{Row, cmd};

/// Step 12, in order.
pub(super) fn rows() -> Vec<Row> {
    vec![
        // 12. an unknown command: the pre-check, the command allowlist, the classifier
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("rm -rf ./build"),
            tweaks: &[],
            expect: ("prompt", "mode", "destructive-effect"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("git status > out.txt"),
            tweaks: &[CommandAllowed("git status")],
            expect: ("prompt", "mode", "destructive-effect"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("git status --short"),
            tweaks: &[CommandAllowed("git status")],
            expect: ("allow", "allowlist", "allowlist"),
        },
        // A saved prefix key never covers an argument that runs code, nor code hidden behind
        // options or a prefix variable; the pre-check decides them, not the classifier.
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("git pull --upload-pack='touch pwned' origin"),
            tweaks: &[CommandAllowed("git pull")],
            expect: ("prompt", "mode", "destructive-effect"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("git -c core.pager='sh -c id' log"),
            tweaks: &[CommandAllowed("git log")],
            expect: ("prompt", "mode", "destructive-effect"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("GIT_PAGER='sh -c id' git log"),
            tweaks: &[CommandAllowed("git log")],
            expect: ("prompt", "mode", "destructive-effect"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("python3 -W ignore -c 'import os'"),
            tweaks: &[],
            expect: ("prompt", "mode", "destructive-effect"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("find . -name x -fprint out.txt"),
            tweaks: &[],
            expect: ("prompt", "mode", "destructive-effect"),
        },
        // Too complex to judge: denied in every mode, whatever is allowed.
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd(&format!("echo {}x{}", "$(".repeat(60), ")".repeat(60))),
            tweaks: &[Config("execute_command", "allow")],
            expect: ("deny", "denylist", "too-complex"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd(&format!("{}rm -rf /", "eval ".repeat(60))),
            tweaks: &[],
            expect: ("deny", "denylist", "too-complex"),
        },
        Row {
            mode: "low-risk",
            sandbox: "danger-full-access",
            tool: "execute_command",
            args: cmd(&format!("echo {}", "a".repeat(70_000))),
            tweaks: &[],
            expect: ("deny", "denylist", "too-complex"),
        },
        // No bash: the shell tool is unavailable, in every mode.
        Row {
            mode: "high-risk",
            sandbox: "danger-full-access",
            tool: "execute_command",
            args: cmd("ls"),
            tweaks: &[NoBash],
            expect: ("deny", "sandbox", "sandbox-unavailable"),
        },
        Row {
            mode: "read-only",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("rm old.log"),
            tweaks: &[CommandAllowed("=rm old.log")],
            expect: ("allow", "allowlist", "allowlist"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("rm old.log new.log"),
            tweaks: &[CommandAllowed("=rm old.log")],
            expect: ("prompt", "mode", "unknown-command"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("git push"),
            tweaks: &[CommandAllowed("git status")],
            expect: ("prompt", "mode", "unknown-command"),
        },
    ]
}
