//! What a tool's execute half may use: the session's workspace and roots, the sandbox current
//! when the call starts, the shell runner and the sanitized child environment.

use crate::policy::mode::SandboxPolicy;
use crate::policy::sandbox::Roots;
use crate::sandbox::ShellRunner;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The execute half's context.
#[derive(Clone)]
pub struct ExecContext {
    pub agent: String,
    pub session: String,
    pub workspace: PathBuf,
    pub roots: Roots,
    /// The sandbox when the call starts (a granted call runs under the sandbox current then).
    pub sandbox: SandboxPolicy,
    pub network_access: bool,
    /// Non-public hosts the web tools may reach (`private_hosts`).
    pub private_hosts: Vec<crate::policy::private_hosts::HostPattern>,
    /// Git may run what the agent's own configuration files say (agent key).
    pub trust_git_config: bool,
    pub runner: ShellRunner,
    /// The sanitized environment for shell children.
    pub child_env: BTreeMap<String, String>,
    /// A tool's timeout when the call gives none.
    pub default_timeout: Duration,
    /// Cancelled by `/stop`: running children are killed.
    pub cancel: CancellationToken,
    /// Where todos, memory and stored results live.
    pub store: Option<std::sync::Arc<dyn crate::store::Store>>,
    /// Whether memory is per session or shared by the agent's sessions.
    pub memory: crate::config::MemoryScope,
    /// Starts subagents for this call's session (`spawn_subagent`), where allowed.
    pub subagents: Option<std::sync::Arc<dyn super::hosts::SubagentSpawner>>,
    /// Who answers `ask_user_question` (none where nobody can).
    pub approver: Option<std::sync::Arc<dyn super::hosts::QuestionAsker>>,
    /// The conversation (`summarize_context`, `context_info`).
    pub context: Option<std::sync::Arc<dyn super::hosts::ContextHost>>,
    /// The agent's companion models (`analyze_media`).
    pub companions: Option<std::sync::Arc<dyn super::hosts::CompanionHost>>,
}
