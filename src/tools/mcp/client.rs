//! MCP servers of one agent, over stdio (rmcp). A server starts when a session of the agent
//! first needs its tool list — never at process start — under the agent's sandbox (through the
//! same helper as the shell) unless its config says `sandbox = false`. A server that fails is
//! reported and its tools left out; the others go on. Each server is shared by all the agent's
//! sessions, and started again when it has exited.

use super::McpTool;
use crate::config::{AgentConfig, Config, McpServerConfig};
use crate::policy::env::{child_environment, configured_secret_names, shell_path};
use crate::policy::mode::SandboxPolicy;
use crate::policy::paths::canonical_root;
use crate::policy::shell::approval_key::quote_word;
use crate::sandbox::{HELPER_ARG, SandboxSpec};
use crate::tools::approved::ToolOutput;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

/// How long a server may take to start and answer `initialize` and `tools/list`.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A server that failed to start is started again by the first session that needs it after
/// this long.
const RETRY_START: Duration = Duration::from_secs(30);

/// A running server.
pub struct McpConnection {
    server: String,
    service: RunningService<RoleClient, ()>,
    timeout: Duration,
    /// The server's private temp dir, kept as long as it runs.
    _tmp: Option<tempfile::TempDir>,
}

impl McpConnection {
    /// Whether the server's end has closed (it exited).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.service.is_closed() || self.service.is_transport_closed()
    }

    /// Calls a tool; arguments go to the server untouched (its schema is the judge).
    pub async fn call(&self, tool: &str, args: &Value) -> ToolOutput {
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Some(object) = args.as_object() {
            params = params.with_arguments(object.clone());
        }
        let call = self.service.call_tool(params);
        match tokio::time::timeout(self.timeout, call).await {
            Err(_) => ToolOutput::error(format!(
                "MCP server `{}` did not answer `{tool}` within {}s",
                self.server,
                self.timeout.as_secs()
            )),
            Ok(Err(e)) => ToolOutput::error(format!(
                "MCP server `{}` failed on `{tool}`: {e}",
                self.server
            )),
            Ok(Ok(result)) => {
                let mut parts: Vec<String> = result
                    .content
                    .iter()
                    .map(|block| match block.as_text() {
                        Some(text) => text.text.clone(),
                        None => serde_json::to_string(block).unwrap_or_default(),
                    })
                    .collect();
                if parts.is_empty()
                    && let Some(structured) = &result.structured_content
                {
                    parts.push(structured.to_string());
                }
                ToolOutput {
                    text: parts.join("\n"),
                    is_error: result.is_error.unwrap_or(false),
                    truncated: false,
                }
            }
        }
    }
}

/// What listing an agent's servers produced.
#[derive(Default)]
pub struct McpListing {
    pub tools: Vec<Arc<McpTool>>,
    /// Servers that failed, and keys that name no tool (each withholds its server's tools).
    pub problems: Vec<String>,
}

enum Slot {
    NotStarted,
    Ready {
        connection: Arc<McpConnection>,
        tools: Vec<Arc<McpTool>>,
    },
    /// A server that failed; one that failed to start (or exited) is tried again after
    /// `retry_at` — its sessions share it, so one bad start must not disable it for the
    /// process's life.
    Failed {
        problem: String,
        retry_at: Option<Instant>,
    },
}

/// What starting a server needs, shared by the agent's servers.
struct Launcher {
    config: Arc<Config>,
    agent: String,
    helper: PathBuf,
}

/// One server of the agent: started on first need, started again after it exits. Its tools
/// reach it through a weak handle, so a restart serves the sessions that listed it before.
pub struct ServerSlot {
    name: String,
    launcher: Arc<Launcher>,
    state: Mutex<Slot>,
}

impl ServerSlot {
    /// Whether the slot should (re)start its server now.
    fn due(state: &Slot) -> bool {
        match state {
            Slot::NotStarted => true,
            Slot::Ready { connection, .. } => connection.is_closed(),
            Slot::Failed {
                retry_at: Some(at), ..
            } => Instant::now() >= *at,
            Slot::Failed { retry_at: None, .. } => false,
        }
    }

