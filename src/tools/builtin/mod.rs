//! The built-in tools: each one's name, argument table, tier and what its arguments would touch.
//! Their execution arrives with the tools issue; the gate and `explain` decide for them now.

mod files;
mod media;
mod plain;
mod shell;
mod state;
pub use state::forget_session;
mod web;
mod web_reach;

use super::approved::{ApprovedCall, ToolOutput};
use super::args::{self, ArgSpec};
use super::exec::ExecContext;
use super::proposal::Proposal;
use super::tool::ToolFuture;
use super::tool::{ProposeContext, Tool, ToolError};
use crate::policy::declaration::Declaration;
use crate::policy::effect::Effect;
use crate::policy::shell::ShellAnalysis;
use crate::policy::tier::Tier;
use serde_json::{Map, Value};
use std::sync::Arc;

/// The store tree of large tool results (`retrieve_tool_result` pages through them).
pub const RESULTS_TREE: &str = "tool_results";

/// Stored results by when they were stored (`store::aged` keys), for retention.
pub const RESULTS_AGED_TREE: &str = "tool_results_aged";

/// Dates at `now` the stored results of a store written before they were dated.
pub fn date_undated_results(
    store: &dyn crate::store::Store,
    now: u64,
) -> Result<usize, crate::store::StoreError> {
    let keys = store
        .scan_prefix(RESULTS_TREE, b"")?
        .into_iter()
        .map(|(k, _)| (k, None));
    crate::store::aged::date_undated(store, RESULTS_AGED_TREE, keys, now)
}

/// Stores a large result under its session and call, dated for retention.
pub fn store_result(
    store: &dyn crate::store::Store,
    session: &str,
    call_id: &str,
    text: &str,
) -> Result<(), crate::store::StoreError> {
    let key = result_key(session, call_id);
    store.insert(
        RESULTS_AGED_TREE,
        &crate::store::aged::key(crate::clock::now_secs(), &key),
        b"",
    )?;
    store
        .insert(RESULTS_TREE, &key, text.as_bytes())
        .map(|_| ())
}

/// Deletes the results stored before `before` (seconds); how many.
pub fn prune_results(
    store: &dyn crate::store::Store,
    before: u64,
) -> Result<usize, crate::store::StoreError> {
    crate::store::aged::prune(store, RESULTS_AGED_TREE, RESULTS_TREE, before)
}

/// The store key of a stored result: the session and the call id as separate parts (session
/// keys contain `:` themselves, so no `:`-joined id could be split back unambiguously; NUL
/// never appears in either). A session can only ever name its own results.
#[must_use]
pub fn result_key(session: &str, call_id: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(session.len() + 1 + call_id.len());
    key.extend_from_slice(session.as_bytes());
    key.push(0);
    key.extend_from_slice(call_id.as_bytes());
    key
}

/// Every built-in tool's name (the config's vocabulary: a `tools` list is checked against it).
pub use crate::config::BUILTIN_TOOLS;

/// What a built-in tool's arguments would do.
#[derive(Debug, Default)]
pub struct Plan {
    pub message: String,
    pub preview: Option<String>,
    pub effects: Vec<Effect>,
    /// A tier computed from the arguments (`http_request`), instead of the tool's own.
    pub tier: Option<Tier>,
    pub shell: Option<ShellAnalysis>,
    /// The arguments the execute half runs with, when they differ from the call's (a write
    /// carries the fingerprint of the file its preview was made from).
    pub execute_args: Option<Value>,
    /// Choices for a human to pick from (a picker prompts in every mode).
    pub options: Option<Vec<String>>,
}

type PlanFn = fn(&Map<String, Value>, &ProposeContext) -> Result<Plan, ToolError>;

/// A built-in tool's declaration.
pub struct Builtin {
    pub name: &'static str,
    pub description: &'static str,
    pub args: &'static [ArgSpec],
    pub tier: Tier,
    pub long_running: bool,
    plan: PlanFn,
}

impl Tool for Builtin {
    fn name(&self) -> &str {
        self.name
    }

    fn description(&self) -> &str {
        self.description
    }

    fn parameters(&self) -> Value {
        args::schema(self.args)
    }

    fn long_running(&self) -> bool {
        self.long_running
    }

