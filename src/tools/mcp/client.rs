//! MCP servers of one agent, over stdio (rmcp). A server starts when a session of the agent
//! first needs its tool list — never at process start — under the agent's sandbox (through the
//! same helper as the shell) unless its config says `sandbox = false`. A server that fails is
//! reported and its tools left out; the others go on.

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
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
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
    Ready {
        connection: Arc<McpConnection>,
        tools: Vec<Arc<McpTool>>,
    },
    /// A server that failed; one that failed to start is tried again after `retry_at` (its
    /// sessions share it now, so one bad start must not disable it for the process's life).
    Failed {
        problem: String,
        retry_at: Option<std::time::Instant>,
    },
}

/// One agent's MCP servers, started on first need.
pub struct McpServers {
    config: Arc<Config>,
    agent: String,
    helper: PathBuf,
    slots: Mutex<BTreeMap<String, Slot>>,
}

impl McpServers {
    /// `helper` is the tollgate binary that sandboxes a server.
    #[must_use]
    pub fn new(config: Arc<Config>, agent: &str, helper: PathBuf) -> Self {
        McpServers {
            config,
            agent: agent.to_string(),
            helper,
            slots: Mutex::new(BTreeMap::new()),
        }
    }

    /// The agent's MCP tools, starting servers not yet started.
    pub async fn tools(&self) -> McpListing {
        let Some(agent) = self.config.agents.get(&self.agent) else {
            return McpListing::default();
        };
        let mut slots = self.slots.lock().await;
        for (server, server_config) in &agent.mcp {
            let due = match slots.get(server) {
                None => true,
                Some(Slot::Failed {
                    retry_at: Some(at), ..
                }) => std::time::Instant::now() >= *at,
                Some(_) => false,
            };
            if due {
                let slot = match self.start(agent, server, server_config).await {
                    Ok(slot) => slot,
                    Err(e) => Slot::Failed {
                        problem: format!("MCP server `{server}` of agent {}: {e}", self.agent),
                        retry_at: Some(std::time::Instant::now() + RETRY_START),
                    },
                };
                slots.insert(server.clone(), slot);
            }
        }
        let mut listing = McpListing::default();
        for slot in slots.values() {
            match slot {
                Slot::Ready { tools, .. } => listing.tools.extend(tools.iter().cloned()),
                Slot::Failed { problem, .. } => listing.problems.push(problem.clone()),
            }
        }
        listing
    }

    async fn start(
        &self,
        agent: &AgentConfig,
        server: &str,
        server_config: &McpServerConfig,
    ) -> Result<Slot, String> {
        let (command, tmp) = self.command(agent, server_config)?;
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
                        .with_connection(connection.clone()),
                )
            })
            .collect();
        // A key that names none of the listed tools is a typo that could disable a deny:
        // withhold the server's tools until it is fixed.
        let prefix = format!("mcp_{server}_");
        let keys = agent.tool_approval.keys().chain(agent.denied_tools.iter());
        let unknown: Vec<&String> = keys
            .filter(|k| k.starts_with(&prefix) && !tools.iter().any(|t| &t.name == *k))
            .collect();
        if !unknown.is_empty() {
            let listed: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            // Not retried: the config, not the server, has to change.
            return Ok(Slot::Failed {
                retry_at: None,
                problem: format!(
                    "MCP server `{server}` of agent {}: {} name{} no tool it lists ({}); its tools are withheld until the config is fixed",
                    self.agent,
                    unknown
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if unknown.len() == 1 { "s" } else { "" },
                    listed.join(", ")
                ),
            });
        }
        Ok(Slot::Ready { connection, tools })
    }

    /// The server's command line: through the sandbox helper unless `sandbox = false` or the
    /// agent runs `danger-full-access`.
    fn command(
        &self,
        agent: &AgentConfig,
        server: &McpServerConfig,
    ) -> Result<(tokio::process::Command, Option<tempfile::TempDir>), String> {
        let workspace = canonical_root(
            agent
                .workspace
                .as_deref()
                .unwrap_or(std::path::Path::new("data/workspaces")),
        );
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
                network: agent.network_access,
                shell: crate::policy::sandbox::bash_path().unwrap_or_default(),
            };
            let spec_json = serde_json::to_string(&spec).map_err(|e| e.to_string())?;
            let mut line = vec![quote_word(&server.command)];
            line.extend(server.args.iter().map(|a| quote_word(a)));
            // `exec` so the server itself is PID 1 of its namespace.
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

    /// Stops every running server.
    pub async fn shutdown(&self) {
        let mut slots = self.slots.lock().await;
        for (_, slot) in std::mem::take(&mut *slots) {
            if let Slot::Ready { connection, tools } = slot {
                drop(tools);
                if let Ok(connection) = Arc::try_unwrap(connection) {
                    let _ = connection.service.cancel().await;
                }
            }
        }
    }
}