    /// Starts the server if it is due. The lock is this server's own: the agent's other
    /// servers start beside it, and only sessions that need this one wait for it.
    async fn ready(self: &Arc<Self>) -> tokio::sync::MutexGuard<'_, Slot> {
        let mut state = self.state.lock().await;
        if Self::due(&state) {
            *state = match self.start().await {
                Ok(slot) => slot,
                Err(e) => Slot::Failed {
                    problem: format!(
                        "MCP server `{}` of agent {}: {e}",
                        self.name, self.launcher.agent
                    ),
                    retry_at: Some(Instant::now() + RETRY_START),
                },
            };
        }
        state
    }

    /// The server's tools, or why there are none.
    async fn listing(self: &Arc<Self>) -> Result<Vec<Arc<McpTool>>, String> {
        match &*self.ready().await {
            Slot::Ready { tools, .. } => Ok(tools.clone()),
            Slot::Failed { problem, .. } => Err(problem.clone()),
            Slot::NotStarted => Err(format!("MCP server `{}` is not running", self.name)),
        }
    }

    /// Calls `tool` on the running server, starting it again first if it exited.
    pub async fn call(self: &Arc<Self>, tool: &str, args: &Value) -> ToolOutput {
        let connection = match &*self.ready().await {
            Slot::Ready { connection, .. } => connection.clone(),
            Slot::Failed { problem, .. } => {
                return ToolOutput::error(format!("{problem}; `{tool}` did not run"));
            }
            Slot::NotStarted => {
                return ToolOutput::error(format!(
                    "MCP server `{}` is not running; `{tool}` did not run",
                    self.name
                ));
            }
        };
        let output = connection.call(tool, args).await;
        if connection.is_closed() {
            // It exited during the call: the next call, from any session, starts it again.
            let mut state = self.state.lock().await;
            if let Slot::Ready {
                connection: now, ..
            } = &*state
                && Arc::ptr_eq(now, &connection)
            {
                *state = Slot::Failed {
                    problem: format!("MCP server `{}` exited", self.name),
                    retry_at: Some(Instant::now()),
                };
            }
        }
        output
    }

    async fn start(self: &Arc<Self>) -> Result<Slot, String> {
        let launcher = &self.launcher;
        let server = self.name.as_str();
        let agent = launcher
            .config
            .agents
            .get(&launcher.agent)
            .ok_or_else(|| format!("no agent `{}`", launcher.agent))?;
        let server_config = agent
            .mcp
            .get(server)
            .ok_or_else(|| format!("no MCP server `{server}`"))?;
        let (command, tmp) = launcher.command(agent, server, server_config)?;
        // The server's stderr is dropped: it is not ours to log (it could echo what it was sent).
        let (transport, _stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("could not start `{}`: {e}", server_config.command))?;
        let service = tokio::time::timeout(START_TIMEOUT, ().serve(transport))
            .await
            .map_err(|_| {
                format!(
                    "did not finish starting within {}s",
                    START_TIMEOUT.as_secs()
                )
            })?
            .map_err(|e| format!("did not complete the MCP handshake: {e}"))?;
        let listed = tokio::time::timeout(START_TIMEOUT, service.list_all_tools())
            .await
            .map_err(|_| "did not list its tools in time".to_string())?
            .map_err(|e| format!("could not list its tools: {e}"))?;
        let connection = Arc::new(McpConnection {
            server: server.to_string(),
            service,
            timeout: Duration::from_secs(server_config.timeout_secs),
            _tmp: tmp,
        });
        let tools: Vec<Arc<McpTool>> = listed
            .iter()
            .map(|t| {
                let schema = Value::Object((*t.input_schema).clone());
                let description = t.description.as_deref().unwrap_or_default();
                Arc::new(
                    McpTool::new(server, server_config, &t.name, description, schema)
                        .with_server(Arc::downgrade(self)),
                )
            })
            .collect();
        // A key that names none of the listed tools is a typo that could disable a deny:
        // withhold the server's tools until it is fixed.
        // So is a `tool_tiers` key (a remote name) naming none: the tool it meant to raise
        // would keep the server's tier.
        let prefix = format!("mcp_{server}_");
        let keys = agent.tool_approval.keys().chain(agent.denied_tools.iter());
        let mut unknown: Vec<String> = keys
            .filter(|k| k.starts_with(&prefix) && !tools.iter().any(|t| &t.name == *k))
            .map(|k| format!("`{k}`"))
            .collect();
        unknown.extend(
            server_config
                .tool_tiers
                .keys()
                .filter(|k| !listed.iter().any(|t| t.name.as_ref() == k.as_str()))
                .map(|k| format!("`tool_tiers.{k}`")),
        );
        if !unknown.is_empty() {
            let listed: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            // Not retried: the config, not the server, has to change.
            return Ok(Slot::Failed {
                retry_at: None,
                problem: format!(
                    "MCP server `{server}` of agent {}: {} name{} no tool it lists ({}); its tools are withheld until the config is fixed",
                    launcher.agent,
                    unknown.join(", "),
                    if unknown.len() == 1 { "s" } else { "" },
                    listed.join(", ")
                ),
            });
        }
        Ok(Slot::Ready { connection, tools })
    }

    /// Stops the server if it runs.
    async fn stop(&self) {
        let slot = std::mem::replace(&mut *self.state.lock().await, Slot::NotStarted);
        if let Slot::Ready { connection, tools } = slot {
            drop(tools);
            if let Ok(connection) = Arc::try_unwrap(connection) {
                let _ = connection.service.cancel().await;
            }
        }
    }
}

/// One agent's MCP servers, each started on first need and shared by all its sessions.
pub struct McpServers {
    slots: Vec<Arc<ServerSlot>>,
}

