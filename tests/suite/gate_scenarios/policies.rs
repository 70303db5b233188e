//! Rows for steps 4–11 of the resolution order: a tool's or the config's deny, pickers, modes
//! `always` and `high-risk`, the tool's override or policy, the config's allow/prompt, and
//! "always this tool" in the session.

use super::Row;
use super::Tweak::*;
use super::cmd;
use serde_json::json;

/// Steps 4–11, in order.
pub(super) fn rows() -> Vec<Row> {
    vec![
        // 4. the tool declares deny — even in high-risk mode
        Row {
            mode: "high-risk",
            sandbox: "danger-full-access",
            tool: "probe_deny",
            args: json!({}),
            tweaks: &[Config("probe_deny", "allow")],
            expect: ("deny", "tool", "tool-policy"),
        },
        // 5. the config denies — even in high-risk mode
        Row {
            mode: "high-risk",
            sandbox: "danger-full-access",
            tool: "write_file",
            args: json!({"path": "x", "content": ""}),
            tweaks: &[Config("write_file", "deny")],
            expect: ("deny", "user", "config-policy"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "probe_keyed",
            args: json!({}),
            tweaks: &[Config("shared_key", "deny")],
            expect: ("deny", "user", "config-policy"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "mcp_git_log",
            args: json!({}),
            tweaks: &[Config("mcp_git_log", "deny")],
            expect: ("deny", "user", "config-policy"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "probe_allow",
            args: json!({}),
            tweaks: &[Config("probe_allow", "deny")],
            expect: ("deny", "user", "config-policy"),
        },
        // 6. a picker prompts in every mode
        Row {
            mode: "high-risk",
            sandbox: "danger-full-access",
            tool: "probe_picker",
            args: json!({}),
            tweaks: &[],
            expect: ("prompt", "picker", "picker"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "probe_picker",
            args: json!({}),
            tweaks: &[Config("probe_picker", "allow")],
            expect: ("prompt", "picker", "picker"),
        },
        // 7. mode always
        Row {
            mode: "always",
            sandbox: "workspace-write",
            tool: "read_file",
            args: json!({"path": "notes.txt"}),
            tweaks: &[],
            expect: ("prompt", "mode", "policy-always"),
        },
        Row {
            mode: "always",
            sandbox: "workspace-write",
            tool: "read_file",
            args: json!({"path": "notes.txt"}),
            tweaks: &[Config("read_file", "allow"), ToolAllowed("read_file")],
            expect: ("prompt", "mode", "policy-always"),
        },
        // 8. mode high-risk: the tool's allow/prompt, else the config's, else allow
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "probe_prompt",
            args: json!({}),
            tweaks: &[],
            expect: ("prompt", "tool", "tool-policy"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "write_file",
            args: json!({"path": "x", "content": ""}),
            tweaks: &[Config("write_file", "prompt")],
            expect: ("prompt", "user", "config-policy"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "probe_prompt",
            args: json!({}),
            tweaks: &[Config("probe_prompt", "allow")],
            expect: ("prompt", "tool", "tool-policy"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "probe_override",
            args: json!({}),
            tweaks: &[],
            expect: ("allow", "mode", "mode-ceiling"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "write_file",
            args: json!({"path": "x", "content": ""}),
            tweaks: &[],
            expect: ("allow", "mode", "mode-ceiling"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("rm -rf ./build"),
            tweaks: &[],
            expect: ("allow", "mode", "mode-ceiling"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "mcp_fs_read",
            args: json!({}),
            tweaks: &[],
            expect: ("allow", "mode", "mode-ceiling"),
        },
        // 9. the tool's override or policy
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "probe_override",
            args: json!({}),
            tweaks: &[Config("probe_override", "allow")],
            expect: ("prompt", "tool", "tool-policy"),
        },
        Row {
            mode: "read-only",
            sandbox: "workspace-write",
            tool: "probe_override_allow",
            args: json!({}),
            tweaks: &[],
            expect: ("allow", "tool", "tool-policy"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "probe_allow",
            args: json!({}),
            tweaks: &[],
            expect: ("allow", "tool", "tool-policy"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "probe_prompt",
            args: json!({}),
            tweaks: &[ToolAllowed("probe_prompt")],
            expect: ("prompt", "tool", "tool-policy"),
        },
        // 10. the config's allow/prompt
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "write_file",
            args: json!({"path": "x", "content": ""}),
            tweaks: &[Config("write_file", "allow")],
            expect: ("allow", "user", "config-policy"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "read_file",
            args: json!({"path": "notes.txt"}),
            tweaks: &[Config("read_file", "prompt")],
            expect: ("prompt", "user", "config-policy"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("rm -rf ./build"),
            tweaks: &[Config("execute_command", "allow")],
            expect: ("allow", "user", "config-policy"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "read_file",
            args: json!({"path": "notes.txt"}),
            tweaks: &[Config("read_file", "prompt"), ToolAllowed("read_file")],
            expect: ("prompt", "user", "config-policy"),
        },
        // 11. "always this tool" in this session — never for an unknown-tier tool
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "write_file",
            args: json!({"path": "x", "content": ""}),
            tweaks: &[ToolAllowed("write_file")],
            expect: ("allow", "allowlist", "allowlist"),
        },
        Row {
            mode: "read-only",
            sandbox: "workspace-write",
            tool: "mcp_fs_read",
            args: json!({}),
            tweaks: &[ToolAllowed("mcp_fs_read")],
            expect: ("allow", "allowlist", "allowlist"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("ls -la"),
            tweaks: &[ToolAllowed("execute_command")],
            expect: ("prompt", "mode", "unknown-command"),
        },
    ]
}
