//! The gate as a scenario table: mode × sandbox × tool × args × config → decision, source and
//! reason code. Every step of the resolution order appears, including each "deny always wins"
//! case and the prompts that mode `high-risk` cannot remove. Steps that need a tool-declared
//! policy use tools registered by this test. This module holds the world the rows are decided
//! in (its config, probe tools and MCP tools), the row and its tweaks, and `run`; the rows and
//! the other scenarios live in its submodules.

mod ceiling;
mod commands;
mod offers;
mod policies;
mod refusals;
mod table;
mod workspaces;

use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::os::unix::fs::symlink;
use std::sync::Arc;
use tollgate::config::{self, Config};
use tollgate::gate::{Evaluation, evaluate, roots_for, workspace_for};
use tollgate::policy::classifier::ClassifierReport;
use tollgate::policy::declaration::Declaration;
use tollgate::policy::mode::Dials;
use tollgate::policy::resolve::{AlwaysOffer, GateContext};
use tollgate::policy::sandbox::SandboxSupport;
use tollgate::policy::shell::approval_key::ApprovalKey;
use tollgate::policy::tier::ToolPolicy;
use tollgate::tools::builtin::BUILTIN_TOOLS;
use tollgate::tools::mcp::McpTool;
use tollgate::tools::{
    ApprovedCall, ExecContext, Proposal, ProposeContext, Tool, ToolError, ToolFuture, ToolOutput,
    ToolRegistry, Toolset,
};

/// A tool registered by the test, declaring whatever the row needs.
struct Probe {
    name: &'static str,
    declaration: Value,
    options: bool,
}

impl Tool for Probe {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "test probe"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn execute<'a>(&'a self, _: &'a ApprovedCall, _: &'a ExecContext) -> ToolFuture<'a> {
        Box::pin(async { ToolOutput::ok("probe ran") })
    }
    fn propose(&self, args: &Value, _: &ProposeContext) -> Result<Proposal, ToolError> {
        Ok(Proposal {
            tool: self.name.into(),
            message: "probe".into(),
            preview: None,
            effects: vec![],
            declaration: Declaration::from_json(&self.declaration),
            execute_tool: self.name.into(),
            execute_args: args.clone(),
            options: self.options.then(|| vec!["a".into(), "b".into()]),
            shell: None,
            mcp: None,
        })
    }
}

fn probes() -> Vec<Probe> {
    let p = |name, declaration, options| Probe {
        name,
        declaration,
        options,
    };
    vec![
        p(
            "probe_deny",
            json!({"tier": "read-only", "policy": "deny", "reason": "probe refuses"}),
            false,
        ),
        p(
            "probe_allow",
            json!({"tier": "high-risk", "policy": "allow"}),
            false,
        ),
        p(
            "probe_prompt",
            json!({"tier": "read-only", "policy": "prompt"}),
            false,
        ),
        p(
            "probe_override",
            json!({"tier": "read-only", "override": true}),
            false,
        ),
        p(
            "probe_override_allow",
            json!({"tier": "high-risk", "policy": "allow", "override": true}),
            false,
        ),
        p("probe_picker", json!({"tier": "read-only"}), true),
        p("probe_silent", json!(null), false),
        p(
            "probe_malformed",
            json!({"tier": "read-only", "policy": "sometimes"}),
            false,
        ),
        p(
            "probe_keyed",
            json!({"tier": "read-only", "policy_key": "shared_key"}),
            false,
        ),
        p("probe_low", json!({"tier": "low-risk"}), false),
    ]
}

struct World {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    config: Config,
    registry: ToolRegistry,
    extra_tools: Vec<String>,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let root = tollgate::policy::paths::canonical_root(dir.path());
    for d in ["ws", "extra", "docs", "store"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("ws/notes.txt"), "hi").unwrap();
    std::fs::write(root.join("docs/guide.txt"), "read me").unwrap();
    symlink("/etc", root.join("ws/link-to-etc")).unwrap();
    symlink(root.join("extra"), root.join("ws/link-to-extra")).unwrap();
    let tools: Vec<String> = BUILTIN_TOOLS.iter().map(|t| format!("\"{t}\"")).collect();
    let text = format!(
        r#"
[store]
path = "store"

[providers.local]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"

[agents.a]
provider = "local"
model = "m"
tools = [{}]
workspace = "ws"
writable_roots = ["extra"]
readable_roots = ["docs"]

[agents.a.mcp.fs]
command = "fs-server"

[agents.a.mcp.git]
command = "git-server"
trusted = true
tier = "read-only"
tool_tiers = {{ commit = "high-risk" }}
"#,
        tools.join(", ")
    );
    let file = root.join("tollgate.toml");
    std::fs::write(&file, &text).unwrap();
    let config = config::load_with_env(Some(file), Some(&text), HashMap::new()).unwrap();
    let mut registry = ToolRegistry::builtin();
    let mut extra_tools = Vec::new();
    for probe in probes() {
        extra_tools.push(probe.name.to_string());
        registry.register(Arc::new(probe)).unwrap();
    }
    let agent = &config.agents["a"];
    for (server, tool) in [("fs", "read"), ("git", "log"), ("git", "commit")] {
        let t = McpTool::new(server, &agent.mcp[server], tool, "", json!({}));
        extra_tools.push(t.name.clone());
        registry.register(Arc::new(t)).unwrap();
    }
    World {
        _dir: dir,
        root,
        config,
        registry,
        extra_tools,
    }
}

