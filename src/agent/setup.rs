//! Assembling an agent's runtime from the config: its provider, classifier, executor and
//! runner, over a store. The CLI surfaces (`run`, and later `chat` and `serve`) use this so they
//! cannot assemble the gate differently.

use super::classifier::{ModelClassifier, Surface};
use super::error::SetupError;
use super::llm::{AnthropicProvider, LlmProvider, OpenAiProvider, Usage};
use super::runner::AgentRunner;
use super::runs::{RunJournal, RunStore};
use crate::config::{Config, ProviderKind};
use crate::events::{EventSink, StoreEvents};
use crate::executor::approval::Approver;
use crate::executor::session::{SessionPolicy, Snapshot};
use crate::executor::{Classifier, Executor};
use crate::policy::mode::Dials;
use crate::policy::sandbox::SandboxSupport;
use crate::sandbox::ShellRunner;
use crate::store::{Allowlists, Store};
use crate::tools::{ToolRegistry, Toolset};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The tollgate binary that confines commands and MCP servers: this one, unless
/// `TOLLGATE_SANDBOX_HELPER` names another (the tests, whose own binary is not tollgate).
#[must_use]
pub fn helper_binary() -> std::path::PathBuf {
    std::env::var_os("TOLLGATE_SANDBOX_HELPER")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::current_exe().ok())
        .unwrap_or_else(|| std::path::PathBuf::from("tollgate"))
}

/// The model endpoint an agent's provider names.
pub fn provider_for(config: &Config, agent: &str) -> Result<Arc<dyn LlmProvider>, SetupError> {
    let agent_config = config
        .agents
        .get(agent)
        .ok_or_else(|| SetupError::UnknownAgent(agent.to_string()))?;
    let provider = config
        .providers
        .get(&agent_config.provider)
        .ok_or_else(|| SetupError::UnknownProvider {
            agent: agent.to_string(),
            provider: agent_config.provider.clone(),
        })?;
    let key = provider
        .api_key_env
        .as_ref()
        .and_then(|name| std::env::var(name).ok());
    match provider.kind {
        ProviderKind::Openai => {
            let client = OpenAiProvider::new(
                &provider.base_url,
                key,
                Duration::from_secs(provider.timeout_secs),
                provider.max_retries,
            )
            .map_err(|e| SetupError::Provider(e.message))?;
            Ok(Arc::new(client))
        }
        ProviderKind::Anthropic => {
            let client = AnthropicProvider::new(
                &provider.base_url,
                key,
                Duration::from_secs(provider.timeout_secs),
                provider.max_retries,
                agent_config.max_tokens,
            )
            .map_err(|e| SetupError::Provider(e.message))?;
            Ok(Arc::new(client))
        }
    }
}

/// An agent's assembled runtime for one session.
pub struct Assembled {
    pub runner: AgentRunner,
    pub session: Arc<SessionPolicy>,
    pub events: Arc<dyn EventSink>,
    /// The session's user messages, which the classifier may see on the console.
    pub user_messages: Arc<Mutex<Vec<String>>>,
}

/// Assembles agent `agent` for session `session` on `surface`, answered by `approver`.
pub fn assemble(
    config: &Arc<Config>,
    agent: &str,
    session: &str,
    surface: Surface,
    store: Arc<dyn Store>,
    approver: Arc<dyn Approver>,
) -> Result<Assembled, SetupError> {
    assemble_watched(config, agent, session, surface, store, approver, None)
}

/// What every session of one agent can share: the model client (its connection pool and TLS
/// roots are the bulk of a session's memory otherwise), the built-in tools, the kernel's
/// sandbox support, the leak guard, and the agent's MCP servers (started on first use, then one
/// process per server for all its sessions).
#[derive(Clone)]
pub struct AgentParts {
    pub provider: Arc<dyn LlmProvider>,
    pub registry: Arc<ToolRegistry>,
    pub toolset: Toolset,
    /// What a reminder's run is offered: the toolset without `add_reminder`. A reminder that
    /// could add reminders would feed itself: each run adding more due at once, model calls
    /// without end, and the per-session cap counts only reminders not yet fired.
    pub reminder_toolset: Toolset,
    pub support: SandboxSupport,
    pub redactor: crate::policy::redact::Redactor,
    pub mcp: Option<Arc<crate::tools::mcp::client::McpServers>>,
    /// The tool definitions offered to the model, made once for all the agent's sessions.
    pub definitions: Arc<crate::tools::DefinitionsCache>,
    /// One HTTP client for the agent's companion models.
    pub companion_client: reqwest::Client,
    /// The sandbox helper ([`helper_binary`]), found once: every session's shell runs it.
    pub helper: std::path::PathBuf,
}

