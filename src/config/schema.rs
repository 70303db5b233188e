//! The configuration's shape: every key a user can write, its default, and its documentation.
//! Unknown keys are errors (`deny_unknown_fields`): a typo must never silently disable a rule.

use super::lists::{AccessId, list};
use crate::policy::mode::{ApprovalMode, SandboxPolicy};
use crate::policy::private_hosts::HostPattern;
use crate::policy::shell::approval_key::DEFAULT_PREFIX_BINARIES;
use crate::policy::tier::{Tier, ToolPolicy};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The whole configuration.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub store: StoreConfig,
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    #[serde(default)]
    pub agents: BTreeMap<String, AgentConfig>,
    #[serde(default)]
    pub telegram: Option<TelegramConfig>,
    #[serde(default)]
    pub discord: Option<DiscordConfig>,
    /// `serve`'s Prometheus `/metrics` and `/healthz` endpoint (off when absent).
    #[serde(default)]
    pub metrics: Option<MetricsConfig>,
    /// The config file this was read from, if any (never readable by tools).
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// The store's directory (SQLite's `tollgate.sqlite3` is in it).
    pub path: PathBuf,
    /// The store's page cache, in megabytes.
    pub cache_capacity_mb: u64,
    /// Settled approvals, finished runs, stored tool results and audit events older than this
    /// are pruned, and sessions idle this long lose their transcript and dials.
    pub retain_days: u64,
    /// Also delete an idle session's workspace directory when it is pruned.
    pub prune_workspaces: bool,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    /// The address `/metrics` and `/healthz` are served on (`127.0.0.1:9464`; `0.0.0.0:9464`
    /// in a container, where the port is published).
    pub listen: String,
}

impl MetricsConfig {
    /// The address to listen on (checked when the config was read).
    #[must_use]
    pub fn address(&self) -> Option<std::net::SocketAddr> {
        self.listen.parse().ok()
    }
}

/// How to talk to a model provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderKind {
    /// Any OpenAI-compatible `/chat/completions` endpoint.
    Openai,
    /// Anthropic's Messages API.
    Anthropic,
}

impl ProviderKind {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Openai => "openai",
            ProviderKind::Anthropic => "anthropic",
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    pub base_url: String,
    /// The name of the environment variable holding the key (never the key itself).
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default = "defaults::request_timeout_secs")]
    pub timeout_secs: u64,
    #[serde(default = "defaults::max_retries")]
    pub max_retries: u32,
}

