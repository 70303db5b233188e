//! Tools with no file or network effect: todos, memory, reminders, context, subagents, questions.
//! Their tier alone decides.

use super::{Builtin, Plan};
use crate::policy::tier::Tier;
use crate::tools::args::{ArgKind, ArgSpec, optional, required};

fn plain(
    name: &'static str,
    description: &'static str,
    args: &'static [ArgSpec],
    tier: Tier,
) -> Builtin {
    Builtin {
        name,
        description,
        args,
        tier,
        long_running: name == "ask_user_question",
        plan: |_, _| {
            Ok(Plan {
                message: String::new(),
                ..Plan::default()
            })
        },
    }
}

pub(super) fn tools() -> Vec<Builtin> {
    use ArgKind::{Array, Integer, OneOf, String as S};
    let mut tools = vec![
        plain(
            "manage_todos",
            "Add, update, complete or remove todo items.",
            const {
                &[
                    required(
                        "action",
                        OneOf(&["add", "update", "complete", "remove", "clear"]),
                        "What to do",
                    ),
                    optional("id", Integer, "The item's id (update, complete, remove)"),
                    optional("text", S, "The item's text (add, update)"),
                ]
            },
            Tier::LowRisk,
        ),
        plain(
            "list_todos",
            "List the session's todo items.",
            &[],
            Tier::ReadOnly,
        ),
        plain(
            "view_memory",
            "Read saved memory (one key, or all).",
            const { &[optional("key", S, "The key to read")] },
            Tier::ReadOnly,
        ),
        plain(
            "manage_memory",
            "Save or delete a memory entry.",
            const {
                &[
                    required("action", OneOf(&["set", "delete"]), "What to do"),
                    required("key", S, "The entry's key"),
                    optional("value", S, "The value to save (set)"),
                ]
            },
            Tier::LowRisk,
        ),
        plain(
            "add_reminder",
            "Schedule a message into this session later.",
            const {
                &[
                    required("message", S, "What to remind about"),
                    optional("at", S, "When, as RFC 3339"),
                    optional("in_secs", Integer, "Or: in how many seconds"),
                ]
            },
            Tier::LowRisk,
        ),
        plain(
            "list_reminders",
            "List this session's pending reminders.",
            &[],
            Tier::ReadOnly,
        ),
        plain(
            "cancel_reminder",
            "Cancel a pending reminder.",
            const { &[required("id", S, "The reminder's id")] },
            Tier::LowRisk,
        ),
        plain(
            "context_info",
            "How much of the context window is in use.",
            &[],
            Tier::ReadOnly,
        ),
        plain(
            "get_time",
            "The current date and time.",
            const { &[optional("timezone", S, "An IANA time zone (default UTC)")] },
            Tier::ReadOnly,
        ),
        plain(
            "retrieve_tool_result",
            "Page through a stored large tool result.",
            const {
                &[
                    required("id", S, "The stored result's id"),
                    optional("offset", Integer, "Byte offset"),
                    optional("limit", Integer, "Bytes to return"),
                ]
            },
            Tier::ReadOnly,
        ),
        plain(
            "summarize_context",
            "Summarize the conversation so far to free context.",
            const { &[optional("focus", S, "What the summary should keep")] },
            Tier::LowRisk,
        ),
        Builtin {
            // Approving it is the authorization for everything the subagent then runs
            // unasked: the card shows the task whole and the tools it would get.
            plan: |args, _| {
                let task = crate::tools::args::string(args, "task").unwrap_or_default();
                // Read as the execute half reads it: a list of names (others dropped); none
                // given means the parent's own toolset, less what a subagent never gets.
                // Each named once (as the execute half's set has them): a list padded with
                // repeats must not push a tool past where the card is cut.
                let tools: Option<Vec<&str>> =
                    args.get("tools").and_then(|t| t.as_array()).map(|list| {
                        list.iter()
                            .filter_map(|t| t.as_str())
                            .collect::<std::collections::BTreeSet<_>>()
                            .into_iter()
                            .collect()
                    });
                let with = match tools {
                    None => "all of this agent's tools but spawn_subagent and the reminder tools"
                        .to_string(),
                    Some(tools) if tools.is_empty() => "no tools".to_string(),
                    Some(tools) => tools.join(", "),
                };
                Ok(Plan {
                    message: format!(
                        "spawn a subagent that runs in mode high-risk (unasked) with: {with}; its task:"
                    ),
                    preview: Some(task.to_string()),
                    ..Plan::default()
                })
            },
            ..plain(
                "spawn_subagent",
                "Run a subagent on a task (headless, within this sandbox).",
                const {
                    &[
                        required("task", S, "The task"),
                        optional("tools", Array, "Tools it may use (a subset of yours)"),
                    ]
                },
                Tier::HighRisk,
            )
        },
    ];
    tools.push(plain(
        "ask_user_question",
        "Ask the requester a question and wait for the answer.",
        const {
            &[
                required("question", S, "The question"),
                optional("choices", Array, "Suggested answers"),
            ]
        },
        Tier::ReadOnly,
    ));
    tools
}