impl AgentParts {
    /// These parts as a reminder's run gets them: without `add_reminder`.
    #[must_use]
    pub fn for_reminders(&self) -> AgentParts {
        AgentParts {
            toolset: self.reminder_toolset.clone(),
            ..self.clone()
        }
    }

    pub fn new(config: &Arc<Config>, agent: &str) -> Result<Self, SetupError> {
        let agent_config = config
            .agents
            .get(agent)
            .ok_or_else(|| SetupError::UnknownAgent(agent.to_string()))?;
        Ok(AgentParts {
            provider: provider_for(config, agent)?,
            registry: Arc::new(ToolRegistry::builtin()),
            toolset: Toolset::for_agent(agent_config, std::iter::empty()),
            reminder_toolset: Toolset::from_names(
                Toolset::for_agent(agent_config, std::iter::empty())
                    .iter()
                    .filter(|t| *t != "add_reminder"),
            ),
            support: crate::sandbox::probe(),
            redactor: crate::policy::redact::Redactor::from_env_names(
                crate::policy::env::configured_secret_names(config),
            ),
            mcp: (!agent_config.mcp.is_empty()).then(|| {
                Arc::new(crate::tools::mcp::client::McpServers::new(
                    config.clone(),
                    agent,
                    helper_binary(),
                ))
            }),
            definitions: Arc::default(),
            companion_client: crate::agent::llm::retry::http_client(Duration::from_secs(
                crate::config::defaults::request_timeout_secs(),
            ))
            .map_err(|e| SetupError::Provider(e.message))?,
            helper: helper_binary(),
        })
    }
}

/// [`assemble`], with every event also shown to `watcher` (a chat's progress message).
pub fn assemble_watched(
    config: &Arc<Config>,
    agent: &str,
    session: &str,
    surface: Surface,
    store: Arc<dyn Store>,
    approver: Arc<dyn Approver>,
    watcher: Option<Arc<dyn EventSink>>,
) -> Result<Assembled, SetupError> {
    let parts = AgentParts::new(config, agent)?;
    let runs = RunStore::new(store.clone());
    assemble_with(
        &parts, config, agent, session, surface, store, runs, approver, watcher,
    )
}

/// Assembles a session from an agent's shared parts. Its runner and `summarize_context` keep
/// the session's runs and transcript in `runs`: runners of one session at once share one, as a
/// store keeping the transcript ([`RunStore::keeping_transcript`]) must see every write to it.
#[allow(clippy::too_many_arguments)]
pub fn assemble_with(
    parts: &AgentParts,
    config: &Arc<Config>,
    agent: &str,
    session: &str,
    surface: Surface,
    store: Arc<dyn Store>,
    runs: RunStore,
    approver: Arc<dyn Approver>,
    watcher: Option<Arc<dyn EventSink>>,
) -> Result<Assembled, SetupError> {
    let agent_config = config
        .agents
        .get(agent)
        .ok_or_else(|| SetupError::UnknownAgent(agent.to_string()))?;
    let provider = parts.provider.clone();
    let journal = Arc::new(RunJournal::new(runs.clone()));
    let audit: Arc<dyn EventSink> = Arc::new(crate::metrics::events::MeteredEvents {
        agent: agent.to_string(),
        inner: Arc::new(StoreEvents::new(store.clone(), Some(journal.clone()))),
    });
    let events: Arc<dyn EventSink> = match watcher {
        Some(watcher) => Arc::new(crate::events::TeeEvents { audit, watcher }),
        None => audit,
    };
    let classifier_usage = Arc::new(Mutex::new(Usage::default()));
    let user_messages: Arc<Mutex<Vec<String>>> = Arc::default();
    let classifier: Arc<dyn Classifier> = Arc::new(ModelClassifier {
        provider: provider.clone(),
        model: agent_config
            .classifier_model
            .clone()
            .unwrap_or_else(|| agent_config.model.clone()),
        timeout: Duration::from_secs(agent_config.classifier_timeout_secs),
        surface,
        depth: 0,
        user_messages: user_messages.clone(),
        cache: Arc::default(),
        events: Some((events.clone(), session.to_string())),
        usage: classifier_usage.clone(),
    });
    let lists = Allowlists::new(store.clone());
    let snapshot = Snapshot {
        dials: Dials {
            mode: agent_config.approval,
            sandbox: agent_config.sandbox,
        },
        tool_allowlist: lists.tools(session)?,
        command_allowlist: lists.command_keys(agent)?,
    };
    let policy = Arc::new(SessionPolicy::new(
        session,
        agent,
        agent_config.sandbox,
        snapshot,
        Some(lists),
    ));
    let store_for_companions = store.clone();
    let redactor = parts.redactor.clone();
    let toolset = parts.toolset.clone();
    let companions: Arc<dyn crate::tools::hosts::CompanionHost> =
        Arc::new(crate::companions::AgentCompanions::new(
            config.clone(),
            agent,
            parts.companion_client.clone(),
            events.clone(),
            Some(store_for_companions),
        ));
    let subagents = Arc::new(Subagents {
        config: config.clone(),
        store: store.clone(),
        provider: provider.clone(),
        events: events.clone(),
        redactor: redactor.clone(),
        companions: companions.clone(),
    });
    let conversation = Arc::new(Conversation {
        runs: runs.clone(),
        provider: provider.clone(),
        model: agent_config.model.clone(),
    });
    let executor = Arc::new(
        Executor::new(
            config.clone(),
            parts.registry.clone(),
            toolset,
            ShellRunner::new(parts.helper.clone()),
            approver,
            classifier,
            events.clone(),
        )
        .with_support(parts.support)
        .with_store(store)
        .with_journal(journal.clone())
        .with_max_concurrent(agent_config.max_concurrent_tools)
        .with_redactor(redactor.clone())
        .with_hosts(subagents, conversation)
        .with_mcp_servers(parts.mcp.clone())
        .with_definitions(parts.definitions.clone())
        .with_companions(companions),
    );
    let runner = AgentRunner {
        runs,
        journal,
        executor,
        provider,
        agent: agent.to_string(),
        model: agent_config.model.clone(),
        system_prompt: agent_config.system_prompt.clone(),
        max_rounds: agent_config.max_rounds,
        max_tokens: Some(agent_config.max_tokens),
        classifier_usage: Some(classifier_usage),
        staged_for: super::runner::STAGED_FOR,
    };
    Ok(Assembled {
        runner,
        session: policy,
        events,
        user_messages,
    })
}