/// Where session memory lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryScope {
    /// Each session has its own memory.
    #[default]
    Session,
    /// All sessions of the agent share one memory.
    Agent,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    pub provider: String,
    pub model: String,
    /// The model the command classifier asks; the agent's `model` when absent.
    #[serde(default)]
    pub classifier_model: Option<String>,
    #[serde(default = "defaults::system_prompt")]
    pub system_prompt: String,
    /// Built-in tools offered to the agent (MCP servers add theirs).
    #[serde(default = "defaults::tools", deserialize_with = "list")]
    pub tools: Vec<String>,
    /// Tools taken away, built-in or `mcp_<server>_<tool>`.
    #[serde(default, deserialize_with = "list")]
    pub denied_tools: Vec<String>,
    #[serde(default)]
    pub approval: ApprovalMode,
    #[serde(default)]
    pub sandbox: SandboxPolicy,
    #[serde(default)]
    pub network_access: bool,
    /// Hosts on loopback, private, link-local or other non-public addresses that the web
    /// tools may reach: names, addresses or ranges (`10.0.0.0/8`). Anything else non-public is
    /// refused in every sandbox (cloud metadata answers on a link-local address).
    #[serde(default, deserialize_with = "list")]
    pub private_hosts: Vec<HostPattern>,
    /// Each session works in `<workspace>/<session>`; `data/workspaces/<agent>` when absent.
    #[serde(default)]
    pub workspace: Option<PathBuf>,
    #[serde(default, deserialize_with = "list")]
    pub writable_roots: Vec<PathBuf>,
    #[serde(default, deserialize_with = "list")]
    pub readable_roots: Vec<PathBuf>,
    /// Hidden variables a shell child may see after all (never `SSH_*` or a `*_env` secret).
    #[serde(default, deserialize_with = "list")]
    pub env_allowlist: Vec<String>,
    /// Directories added after the shell's fixed `PATH` (`/usr/local/bin:/usr/bin:/bin`); the
    /// service's own `PATH` never reaches the shell.
    #[serde(default, deserialize_with = "list")]
    pub shell_path: Vec<PathBuf>,
    /// Let git in the shell read configuration and hooks the agent could have written
    /// (`.gitconfig` in the workspace, `.git/config`, `.git/hooks`). Off: the keys that run
    /// programs are pinned (see `docs/security.md`).
    #[serde(default)]
    pub trust_git_config: bool,
    #[serde(default = "defaults::approval_timeout_secs")]
    pub approval_timeout_secs: u64,
    /// Per policy key: allow | deny | prompt.
    #[serde(default)]
    pub tool_approval: BTreeMap<String, ToolPolicy>,
    #[serde(default)]
    pub mcp: BTreeMap<String, McpServerConfig>,
    /// Binaries whose "always" covers a subcommand (`git status …`) rather than one argv.
    #[serde(default = "defaults::prefix_binaries", deserialize_with = "list")]
    pub prefix_binaries: Vec<String>,
    #[serde(default = "defaults::max_rounds")]
    pub max_rounds: u32,
    #[serde(default = "defaults::classifier_timeout_secs")]
    pub classifier_timeout_secs: u64,
    #[serde(default = "defaults::tool_timeout_secs")]
    pub tool_timeout_secs: u64,
    #[serde(default = "defaults::max_concurrent_tools")]
    pub max_concurrent_tools: usize,
    #[serde(default)]
    pub memory: MemoryScope,
    /// Anthropic requires a cap on the reply's length.
    #[serde(default = "defaults::max_tokens")]
    pub max_tokens: u32,
    /// Companion models by role (`"analyze:image" = "provider/model"`): binding one is the
    /// consent to send that kind of file to that model.
    #[serde(default)]
    pub companions: BTreeMap<String, String>,
    /// What a picker may offer for a role that is not bound.
    #[serde(default)]
    pub companion_choices: BTreeMap<String, Vec<String>>,
    /// The largest media file `analyze_media` sends, in MiB.
    #[serde(default = "defaults::media_max_mb")]
    pub media_max_mb: u64,
    /// Voice notes are transcribed before the turn (needs `analyze:audio` bound).
    #[serde(default)]
    pub transcribe_voice: bool,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    pub command: String,
    #[serde(default, deserialize_with = "list")]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// Untrusted servers' tools are high-risk whatever they claim.
    #[serde(default)]
    pub trusted: bool,
    /// A trusted server's tier for all its tools.
    #[serde(default)]
    pub tier: Option<Tier>,
    /// A trusted server's tier per tool (by the server's own tool name).
    #[serde(default)]
    pub tool_tiers: BTreeMap<String, Tier>,
    #[serde(default = "defaults::mcp_timeout_secs")]
    pub timeout_secs: u64,
    /// Run the server under the agent's sandbox (the default).
    #[serde(default = "defaults::yes")]
    pub sandbox: bool,
}

/// Where approval cards go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalsTo {
    /// The chat the request came from.
    #[default]
    Chat,
    /// Each admin's direct messages; the chat sees "waiting for an admin".
    Admins,
}

