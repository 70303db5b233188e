//! Execute halves of the bookkeeping tools: todos and memory (per session, or per agent with
//! `memory = "agent"`), stored results, and the clock. All state lives in the store.

use crate::config::MemoryScope;
use crate::store::Store;
use crate::tools::ToolError;
use crate::tools::approved::{ApprovedCall, ToolOutput};
use crate::tools::exec::ExecContext;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

const TODO_TREE: &str = "todos";
const MEMORY_TREE: &str = "memory";
/// Bytes one `retrieve_tool_result` page returns by default, and at most.
const PAGE: usize = 16 * 1024;
const MAX_PAGE: usize = 64 * 1024;

/// Drops `session`'s todos and its session-scoped memory (an idle session being pruned; the
/// agent's own memory stays). Written with the caller's next flush.
pub fn forget_session(store: &dyn Store, session: &str) -> crate::store::Result<()> {
    store.delete(TODO_TREE, session.as_bytes())?;
    let prefix = format!("session\0{session}\0").into_bytes();
    for (key, _) in store.scan_prefix(MEMORY_TREE, &prefix)? {
        store.delete(MEMORY_TREE, &key)?;
    }
    Ok(())
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Todo {
    id: u64,
    text: String,
    done: bool,
}

fn store(ctx: &ExecContext) -> Result<&Arc<dyn Store>, String> {
    ctx.store
        .as_ref()
        .ok_or_else(|| "no store is available to this tool".to_string())
}

fn text_arg<'a>(call: &'a ApprovedCall, key: &str) -> Option<&'a str> {
    call.execute_args().get(key).and_then(Value::as_str)
}

fn load_todos(store: &dyn Store, session: &str) -> Result<Vec<Todo>, String> {
    match store
        .get(TODO_TREE, session.as_bytes())
        .map_err(|e| e.to_string())?
    {
        Some(bytes) => {
            serde_json::from_slice(&bytes).map_err(|e| format!("the todo list is unreadable: {e}"))
        }
        None => Ok(Vec::new()),
    }
}