impl McpServers {
    /// `helper` is the tollgate binary that sandboxes a server.
    #[must_use]
    pub fn new(config: Arc<Config>, agent: &str, helper: PathBuf) -> Self {
        let names: Vec<String> = config
            .agents
            .get(agent)
            .map(|a| a.mcp.keys().cloned().collect())
            .unwrap_or_default();
        let launcher = Arc::new(Launcher {
            config,
            agent: agent.to_string(),
            helper,
        });
        McpServers {
            slots: names
                .into_iter()
                .map(|name| {
                    Arc::new(ServerSlot {
                        name,
                        launcher: launcher.clone(),
                        state: Mutex::new(Slot::NotStarted),
                    })
                })
                .collect(),
        }
    }

    /// The agent's MCP tools, starting servers not yet started (or due to start again).
    pub async fn tools(&self) -> McpListing {
        let mut listing = McpListing::default();
        for slot in &self.slots {
            match slot.listing().await {
                Ok(tools) => listing.tools.extend(tools),
                Err(problem) => listing.problems.push(problem),
            }
        }
        listing
    }

    /// Stops every running server.
    pub async fn shutdown(&self) {
        for slot in &self.slots {
            slot.stop().await;
        }
    }
}

/// Where a server works (its `HOME`, the directory its sandbox lets it write, its `cwd`
/// unless configured): `<agent workspace>/.mcp/<server>`. Not the agent's workspace itself:
/// one server serves every session, and that directory holds every session's directory, so
/// a chat could read or write another chat's files through it, or plant a link where a new
/// session's directory will be. No session's directory starts with a dot.
#[must_use]
pub fn server_workspace(agent: &AgentConfig, server: &str) -> PathBuf {
    canonical_root(
        &agent
            .workspace
            .as_deref()
            .unwrap_or(std::path::Path::new("data/workspaces"))
            .join(".mcp")
            .join(server),
    )
}

impl Launcher {
    /// The server's command line: through the sandbox helper unless `sandbox = false` or the
    /// agent runs `danger-full-access`.
    fn command(
        &self,
        agent: &AgentConfig,
        name: &str,
        server: &McpServerConfig,
    ) -> Result<(tokio::process::Command, Option<tempfile::TempDir>), String> {
        let workspace = server_workspace(agent, name);
        std::fs::create_dir_all(&workspace)
            .map_err(|e| format!("creating {}: {e}", workspace.display()))?;
        let cwd = server
            .cwd
            .clone()
            .map_or_else(|| workspace.clone(), |c| canonical_root(&c));
        let tmp = tempfile::Builder::new()
            .prefix("tollgate-mcp-")
            .tempdir()
            .map_err(|e| format!("creating a temp dir: {e}"))?;
        // MCP servers are the operator's programs, found on the service's own PATH; the fixed
        // shell PATH is for the commands a model writes.
        let service_path = std::env::var("PATH").unwrap_or_else(|_| shell_path(&[]));
        let mut env = child_environment(
            std::env::vars(),
            &configured_secret_names(&self.config),
            &agent.env_allowlist,
            &workspace,
            tmp.path(),
            &service_path,
        );
        if !agent.trust_git_config {
            crate::sandbox::pin_git(&mut env);
        }
        env.extend(server.env.clone());
        let confined = server.sandbox && agent.sandbox != SandboxPolicy::DangerFullAccess;
        let mut command = if confined {
            let mut readable: Vec<PathBuf> = agent
                .readable_roots
                .iter()
                .map(|p| canonical_root(p))
                .collect();
            readable.push(cwd.clone());
            let spec = SandboxSpec {
                sandbox: agent.sandbox,
                workspace: workspace.clone(),
                writable_roots: agent
                    .writable_roots
                    .iter()
                    .map(|p| canonical_root(p))
                    .collect(),
                readable_roots: readable,
                tmpdir: tmp.path().to_path_buf(),
                setup_errors: PathBuf::new(),
                network: agent.network_access,
                shell: crate::sandbox::bash_path_once().unwrap_or_default(),
                trust_git_config: agent.trust_git_config,
            };
            let spec_json = serde_json::to_string(&spec).map_err(|e| e.to_string())?;
            let mut line = vec![quote_word(&server.command)];
            line.extend(server.args.iter().map(|a| quote_word(a)));
            // `exec` so the server replaces the shell (the namespace's PID 1 is the helper's own
            // code, whose end ends the server).
            let script = format!(
                "cd {} && exec {}",
                quote_word(&cwd.display().to_string()),
                line.join(" ")
            );
            let mut c = tokio::process::Command::new(&self.helper);
            c.arg(HELPER_ARG).arg(spec_json).arg(script);
            c
        } else {
            let mut c = tokio::process::Command::new(&server.command);
            c.args(&server.args);
            c
        };
        command
            .env_clear()
            .envs(&env)
            .current_dir(&cwd)
            .kill_on_drop(true);
        Ok((command, Some(tmp)))
    }
}