    fn proposes_slowly(&self) -> bool {
        // Their preview reads the file and diffs it (bounded by a deadline, still blocking).
        matches!(self.name, "write_file" | "edit_file")
    }

    fn execute<'a>(&'a self, call: &'a ApprovedCall, ctx: &'a ExecContext) -> ToolFuture<'a> {
        Box::pin(async move {
            match self.name {
                "read_file" | "write_file" | "edit_file" | "ls" | "find" | "grep" | "mkdir"
                | "rm" | "mv" | "cp" => {
                    let (name, call, ctx) = (self.name, call.clone(), ctx.clone());
                    // The call's clock runs while it waits for a thread: `find` and `grep`
                    // stop by the executor's timeout, counted from here.
                    let started = std::time::Instant::now();
                    crate::tools::blocking::run_blocking(move || {
                        super::fs::execute_file_tool(name, &call, &ctx, started)
                    })
                    .await
                    .unwrap_or_else(ToolOutput::error)
                }
                "execute_command" => shell::execute(call, ctx).await,
                "analyze_media" => media::execute(call, ctx).await,
                "web_fetch" | "http_request" => web::execute(self.name, call, ctx).await,
                "ask_user_question" => {
                    let args = call.execute_args();
                    let question = args
                        .get("question")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let choices: Vec<String> = args
                        .get("choices")
                        .and_then(Value::as_array)
                        .map(|c| {
                            c.iter()
                                .filter_map(Value::as_str)
                                .map(str::to_string)
                                .collect()
                        })
                        .unwrap_or_default();
                    let asked = ctx
                        .approver
                        .as_ref()
                        .and_then(|a| a.ask_question(&ctx.session, question, &choices));
                    match asked {
                        None => ToolOutput::error(
                            "nobody can answer a question here (an unattended run, a subagent or a reminder); decide without asking, or say what you need in your answer",
                        ),
                        // `/stop` ends the wait (the question's card is withdrawn when its
                        // future is dropped).
                        Some(answer) => tokio::select! {
                            answer = answer => match answer {
                                Some(text) => ToolOutput::ok(text),
                                None => ToolOutput::error("the question was not answered"),
                            },
                            () = ctx.cancel.cancelled() => ToolOutput::error(
                                "the run was stopped before the question was answered",
                            ),
                        },
                    }
                }
                "summarize_context" => {
                    let Some(host) = &ctx.context else {
                        return ToolOutput::error("there is no conversation to summarize here");
                    };
                    let focus = call.execute_args().get("focus").and_then(Value::as_str);
                    match host.summarize(&ctx.session, focus).await {
                        Ok(done) => ToolOutput::ok(done),
                        Err(e) => ToolOutput::error(format!("summarizing failed: {e}")),
                    }
                }
                "spawn_subagent" => {
                    let Some(host) = &ctx.subagents else {
                        return ToolOutput::error(
                            "subagents cannot be started here (a subagent cannot start another)",
                        );
                    };
                    let args = call.execute_args();
                    let task = args.get("task").and_then(Value::as_str).unwrap_or_default();
                    let tools = args.get("tools").and_then(Value::as_array).map(|list| {
                        list.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    });
                    match host.spawn(task, tools, ctx.cancel.child_token()).await {
                        Ok(answer) => ToolOutput::ok(answer),
                        Err(e) => ToolOutput::error(format!("the subagent failed: {e}")),
                    }
                }
                "manage_todos"
                | "list_todos"
                | "view_memory"
                | "manage_memory"
                | "add_reminder"
                | "list_reminders"
                | "cancel_reminder"
                | "retrieve_tool_result"
                | "get_time"
                | "context_info" => {
                    let (name, call, ctx) = (self.name, call.clone(), ctx.clone());
                    crate::tools::blocking::run_blocking(move || {
                        let outcome = match name {
                            "manage_todos" | "list_todos" => state::todos(name, &call, &ctx),
                            "view_memory" | "manage_memory" => {
                                state::memory(name, &call, &ctx, ctx.memory)
                            }
                            "retrieve_tool_result" => state::retrieve(&call, &ctx),
                            "get_time" => state::time(&call),
                            "add_reminder" | "list_reminders" | "cancel_reminder" => {
                                state::reminders(name, &call, &ctx)
                            }
                            _ => Ok(state::context_info(&ctx)),
                        };
                        outcome.unwrap_or_else(|e| ToolOutput::error(e.to_string()))
                    })
                    .await
                    .unwrap_or_else(ToolOutput::error)
                }
                other => ToolOutput::error(format!(
                    "`{other}` cannot run in this build yet: its execute half is not implemented"
                )),
            }
        })
    }

    fn propose(&self, raw: &Value, ctx: &ProposeContext) -> Result<Proposal, ToolError> {
        let map = args::validate(raw, self.args)?;
        let plan = (self.plan)(map, ctx)?;
        Ok(Proposal {
            tool: self.name.to_string(),
            message: if plan.message.is_empty() {
                self.name.to_string()
            } else {
                plan.message
            },
            preview: plan.preview,
            effects: plan.effects,
            declaration: Declaration::tier(plan.tier.unwrap_or(self.tier)),
            execute_tool: self.name.to_string(),
            execute_args: plan.execute_args.unwrap_or_else(|| raw.clone()),
            options: plan.options,
            shell: plan.shell.map(Arc::new),
            mcp: None,
        })
    }
}