/// Changes a row makes to the world before deciding.
#[derive(Clone, Copy)]
enum Tweak {
    /// `[agents.a.tool_approval] key = policy`
    Config(&'static str, &'static str),
    NetworkAccess,
    /// `private_hosts` names this host, address or range.
    PrivateHost(&'static str),
    /// "Always approve this tool" in this session.
    ToolAllowed(&'static str),
    /// A saved command key (notation).
    CommandAllowed(&'static str),
    /// A kernel without Landlock or user namespaces.
    NoKernelSupport,
    /// A machine without bash.
    NoBash,
    /// The agent's configured sandbox (the row's sandbox is the session's).
    AgentSandbox(&'static str),
    /// Take a tool out of the toolset.
    Denied(&'static str),
    /// The classifier's reply, when asked.
    Classifier(&'static str),
    ClassifierFails,
}

struct Row {
    mode: &'static str,
    sandbox: &'static str,
    tool: &'static str,
    args: Value,
    tweaks: &'static [Tweak],
    expect: (&'static str, &'static str, &'static str),
}

struct Outcome {
    decision: String,
    source: String,
    code: String,
    always: Option<AlwaysOffer>,
}

fn run(world: &World, row: &Row) -> Outcome {
    let mut config = world.config.clone();
    let mut tool_allowlist = BTreeSet::new();
    let mut command_allowlist = BTreeSet::new();
    let mut support = SandboxSupport {
        landlock_abi: Some(7),
        user_namespaces: true,
        bash: true,
    };
    let mut classifier: Option<ClassifierReport> = None;
    {
        let agent = config.agents.get_mut("a").unwrap();
        for tweak in row.tweaks {
            match *tweak {
                Tweak::Config(key, policy) => {
                    let policy: ToolPolicy = serde_json::from_value(json!(policy)).unwrap();
                    agent.tool_approval.insert(key.into(), policy);
                }
                Tweak::NetworkAccess => agent.network_access = true,
                Tweak::PrivateHost(h) => agent.private_hosts.push(h.parse().unwrap()),
                Tweak::ToolAllowed(t) => {
                    tool_allowlist.insert(t.to_string());
                }
                Tweak::CommandAllowed(k) => {
                    command_allowlist.insert(k.parse::<ApprovalKey>().unwrap());
                }
                Tweak::NoKernelSupport => {
                    support = SandboxSupport {
                        landlock_abi: None,
                        user_namespaces: false,
                        bash: true,
                    }
                }
                Tweak::NoBash => support.bash = false,
                Tweak::AgentSandbox(s) => agent.sandbox = s.parse().unwrap(),
                Tweak::Denied(t) => agent.denied_tools.push(t.into()),
                Tweak::Classifier(reply) => {
                    classifier = Some(ClassifierReport::from_reply(reply, false))
                }
                Tweak::ClassifierFails => {
                    classifier = Some(ClassifierReport::failed("timed out after 8s"))
                }
            }
        }
    }
    let agent = &config.agents["a"];
    let toolset = Toolset::for_agent(agent, world.extra_tools.iter().map(String::as_str));
    let workspace = workspace_for(agent, Some("console:tester"));
    let roots = roots_for(&config, agent, &workspace);
    let ctx = GateContext {
        agent_name: "a",
        agent,
        dials: Dials {
            mode: row.mode.parse().unwrap(),
            sandbox: row.sandbox.parse().unwrap(),
        },
        roots: &roots,
        tool_allowlist: &tool_allowlist,
        command_allowlist: &command_allowlist,
        support,
    };
    let propose = ProposeContext {
        workspace,
        prefix_binaries: agent.prefix_binaries.clone(),
        roots: roots.clone(),
        sandbox: ctx.dials.sandbox,
        companions: Default::default(),
    };
    let decision = match evaluate(
        &ctx,
        &toolset,
        &world.registry,
        &propose,
        row.tool,
        &row.args,
    ) {
        Evaluation::Refused(refusal) => {
            return Outcome {
                decision: "error".into(),
                source: "toolset".into(),
                code: refusal.code().into(),
                always: None,
            };
        }
        Evaluation::Decided { decision, .. } => {
            assert!(
                classifier.is_none(),
                "the classifier was set up but not asked"
            );
            decision
        }
        Evaluation::Classify { deferred, .. } => deferred.finish(
            classifier.unwrap_or_else(|| ClassifierReport::not_run("no classifier in this row")),
        ),
    };
    Outcome {
        decision: decision.decision.to_string(),
        source: decision.source.to_string(),
        code: decision.reason_code.to_string(),
        always: Some(decision.always),
    }
}

fn path_in(world: &World, rel: &str) -> String {
    world.root.join(rel).display().to_string()
}

/// A shell command's arguments.
fn cmd(c: &str) -> Value {
    json!({"command": c})
}
