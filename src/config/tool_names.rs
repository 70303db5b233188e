//! The names of the built-in tools: part of the configuration's vocabulary (`tools`,
//! `denied_tools` and `tool_approval` keys are checked against them), so they live here and
//! the tools module takes them from the config, not the other way round.

/// Every built-in tool's name, in design.md's order.
pub const BUILTIN_TOOLS: &[&str] = &[
    "read_file",
    "write_file",
    "edit_file",
    "ls",
    "find",
    "grep",
    "mkdir",
    "rm",
    "mv",
    "cp",
    "execute_command",
    "web_fetch",
    "http_request",
    "manage_todos",
    "list_todos",
    "view_memory",
    "manage_memory",
    "add_reminder",
    "list_reminders",
    "cancel_reminder",
    "context_info",
    "get_time",
    "retrieve_tool_result",
    "summarize_context",
    "spawn_subagent",
    "ask_user_question",
    "analyze_media",
];
