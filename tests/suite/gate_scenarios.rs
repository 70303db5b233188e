//! The gate as a scenario table: mode × sandbox × tool × args × config → decision, source and
//! reason code. Every step of the resolution order appears, including each "deny always wins"
//! case and the prompts that mode `high-risk` cannot remove. Steps that need a tool-declared
//! policy use tools registered by this test.

use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::os::unix::fs::symlink;
use std::path::Path;
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

#[test]
fn scenario_table() {
    use Tweak::*;
    let w = world();
    let cmd = |c: &str| json!({"command": c});
    let rows = vec![
        // 1. toolset
        Row {
            mode: "high-risk",
            sandbox: "danger-full-access",
            tool: "no_such_tool",
            args: json!({}),
            tweaks: &[],
            expect: ("error", "toolset", "toolset"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "read_file",
            args: json!({"path": "x"}),
            tweaks: &[Denied("read_file")],
            expect: ("error", "toolset", "toolset"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "read_file",
            args: json!({"pth": "x"}),
            tweaks: &[],
            expect: ("error", "toolset", "invalid-arguments"),
        },
        // 2. denylist: denies in every mode, over a config allow
        Row {
            mode: "high-risk",
            sandbox: "danger-full-access",
            tool: "execute_command",
            args: cmd("rm -rf /"),
            tweaks: &[],
            expect: ("deny", "denylist", "denylist:rm-root"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("git status && sudo reboot"),
            tweaks: &[Config("execute_command", "allow")],
            expect: ("deny", "denylist", "denylist:privilege"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("cat /etc/shadow"),
            tweaks: &[CommandAllowed("=cat /etc/shadow")],
            expect: ("deny", "denylist", "denylist:secrets"),
        },
        // 3. sandbox: writes, reads, network, kernel, narrowed MCP
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "write_file",
            args: json!({"path": "/etc/x", "content": ""}),
            tweaks: &[],
            expect: ("deny", "sandbox", "sandbox-write"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "write_file",
            args: json!({"path": "/etc/x", "content": ""}),
            tweaks: &[Config("write_file", "allow")],
            expect: ("deny", "sandbox", "sandbox-write"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "write_file",
            args: json!({"path": "../../outside.txt", "content": ""}),
            tweaks: &[],
            expect: ("deny", "sandbox", "sandbox-write"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "read_file",
            args: json!({"path": "/etc/shadow"}),
            tweaks: &[],
            expect: ("deny", "sandbox", "sandbox-read"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "read_file",
            args: json!({"path": "../link-to-etc/passwd"}),
            tweaks: &[],
            expect: ("deny", "sandbox", "sandbox-read"),
        },
        Row {
            mode: "low-risk",
            sandbox: "read-only",
            tool: "mkdir",
            args: json!({"path": "sub"}),
            tweaks: &[],
            expect: ("deny", "sandbox", "sandbox-write"),
        },
        Row {
            mode: "high-risk",
            sandbox: "danger-full-access",
            tool: "read_file",
            args: json!({"path": "/proc/self/environ"}),
            tweaks: &[],
            expect: ("deny", "sandbox", "sandbox-read"),
        },
        Row {
            mode: "high-risk",
            sandbox: "danger-full-access",
            tool: "read_file",
            args: json!({"path": "../../store/db"}),
            tweaks: &[],
            expect: ("deny", "sandbox", "sandbox-read"),
        },
        Row {
            mode: "high-risk",
            sandbox: "danger-full-access",
            tool: "write_file",
            args: json!({"path": "../../tollgate.toml", "content": ""}),
            tweaks: &[],
            expect: ("deny", "sandbox", "sandbox-write"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "web_fetch",
            args: json!({"url": "https://example.com/"}),
            tweaks: &[],
            expect: ("deny", "sandbox", "network-request"),
        },
        Row {
            mode: "high-risk",
            sandbox: "read-only",
            tool: "http_request",
            args: json!({"method": "GET", "url": "https://example.com/"}),
            tweaks: &[Config("http_request", "allow")],
            expect: ("deny", "sandbox", "network-request"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("curl https://api.example.com/data"),
            tweaks: &[],
            expect: ("deny", "sandbox", "network-request"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("ls"),
            tweaks: &[NoKernelSupport],
            expect: ("deny", "sandbox", "sandbox-unavailable"),
        },
        Row {
            mode: "high-risk",
            sandbox: "read-only",
            tool: "execute_command",
            args: cmd("ls"),
            tweaks: &[NoKernelSupport],
            expect: ("deny", "sandbox", "sandbox-unavailable"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "mcp_fs_read",
            args: json!({}),
            tweaks: &[AgentSandbox("danger-full-access")],
            expect: ("deny", "sandbox", "sandbox-write"),
        },
        // ...and what the sandbox lets through
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "read_file",
            args: json!({"path": "notes.txt"}),
            tweaks: &[],
            expect: ("allow", "mode", "mode-ceiling"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "read_file",
            args: json!({"path": path_in(&w, "docs/guide.txt")}),
            tweaks: &[],
            expect: ("allow", "mode", "mode-ceiling"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "read_file",
            args: json!({"path": path_in(&w, "extra/x")}),
            tweaks: &[],
            expect: ("allow", "mode", "mode-ceiling"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "write_file",
            args: json!({"path": "../link-to-extra/f", "content": ""}),
            tweaks: &[],
            expect: ("allow", "mode", "mode-ceiling"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "write_file",
            args: json!({"path": path_in(&w, "docs/guide.txt"), "content": ""}),
            tweaks: &[],
            expect: ("deny", "sandbox", "sandbox-write"),
        },
        Row {
            mode: "low-risk",
            sandbox: "danger-full-access",
            tool: "write_file",
            args: json!({"path": "/etc/x", "content": ""}),
            tweaks: &[],
            expect: ("prompt", "mode", "mode-ceiling"),
        },
        Row {
            mode: "low-risk",
            sandbox: "danger-full-access",
            tool: "web_fetch",
            args: json!({"url": "https://example.com/"}),
            tweaks: &[],
            expect: ("allow", "mode", "mode-ceiling"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "web_fetch",
            args: json!({"url": "https://example.com/"}),
            tweaks: &[NetworkAccess],
            expect: ("allow", "mode", "mode-ceiling"),
        },
        Row {
            mode: "low-risk",
            sandbox: "danger-full-access",
            tool: "execute_command",
            args: cmd("ls"),
            tweaks: &[NoKernelSupport, Classifier("read-only")],
            expect: ("allow", "classifier", "classifier-verdict"),
        },
        // 4. the tool declares deny — even in high-risk mode
        Row {
            mode: "high-risk",
            sandbox: "danger-full-access",
            tool: "probe_deny",
            args: json!({}),
            tweaks: &[Config("probe_deny", "allow")],
            expect: ("deny", "tool", "tool-policy"),
        },
        // 5. the config denies — even in high-risk mode
        Row {
            mode: "high-risk",
            sandbox: "danger-full-access",
            tool: "write_file",
            args: json!({"path": "x", "content": ""}),
            tweaks: &[Config("write_file", "deny")],
            expect: ("deny", "user", "config-policy"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "probe_keyed",
            args: json!({}),
            tweaks: &[Config("shared_key", "deny")],
            expect: ("deny", "user", "config-policy"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "mcp_git_log",
            args: json!({}),
            tweaks: &[Config("mcp_git_log", "deny")],
            expect: ("deny", "user", "config-policy"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "probe_allow",
            args: json!({}),
            tweaks: &[Config("probe_allow", "deny")],
            expect: ("deny", "user", "config-policy"),
        },
        // 6. a picker prompts in every mode
        Row {
            mode: "high-risk",
            sandbox: "danger-full-access",
            tool: "probe_picker",
            args: json!({}),
            tweaks: &[],
            expect: ("prompt", "picker", "picker"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "probe_picker",
            args: json!({}),
            tweaks: &[Config("probe_picker", "allow")],
            expect: ("prompt", "picker", "picker"),
        },
        // 7. mode always
        Row {
            mode: "always",
            sandbox: "workspace-write",
            tool: "read_file",
            args: json!({"path": "notes.txt"}),
            tweaks: &[],
            expect: ("prompt", "mode", "policy-always"),
        },
        Row {
            mode: "always",
            sandbox: "workspace-write",
            tool: "read_file",
            args: json!({"path": "notes.txt"}),
            tweaks: &[Config("read_file", "allow"), ToolAllowed("read_file")],
            expect: ("prompt", "mode", "policy-always"),
        },
        // 8. mode high-risk: the tool's allow/prompt, else the config's, else allow
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "probe_prompt",
            args: json!({}),
            tweaks: &[],
            expect: ("prompt", "tool", "tool-policy"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "write_file",
            args: json!({"path": "x", "content": ""}),
            tweaks: &[Config("write_file", "prompt")],
            expect: ("prompt", "user", "config-policy"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "probe_prompt",
            args: json!({}),
            tweaks: &[Config("probe_prompt", "allow")],
            expect: ("prompt", "tool", "tool-policy"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "probe_override",
            args: json!({}),
            tweaks: &[],
            expect: ("allow", "mode", "mode-ceiling"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "write_file",
            args: json!({"path": "x", "content": ""}),
            tweaks: &[],
            expect: ("allow", "mode", "mode-ceiling"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("rm -rf ./build"),
            tweaks: &[],
            expect: ("allow", "mode", "mode-ceiling"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "mcp_fs_read",
            args: json!({}),
            tweaks: &[],
            expect: ("allow", "mode", "mode-ceiling"),
        },
        // 9. the tool's override or policy
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "probe_override",
            args: json!({}),
            tweaks: &[Config("probe_override", "allow")],
            expect: ("prompt", "tool", "tool-policy"),
        },
        Row {
            mode: "read-only",
            sandbox: "workspace-write",
            tool: "probe_override_allow",
            args: json!({}),
            tweaks: &[],
            expect: ("allow", "tool", "tool-policy"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "probe_allow",
            args: json!({}),
            tweaks: &[],
            expect: ("allow", "tool", "tool-policy"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "probe_prompt",
            args: json!({}),
            tweaks: &[ToolAllowed("probe_prompt")],
            expect: ("prompt", "tool", "tool-policy"),
        },
        // 10. the config's allow/prompt
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "write_file",
            args: json!({"path": "x", "content": ""}),
            tweaks: &[Config("write_file", "allow")],
            expect: ("allow", "user", "config-policy"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "read_file",
            args: json!({"path": "notes.txt"}),
            tweaks: &[Config("read_file", "prompt")],
            expect: ("prompt", "user", "config-policy"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("rm -rf ./build"),
            tweaks: &[Config("execute_command", "allow")],
            expect: ("allow", "user", "config-policy"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "read_file",
            args: json!({"path": "notes.txt"}),
            tweaks: &[Config("read_file", "prompt"), ToolAllowed("read_file")],
            expect: ("prompt", "user", "config-policy"),
        },
        // 11. "always this tool" in this session — never for an unknown-tier tool
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "write_file",
            args: json!({"path": "x", "content": ""}),
            tweaks: &[ToolAllowed("write_file")],
            expect: ("allow", "allowlist", "allowlist"),
        },
        Row {
            mode: "read-only",
            sandbox: "workspace-write",
            tool: "mcp_fs_read",
            args: json!({}),
            tweaks: &[ToolAllowed("mcp_fs_read")],
            expect: ("allow", "allowlist", "allowlist"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("ls -la"),
            tweaks: &[ToolAllowed("execute_command")],
            expect: ("prompt", "mode", "unknown-command"),
        },
        // 12. an unknown command: the pre-check, the command allowlist, the classifier
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("rm -rf ./build"),
            tweaks: &[],
            expect: ("prompt", "mode", "destructive-effect"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("git status > out.txt"),
            tweaks: &[CommandAllowed("git status")],
            expect: ("prompt", "mode", "destructive-effect"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("git status --short"),
            tweaks: &[CommandAllowed("git status")],
            expect: ("allow", "allowlist", "allowlist"),
        },
        // A saved prefix key never covers an argument that runs code, nor code hidden behind
        // options or a prefix variable; the pre-check decides them, not the classifier.
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("git pull --upload-pack='touch pwned' origin"),
            tweaks: &[CommandAllowed("git pull")],
            expect: ("prompt", "mode", "destructive-effect"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("git -c core.pager='sh -c id' log"),
            tweaks: &[CommandAllowed("git log")],
            expect: ("prompt", "mode", "destructive-effect"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("GIT_PAGER='sh -c id' git log"),
            tweaks: &[CommandAllowed("git log")],
            expect: ("prompt", "mode", "destructive-effect"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("python3 -W ignore -c 'import os'"),
            tweaks: &[],
            expect: ("prompt", "mode", "destructive-effect"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("find . -name x -fprint out.txt"),
            tweaks: &[],
            expect: ("prompt", "mode", "destructive-effect"),
        },
        // Too complex to judge: denied in every mode, whatever is allowed.
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd(&format!("echo {}x{}", "$(".repeat(60), ")".repeat(60))),
            tweaks: &[Config("execute_command", "allow")],
            expect: ("deny", "denylist", "too-complex"),
        },
        Row {
            mode: "high-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd(&format!("{}rm -rf /", "eval ".repeat(60))),
            tweaks: &[],
            expect: ("deny", "denylist", "too-complex"),
        },
        Row {
            mode: "low-risk",
            sandbox: "danger-full-access",
            tool: "execute_command",
            args: cmd(&format!("echo {}", "a".repeat(70_000))),
            tweaks: &[],
            expect: ("deny", "denylist", "too-complex"),
        },
        // No bash: the shell tool is unavailable, in every mode.
        Row {
            mode: "high-risk",
            sandbox: "danger-full-access",
            tool: "execute_command",
            args: cmd("ls"),
            tweaks: &[NoBash],
            expect: ("deny", "sandbox", "sandbox-unavailable"),
        },
        Row {
            mode: "read-only",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("rm old.log"),
            tweaks: &[CommandAllowed("=rm old.log")],
            expect: ("allow", "allowlist", "allowlist"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("rm old.log new.log"),
            tweaks: &[CommandAllowed("=rm old.log")],
            expect: ("prompt", "mode", "unknown-command"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("git push"),
            tweaks: &[CommandAllowed("git status")],
            expect: ("prompt", "mode", "unknown-command"),
        },
        // 13. the tier against the ceiling (with the classifier's tier where it set one)
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("ls -la"),
            tweaks: &[Classifier("read-only")],
            expect: ("allow", "classifier", "classifier-verdict"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("touch x"),
            tweaks: &[Classifier("low-risk")],
            expect: ("allow", "classifier", "classifier-verdict"),
        },
        Row {
            mode: "read-only",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("touch x"),
            tweaks: &[Classifier("low-risk")],
            expect: ("prompt", "mode", "classifier-verdict"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("make deploy"),
            tweaks: &[Classifier("high-risk")],
            expect: ("prompt", "mode", "classifier-verdict"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("ls"),
            tweaks: &[Classifier("Sure! This is read-only.")],
            expect: ("prompt", "mode", "classifier-verdict"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("ls"),
            tweaks: &[ClassifierFails],
            expect: ("prompt", "mode", "classifier-verdict"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "execute_command",
            args: cmd("ls"),
            tweaks: &[],
            expect: ("prompt", "mode", "unknown-command"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "read_file",
            args: json!({"path": "notes.txt"}),
            tweaks: &[],
            expect: ("allow", "mode", "mode-ceiling"),
        },
        Row {
            mode: "read-only",
            sandbox: "workspace-write",
            tool: "mkdir",
            args: json!({"path": "sub"}),
            tweaks: &[],
            expect: ("prompt", "mode", "mode-ceiling"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "mkdir",
            args: json!({"path": "sub"}),
            tweaks: &[],
            expect: ("allow", "mode", "mode-ceiling"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "manage_todos",
            args: json!({"action": "add", "text": "x"}),
            tweaks: &[],
            expect: ("allow", "mode", "mode-ceiling"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "write_file",
            args: json!({"path": "x", "content": ""}),
            tweaks: &[],
            expect: ("prompt", "mode", "mode-ceiling"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "http_request",
            args: json!({"method": "HEAD", "url": "http://x/"}),
            tweaks: &[NetworkAccess],
            expect: ("allow", "mode", "mode-ceiling"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "http_request",
            args: json!({"method": "POST", "url": "http://x/"}),
            tweaks: &[NetworkAccess],
            expect: ("prompt", "mode", "mode-ceiling"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "mcp_fs_read",
            args: json!({}),
            tweaks: &[],
            expect: ("prompt", "mode", "untrusted-mcp-server"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "mcp_git_log",
            args: json!({}),
            tweaks: &[],
            expect: ("allow", "mode", "mode-ceiling"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "mcp_git_commit",
            args: json!({}),
            tweaks: &[],
            expect: ("prompt", "mode", "mode-ceiling"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "probe_silent",
            args: json!({}),
            tweaks: &[],
            expect: ("prompt", "mode", "mode-ceiling"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "probe_malformed",
            args: json!({}),
            tweaks: &[],
            expect: ("prompt", "mode", "mode-ceiling"),
        },
        Row {
            mode: "low-risk",
            sandbox: "workspace-write",
            tool: "probe_low",
            args: json!({}),
            tweaks: &[],
            expect: ("allow", "mode", "mode-ceiling"),
        },
        Row {
            mode: "read-only",
            sandbox: "workspace-write",
            tool: "probe_low",
            args: json!({}),
            tweaks: &[],
            expect: ("prompt", "mode", "mode-ceiling"),
        },
    ];
    let mut failures = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let got = run(&w, row);
        let got_triple = (
            got.decision.as_str(),
            got.source.as_str(),
            got.code.as_str(),
        );
        if got_triple != row.expect {
            failures.push(format!(
                "row {i}: {} {} {} {} → expected {:?}, got {:?}",
                row.mode, row.sandbox, row.tool, row.args, row.expect, got_triple
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} rows fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The "Always" row is offered only on a prompt decided by the mode's ceiling.
#[test]
fn always_offers() {
    use Tweak::*;
    let w = world();
    let offer = |mode: &'static str, tool: &'static str, args: Value, tweaks: &'static [Tweak]| {
        run(
            &w,
            &Row {
                mode,
                sandbox: "workspace-write",
                tool,
                args,
                tweaks,
                expect: ("", "", ""),
            },
        )
        .always
    };
    let write = || json!({"path": "x", "content": ""});
    assert_eq!(
        offer("low-risk", "write_file", write(), &[]),
        Some(AlwaysOffer::Tool)
    );
    assert_eq!(
        offer(
            "low-risk",
            "write_file",
            write(),
            &[Config("write_file", "prompt")]
        ),
        Some(AlwaysOffer::None)
    );
    assert_eq!(
        offer("always", "write_file", write(), &[]),
        Some(AlwaysOffer::None)
    );
    assert_eq!(
        offer("low-risk", "probe_picker", json!({}), &[]),
        Some(AlwaysOffer::None)
    );
    assert_eq!(
        offer(
            "low-risk",
            "execute_command",
            json!({"command": "git status"}),
            &[]
        ),
        Some(AlwaysOffer::Command("git status".parse().unwrap()))
    );
    assert_eq!(
        offer(
            "low-risk",
            "execute_command",
            json!({"command": "rm old.log"}),
            &[Classifier("high-risk")]
        ),
        Some(AlwaysOffer::Command("=rm old.log".parse().unwrap()))
    );
    // A hazardous command has no key, and no "Always: this tool" either (it is unknown-tier).
    assert_eq!(
        offer(
            "low-risk",
            "execute_command",
            json!({"command": "rm -rf ./build"}),
            &[]
        ),
        Some(AlwaysOffer::None)
    );
    assert_eq!(
        offer("low-risk", "read_file", json!({"path": "notes.txt"}), &[]),
        Some(AlwaysOffer::None)
    );
}

#[test]
fn session_workspaces_are_inside_the_agent_workspace() {
    let w = world();
    let agent = &w.config.agents["a"];
    let ws = workspace_for(agent, Some("telegram:-100:7"));
    assert!(ws.starts_with(w.root.join("ws")));
    assert!(Path::new(&ws).ends_with("telegram_-100_7"));
}