fn render_todos(todos: &[Todo]) -> String {
    if todos.is_empty() {
        return "(no todos)".into();
    }
    todos
        .iter()
        .map(|t| format!("{}. [{}] {}", t.id, if t.done { "x" } else { " " }, t.text))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Todos a session keeps at most, and the longest a todo's text may be: the tools run
/// unasked, so without a bound a chat could have the model write the store full.
const MAX_TODOS: usize = 200;
const MAX_TODO_CHARS: usize = 2_000;

/// Memories one owner keeps at most, and the longest a key and a value may be (same reason).
const MAX_MEMORIES: usize = 500;
const MAX_MEMORY_KEY_BYTES: usize = 200;
const MAX_MEMORY_VALUE_BYTES: usize = 16 * 1024;

/// A todo's text, if it is not too long.
fn todo_text(text: &str) -> Result<&str, ToolError> {
    if text.chars().count() > MAX_TODO_CHARS {
        return Err(ToolError::Failed(format!(
            "a todo's text is at most {MAX_TODO_CHARS} characters; shorten it"
        )));
    }
    Ok(text)
}

/// `manage_todos` and `list_todos`.
pub(super) fn todos(
    tool: &str,
    call: &ApprovedCall,
    ctx: &ExecContext,
) -> Result<ToolOutput, ToolError> {
    let store = store(ctx)?;
    let mut todos = load_todos(store.as_ref(), &ctx.session)?;
    if tool == "list_todos" {
        return Ok(ToolOutput::ok(render_todos(&todos)));
    }
    let id = call.execute_args().get("id").and_then(Value::as_u64);
    let find = |todos: &mut Vec<Todo>| -> Result<usize, String> {
        let id = id.ok_or("`id` is required for this action")?;
        todos
            .iter()
            .position(|t| t.id == id)
            .ok_or_else(|| format!("no todo with id {id}"))
    };
    match text_arg(call, "action").unwrap_or_default() {
        "add" => {
            let text =
                todo_text(text_arg(call, "text").ok_or("`text` is required to add a todo")?)?;
            if todos.len() >= MAX_TODOS {
                return Err(ToolError::Failed(format!(
                    "this session already has {MAX_TODOS} todos, the most it may have: remove or clear some first"
                )));
            }
            let next = todos.iter().map(|t| t.id).max().unwrap_or(0) + 1;
            todos.push(Todo {
                id: next,
                text: text.into(),
                done: false,
            });
        }
        "update" => {
            let at = find(&mut todos)?;
            todos[at].text =
                todo_text(text_arg(call, "text").ok_or("`text` is required to update a todo")?)?
                    .into();
        }
        "complete" => {
            let at = find(&mut todos)?;
            todos[at].done = true;
        }
        "remove" => {
            let at = find(&mut todos)?;
            todos.remove(at);
        }
        "clear" => todos.clear(),
        other => return Err(ToolError::Failed(format!("unknown action `{other}`"))),
    }
    let bytes = serde_json::to_vec(&todos).map_err(|e| e.to_string())?;
    store
        .insert(TODO_TREE, ctx.session.as_bytes(), &bytes)
        .map_err(|e| e.to_string())?;
    Ok(ToolOutput::ok(render_todos(&todos)))
}

/// The memory namespace of this call: the session, or the agent with `memory = "agent"`.
fn memory_owner(ctx: &ExecContext, scope: MemoryScope) -> String {
    match scope {
        MemoryScope::Session => format!("session\0{}", ctx.session),
        MemoryScope::Agent => format!("agent\0{}", ctx.agent),
    }
}

/// `view_memory` and `manage_memory`.
pub(super) fn memory(
    tool: &str,
    call: &ApprovedCall,
    ctx: &ExecContext,
    scope: MemoryScope,
) -> Result<ToolOutput, ToolError> {
    let store = store(ctx)?;
    let owner = memory_owner(ctx, scope);
    let key_of = |key: &str| format!("{owner}\0{key}").into_bytes();
    if tool == "view_memory" {
        if let Some(key) = text_arg(call, "key") {
            return match store
                .get(MEMORY_TREE, &key_of(key))
                .map_err(|e| e.to_string())?
            {
                Some(v) => Ok(ToolOutput::ok(String::from_utf8_lossy(&v).into_owned())),
                None => Ok(ToolOutput::ok(format!("(nothing saved under `{key}`)"))),
            };
        }
        let prefix = format!("{owner}\0").into_bytes();
        let entries = store
            .scan_prefix(MEMORY_TREE, &prefix)
            .map_err(|e| e.to_string())?;
        if entries.is_empty() {
            return Ok(ToolOutput::ok("(memory is empty)"));
        }
        let lines: Vec<String> = entries
            .iter()
            .map(|(k, v)| {
                format!(
                    "{}: {}",
                    String::from_utf8_lossy(&k[prefix.len()..]),
                    String::from_utf8_lossy(v)
                )
            })
            .collect();
        return Ok(ToolOutput::ok(lines.join("\n")));
    }
    let key = text_arg(call, "key").ok_or("`key` is required")?;
    match text_arg(call, "action").unwrap_or_default() {
        "set" => {
            let value = text_arg(call, "value").ok_or("`value` is required to set a memory")?;
            if key.len() > MAX_MEMORY_KEY_BYTES || value.len() > MAX_MEMORY_VALUE_BYTES {
                return Err(ToolError::Failed(format!(
                    "a memory's key is at most {MAX_MEMORY_KEY_BYTES} bytes and its value {MAX_MEMORY_VALUE_BYTES}; shorten it"
                )));
            }
            let new_key = store
                .get(MEMORY_TREE, &key_of(key))
                .map_err(|e| e.to_string())?
                .is_none();
            if new_key
                && store
                    .scan_prefix(MEMORY_TREE, format!("{owner}\0").as_bytes())
                    .map_err(|e| e.to_string())?
                    .len()
                    >= MAX_MEMORIES
            {
                return Err(ToolError::Failed(format!(
                    "memory already holds {MAX_MEMORIES} entries, the most it may: delete some first"
                )));
            }
            store
                .insert(MEMORY_TREE, &key_of(key), value.as_bytes())
                .map_err(|e| e.to_string())?;
            Ok(ToolOutput::ok(format!("saved `{key}`")))
        }
        "delete" => {
            let existed = store
                .remove(MEMORY_TREE, &key_of(key))
                .map_err(|e| e.to_string())?
                .is_some();
            Ok(ToolOutput::ok(if existed {
                format!("deleted `{key}`")
            } else {
                format!("nothing was saved under `{key}`")
            }))
        }
        other => Err(ToolError::Failed(format!("unknown action `{other}`"))),
    }
}

/// `retrieve_tool_result`: pages through a stored result of this session only.
pub(super) fn retrieve(call: &ApprovedCall, ctx: &ExecContext) -> Result<ToolOutput, ToolError> {
    let store = store(ctx)?;
    let id = text_arg(call, "id").ok_or("`id` is required")?;
    // The id is the call's; the session is this call's own, never read from the id.
    let bytes = store
        .get(
            crate::tools::builtin::RESULTS_TREE,
            &crate::tools::builtin::result_key(&ctx.session, id),
        )
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no stored result `{id}` in this session"))?;
    let args = call.execute_args();
    let offset = args.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize;
    let limit = args
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(PAGE, |l| (l as usize).min(MAX_PAGE));
    if offset >= bytes.len() {
        return Ok(ToolOutput::ok(format!(
            "(end: the result has {} bytes)",
            bytes.len()
        )));
    }
    let end = (offset + limit).min(bytes.len());
    let mut text = String::from_utf8_lossy(&bytes[offset..end]).into_owned();
    let more = end < bytes.len();
    if more {
        text.push_str(&format!(
            "\n[… bytes {offset}–{end} of {}; continue with offset {end}]",
            bytes.len()
        ));
    }
    Ok(ToolOutput {
        text,
        is_error: false,
        truncated: more,
    })
}

/// `get_time`.
pub(super) fn time(call: &ApprovedCall) -> Result<ToolOutput, ToolError> {
    match text_arg(call, "timezone") {
        None | Some("UTC" | "utc" | "Etc/UTC") => Ok(ToolOutput::ok(crate::clock::now_rfc3339())),
        Some(other) => Err(ToolError::Failed(format!(
            "time zone `{other}` is not available (no time-zone database is bundled); the time in UTC is {}",
            crate::clock::now_rfc3339()
        ))),
    }
}

/// `context_info`: how much conversation there is, and what this session's calls run with.
pub(super) fn context_info(ctx: &ExecContext) -> ToolOutput {
    let conversation = ctx.context.as_ref().map_or_else(
        || "conversation: not available here".to_string(),
        |c| c.describe(&ctx.session),
    );
    ToolOutput::ok(format!(
        "{conversation}\nagent {}\nsession {}\nsandbox {}\nnetwork {}\nworkspace {}",
        ctx.agent,
        ctx.session,
        ctx.sandbox,
        if ctx.network_access { "on" } else { "off" },
        ctx.workspace.display()
    ))
}

/// `add_reminder`, `list_reminders`, `cancel_reminder`.
pub(super) fn reminders(
    tool: &str,
    call: &ApprovedCall,
    ctx: &ExecContext,
) -> Result<ToolOutput, ToolError> {
    use crate::clock::now_secs;
    use crate::reminders::{
        MAX_AHEAD_SECS, MAX_PENDING_PER_SESSION, Reminder, Reminders, parse_rfc3339,
    };
    let reminders = Reminders::new(store(ctx)?.clone());
    match tool {
        "add_reminder" => {
            let message = text_arg(call, "message").ok_or("`message` is required")?;
            let now = now_secs();
            let due = match (
                text_arg(call, "at"),
                call.execute_args().get("in_secs").and_then(Value::as_u64),
            ) {
                (Some(at), None) => parse_rfc3339(at).ok_or_else(|| {
                    format!("`at` ({at}) is not an RFC 3339 time like 2026-11-29T10:00:00Z")
                })?,
                (None, Some(secs)) => now.saturating_add(secs),
                _ => return Err("give exactly one of `at` (RFC 3339) or `in_secs`".into()),
            };
            if due < now {
                return Err("that time has passed; give a time in the future".into());
            }
            if due - now > MAX_AHEAD_SECS {
                return Err("reminders can be set at most a year ahead".into());
            }
            // Counted before the add: calls of one reply running at once may each pass, so a
            // session can end a few past the cap, never without bound.
            let waiting = reminders.pending(&ctx.session).map_err(|e| e.to_string())?;
            if waiting.len() >= MAX_PENDING_PER_SESSION {
                return Err(ToolError::Failed(format!(
                    "this session already has {} pending reminders, the most it may have: \
                     cancel one (cancel_reminder) before adding another",
                    waiting.len()
                )));
            }
            // The clock alone could repeat (two sessions in one tick, a clock stepped back),
            // and a second record under an id would replace the first, another session's.
            let nanos = crate::clock::now_nanos();
            let mut salt = [0u8; 4];
            getrandom::fill(&mut salt)
                .map_err(|e| ToolError::Failed(format!("no randomness for a reminder id: {e}")))?;
            let reminder = Reminder {
                id: format!("r{nanos:x}-{:08x}", u32::from_be_bytes(salt)),
                session: ctx.session.clone(),
                agent: ctx.agent.clone(),
                message: message.to_string(),
                due,
                created: crate::clock::now_rfc3339(),
                fired: false,
            };
            reminders.add(&reminder).map_err(|e| e.to_string())?;
            Ok(ToolOutput::ok(format!(
                "reminder {} set for {} seconds from now",
                reminder.id,
                due - now
            )))
        }
        "list_reminders" => {
            let now = now_secs();
            let list = reminders.pending(&ctx.session).map_err(|e| e.to_string())?;
            if list.is_empty() {
                return Ok(ToolOutput::ok("(no pending reminders)"));
            }
            let lines: Vec<String> = list
                .iter()
                .map(|r| {
                    format!(
                        "{}: in {}s — {}",
                        r.id,
                        r.due.saturating_sub(now),
                        r.message
                    )
                })
                .collect();
            Ok(ToolOutput::ok(lines.join("\n")))
        }
        _ => {
            let id = text_arg(call, "id").ok_or("`id` is required")?;
            if reminders
                .cancel(&ctx.session, id)
                .map_err(|e| e.to_string())?
            {
                Ok(ToolOutput::ok(format!("cancelled {id}")))
            } else {
                Err(ToolError::Failed(format!(
                    "no pending reminder `{id}` in this session"
                )))
            }
        }
    }
}