/// Runs subagents: headless, in mode `high-risk`, inside the parent session's sandbox and
/// toolset (minus `spawn_subagent`), in the parent's workspace. Nobody answers their prompts:
/// whatever a rule still sends to a prompt is refused, never silently allowed.
pub struct Subagents {
    pub config: Arc<Config>,
    pub store: Arc<dyn Store>,
    pub provider: Arc<dyn LlmProvider>,
    pub events: Arc<dyn EventSink>,
    pub redactor: crate::policy::redact::Redactor,
    /// The parent agent's companion models (a subagent may use what is bound; nobody picks).
    pub companions: Arc<dyn crate::tools::hosts::CompanionHost>,
}

impl crate::executor::SubagentHost for Subagents {
    fn run<'a>(
        &'a self,
        parent: &'a SessionPolicy,
        task: &'a str,
        tools: Option<Vec<String>>,
        cancel: tokio_util::sync::CancellationToken,
    ) -> crate::executor::HostFuture<'a> {
        Box::pin(async move {
            let answer: Result<String, String> = async {
            let agent = self
                .config
                .agents
                .get(&parent.agent)
                .ok_or_else(|| format!("no agent `{}`", parent.agent))?;
            let parent_tools = Toolset::for_agent(agent, std::iter::empty());
            let mut sub_config = agent.clone();
            sub_config.tools = match tools {
                Some(requested) => {
                    if let Some(outside) = requested.iter().find(|t| !parent_tools.contains(t)) {
                        return Err(format!("`{outside}` is not one of this agent's tools"));
                    }
                    requested
                }
                None => parent_tools.iter().map(str::to_string).collect(),
            };
            // No subagents of subagents; no reminders either: a subagent's session ends with
            // it and has no chat to fire into, and each spawn's fresh session key would
            // escape the per-session cap on pending reminders.
            sub_config.tools.retain(|t| {
                !matches!(
                    t.as_str(),
                    "spawn_subagent" | "add_reminder" | "list_reminders" | "cancel_reminder"
                )
            });
            let toolset = Toolset::for_agent(&sub_config, std::iter::empty());
            let snapshot = parent.snapshot();
            let nanos = crate::clock::now_nanos();
            let key = format!("{}:sub:{nanos:x}", parent.key);
            let session = Arc::new(
                SessionPolicy::new(
                    &key,
                    &parent.agent,
                    parent.agent_sandbox,
                    Snapshot {
                        dials: Dials {
                            mode: crate::policy::mode::ApprovalMode::HighRisk,
                            sandbox: snapshot.dials.sandbox,
                        },
                        tool_allowlist: BTreeSet::new(),
                        command_allowlist: snapshot.command_allowlist,
                    },
                    None,
                )
                .in_workspace_of(&parent.workspace_key)
                // Never wider than the parent's live session while it runs.
                .bounded_by(parent.bound()),
            );
            let runs = RunStore::new(self.store.clone());
            let journal = Arc::new(RunJournal::new(runs.clone()));
            // Nobody answers a subagent's prompts and nothing classifies its commands: its
            // mode is high-risk within the parent's sandbox, and it cannot start another.
            let executor = Arc::new(
                Executor::new(
                    self.config.clone(),
                    Arc::new(ToolRegistry::builtin()),
                    toolset,
                    ShellRunner::new(helper_binary()),
                    Arc::new(crate::executor::approval::NobodyApproves),
                    Arc::new(crate::executor::NoClassifier),
                    self.events.clone(),
                )
                .with_store(self.store.clone())
                .with_journal(journal.clone())
                .with_max_concurrent(agent.max_concurrent_tools)
                .with_redactor(self.redactor.clone())
                .with_companions(self.companions.clone()),
            );
            let runner = AgentRunner {
                runs,
                journal,
                executor,
                provider: self.provider.clone(),
                agent: parent.agent.clone(),
                model: agent.model.clone(),
                system_prompt: format!(
                    "{}\n\nYou are a subagent working on one task for another agent. Do the task, then answer with what you did and found.",
                    agent.system_prompt
                ),
                max_rounds: agent.max_rounds,
                max_tokens: Some(agent.max_tokens),
                classifier_usage: None,
                staged_for: super::runner::STAGED_FOR,
            };
            let outcome = runner
                .start(session, &key, task, cancel)
                .await
                .map_err(|e| e.to_string())?;
            Ok(outcome.answer)
            }
            .await;
            answer.map_err(crate::executor::HostError)
        })
    }
}