impl ApprovalsTo {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalsTo::Chat => "chat",
            ApprovalsTo::Admins => "admins",
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TelegramConfig {
    #[serde(default = "defaults::telegram_token_env")]
    pub token_env: String,
    #[serde(default = "defaults::telegram_api_url")]
    pub api_url: String,
    /// The agent that answers; the only agent when there is one.
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default, deserialize_with = "list")]
    pub allowed_users: Vec<AccessId>,
    #[serde(default, deserialize_with = "list")]
    pub allowed_chats: Vec<AccessId>,
    #[serde(default, deserialize_with = "list")]
    pub admins: Vec<AccessId>,
    #[serde(default = "defaults::yes")]
    pub require_mention: bool,
    #[serde(default)]
    pub approvals_to: ApprovalsTo,
    #[serde(default)]
    pub group_sessions_per_user: bool,
    #[serde(default = "defaults::rate_limit_per_minute")]
    pub rate_limit_per_minute: u32,
    #[serde(default = "defaults::queue_cap")]
    pub queue_cap: usize,
    /// Seconds between edits of the progress message; 0 turns the progress message off.
    #[serde(default = "defaults::progress_interval_secs")]
    pub progress_interval_secs: u64,
    /// Show "typing…" while a run works.
    #[serde(default = "defaults::yes")]
    pub typing: bool,
    /// Seconds a session's worker stays in memory with nothing to do; its state is stored, so
    /// its next message starts it again.
    #[serde(default = "defaults::idle_session_secs")]
    pub idle_session_secs: u64,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DiscordConfig {
    #[serde(default = "defaults::discord_token_env")]
    pub token_env: String,
    #[serde(default = "defaults::discord_api_url")]
    pub api_url: String,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default, deserialize_with = "list")]
    pub allowed_users: Vec<AccessId>,
    #[serde(default, deserialize_with = "list")]
    pub allowed_guilds: Vec<AccessId>,
    #[serde(default, deserialize_with = "list")]
    pub allowed_channels: Vec<AccessId>,
    #[serde(default, deserialize_with = "list")]
    pub admins: Vec<AccessId>,
    #[serde(default, deserialize_with = "list")]
    pub admin_roles: Vec<AccessId>,
    #[serde(default = "defaults::yes")]
    pub require_mention: bool,
    #[serde(default)]
    pub approvals_to: ApprovalsTo,
    #[serde(default)]
    pub group_sessions_per_user: bool,
    #[serde(default = "defaults::rate_limit_per_minute")]
    pub rate_limit_per_minute: u32,
    #[serde(default = "defaults::queue_cap")]
    pub queue_cap: usize,
    #[serde(default = "defaults::progress_interval_secs")]
    pub progress_interval_secs: u64,
    /// Show "typing…" while a run works.
    #[serde(default = "defaults::yes")]
    pub typing: bool,
    /// Seconds a session's worker stays in memory with nothing to do.
    #[serde(default = "defaults::idle_session_secs")]
    pub idle_session_secs: u64,
    /// The operator enabled the privileged Message Content intent in the developer portal:
    /// every message in a thread the bot opened continues it (without it, Discord delivers the
    /// text of DMs, mentions and replies only).
    #[serde(default)]
    pub message_content: bool,
    /// The shards this process runs (all of them when absent).
    #[serde(default)]
    pub shards: Option<ShardRange>,
    /// The largest attachment fetched into a workspace, in MiB.
    #[serde(default = "defaults::max_attachment_mb")]
    pub max_attachment_mb: u64,
}

/// A contiguous range of Discord shards, `first` to `last` included, of `total`.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ShardRange {
    pub first: u32,
    pub last: u32,
    pub total: u32,
}

/// Per-agent and per-bridge defaults live in code: the compiled-in TOML holds scalars only,
/// because a config overlay cannot delete a table it brings.
pub mod defaults {
    pub fn idle_session_secs() -> u64 {
        600
    }
    pub fn system_prompt() -> String {
        "You are a helpful assistant. Use tools when they help; say plainly when a tool call was refused.".into()
    }
    /// A trimmed toolset: reading, bookkeeping and asking. Writing and the shell are opt-in.
    pub fn tools() -> Vec<String> {
        [
            "read_file",
            "ls",
            "find",
            "grep",
            "get_time",
            "context_info",
            "retrieve_tool_result",
            "list_todos",
            "manage_todos",
            "view_memory",
            "manage_memory",
            "ask_user_question",
        ]
        .map(String::from)
        .to_vec()
    }
    pub fn prefix_binaries() -> Vec<String> {
        super::DEFAULT_PREFIX_BINARIES
            .iter()
            .map(|s| s.to_string())
            .collect()
    }
    pub fn approval_timeout_secs() -> u64 {
        600
    }
    pub fn max_rounds() -> u32 {
        25
    }
    pub fn classifier_timeout_secs() -> u64 {
        8
    }
    pub fn tool_timeout_secs() -> u64 {
        180
    }
    pub fn max_concurrent_tools() -> usize {
        10
    }
    pub fn max_tokens() -> u32 {
        4096
    }
    pub fn request_timeout_secs() -> u64 {
        120
    }
    pub fn max_retries() -> u32 {
        3
    }
    pub fn mcp_timeout_secs() -> u64 {
        60
    }
    pub fn yes() -> bool {
        true
    }
    pub fn telegram_token_env() -> String {
        "TELEGRAM_BOT_TOKEN".into()
    }
    pub fn telegram_api_url() -> String {
        "https://api.telegram.org".into()
    }
    pub fn max_attachment_mb() -> u64 {
        20
    }
    pub fn media_max_mb() -> u64 {
        20
    }
    pub fn discord_token_env() -> String {
        "DISCORD_TOKEN".into()
    }
    pub fn discord_api_url() -> String {
        "https://discord.com".into()
    }
    pub fn rate_limit_per_minute() -> u32 {
        20
    }
    pub fn queue_cap() -> usize {
        5
    }
    pub fn progress_interval_secs() -> u64 {
        3
    }
}