/// All built-in tools.
#[must_use]
pub fn all() -> Vec<Builtin> {
    let mut tools = Vec::new();
    tools.extend(files::tools());
    tools.extend(shell::tools());
    tools.extend(web::tools());
    tools.extend(plain::tools());
    tools.extend(media::tools());
    tools
}

#[cfg(test)]
mod tests {
    use super::*;

    fn propose(tool: &str, args: Value) -> Result<Proposal, ToolError> {
        let tools = all();
        let tool = tools.iter().find(|t| t.name == tool).unwrap();
        Tool::propose(
            tool,
            &args,
            &ProposeContext::for_tests(std::path::Path::new("/nonexistent/ws")),
        )
    }

    /// A command's timeout is bounded: one past a day, or past what fits the deadline
    /// arithmetic (`u64::MAX` once overflowed the executor's margin), is refused.
    #[test]
    fn a_commands_timeout_is_between_a_second_and_a_day() {
        let with = |t: Value| {
            propose(
                "execute_command",
                serde_json::json!({"command": "ls", "timeout_secs": t}),
            )
        };
        assert!(with(1.into()).is_ok());
        // Providers send `null` for an optional argument they leave out: the default.
        assert!(with(Value::Null).is_ok());
        assert!(with(shell::MAX_TIMEOUT_SECS.into()).is_ok());
        for refused in [
            Value::from(0),
            Value::from(-5),
            Value::from(shell::MAX_TIMEOUT_SECS + 1),
            Value::from(u64::MAX),
        ] {
            let e = with(refused.clone()).unwrap_err();
            assert!(
                e.to_string().contains("between 1 and 86400"),
                "{refused}: {e}"
            );
        }
    }

    #[test]
    fn every_listed_tool_exists_once_with_design_tiers() {
        let tools = all();
        let names: Vec<&str> = tools.iter().map(|t| t.name).collect();
        let mut sorted_names = names.clone();
        sorted_names.sort_unstable();
        let mut listed = BUILTIN_TOOLS.to_vec();
        listed.sort_unstable();
        assert_eq!(sorted_names, listed);
        let tier = |n: &str| tools.iter().find(|t| t.name == n).map(|t| t.tier);
        for n in [
            "read_file",
            "ls",
            "find",
            "grep",
            "web_fetch",
            "get_time",
            "context_info",
            "retrieve_tool_result",
            "list_todos",
            "view_memory",
            "list_reminders",
            "ask_user_question",
        ] {
            assert_eq!(tier(n), Some(Tier::ReadOnly), "{n}");
        }
        for n in [
            "manage_todos",
            "manage_memory",
            "add_reminder",
            "cancel_reminder",
            "mkdir",
            "summarize_context",
        ] {
            assert_eq!(tier(n), Some(Tier::LowRisk), "{n}");
        }
        for n in [
            "write_file",
            "edit_file",
            "rm",
            "mv",
            "cp",
            "http_request",
            "spawn_subagent",
        ] {
            assert_eq!(tier(n), Some(Tier::HighRisk), "{n}");
        }
        assert_eq!(tier("execute_command"), Some(Tier::Unknown));
    }
}