/// A session's conversation, as `summarize_context` and `context_info` see it.
pub struct Conversation {
    pub runs: RunStore,
    pub provider: Arc<dyn LlmProvider>,
    pub model: String,
}

/// Characters of one message kept when it is shown to the summarizer.
const SUMMARY_INPUT_PER_MESSAGE: usize = 2_000;

impl crate::executor::ContextHost for Conversation {
    fn summarize<'a>(
        &'a self,
        session: &'a str,
        focus: Option<&'a str>,
    ) -> crate::executor::HostFuture<'a> {
        use super::llm::{ChatMessage, LlmRequest, Role};
        Box::pin(async move {
            let transcript = self.runs.transcript(session).map_err(|e| e.to_string())?;
            // The current turn (from the last user message on) stays as it is.
            let cut = transcript
                .iter()
                .rposition(|m| m.role == Role::User)
                .unwrap_or(0);
            if cut == 0 {
                return Ok("nothing to summarize yet: the conversation is only this turn".into());
            }
            let earlier: Vec<String> = transcript[..cut]
                .iter()
                .map(|m| {
                    let text: String = m.content.chars().take(SUMMARY_INPUT_PER_MESSAGE).collect();
                    format!("{:?}: {text}", m.role)
                })
                .collect();
            let mut instruction = "Summarize this conversation for your own later use: the user's goals, decisions, facts learned, files touched, and what is still open. Be concise.".to_string();
            if let Some(focus) = focus {
                instruction.push_str(&format!(" Keep especially: {focus}"));
            }
            let request = LlmRequest {
                model: self.model.clone(),
                messages: vec![
                    ChatMessage::new(Role::System, instruction),
                    ChatMessage::new(Role::User, earlier.join("\n")),
                ],
                tools: crate::tools::ToolDefinitions::none(),
                max_tokens: None,
            };
            let quiet = |_: &str| {};
            let summary = self
                .provider
                .complete(&request, &quiet)
                .await
                .map_err(|e| e.message)?;
            let mut shorter = vec![ChatMessage::new(
                Role::User,
                format!("[Summary of the earlier conversation]\n{}", summary.content),
            )];
            shorter.extend(transcript[cut..].iter().cloned());
            self.runs
                .save_transcript(session, &shorter)
                .map_err(|e| e.to_string())?;
            Ok(format!(
                "summarized {} earlier messages into one; the current turn is unchanged",
                cut
            ))
        })
    }

    fn describe(&self, session: &str) -> String {
        let transcript = self.runs.transcript(session).unwrap_or_default();
        let chars: usize = transcript.iter().map(|m| m.content.chars().count()).sum();
        format!(
            "conversation: {} messages, {chars} characters (about {} tokens)",
            transcript.len(),
            chars / 4
        )
    }
}
