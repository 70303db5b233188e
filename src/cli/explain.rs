//! `tollgate explain`: the gate's decision for one hypothetical call, as one JSON object.
//! Nothing runs and nothing is written.

use super::{Failure, Io, agent, load_config};
use crate::gate::{Evaluation, evaluate, roots_for, workspace_for};
use crate::policy::classifier::ClassifierReport;
use crate::policy::mode::{ApprovalMode, Dials, SandboxPolicy};
use crate::policy::resolve::{GateContext, GateDecision};
use crate::store::Allowlists;
use crate::tools::mcp::McpTool;
use crate::tools::{ProposeContext, ToolRegistry, Toolset};
use clap::{Args, ValueEnum};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// The agent whose gate decides.
    #[arg(long)]
    pub agent: String,
    /// The tool the model would call.
    #[arg(long)]
    pub tool: String,
    /// The call's arguments, as JSON.
    #[arg(long, default_value = "{}")]
    pub args: String,
    /// Where the call comes from (decides what context the classifier may see).
    #[arg(long, value_enum, default_value_t = Surface::Bridge)]
    pub surface: Surface,
    /// Override the session's approval mode for this call.
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<ApprovalMode>,
    /// Override the session's sandbox for this call.
    #[arg(long, value_parser = parse_sandbox)]
    pub sandbox: Option<SandboxPolicy>,
    /// Decide inside this session's workspace and with its allowlist (default: the workspace
    /// root, no session).
    #[arg(long)]
    pub session: Option<String>,
    /// Do not ask the classifier even where it could change the outcome.
    #[arg(long)]
    pub no_classifier: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Surface {
    Bridge,
    Console,
}

fn parse_mode(s: &str) -> Result<ApprovalMode, String> {
    s.parse()
}

fn parse_sandbox(s: &str) -> Result<SandboxPolicy, String> {
    s.parse()
}

pub fn run(
    config_path: Option<&Path>,
    args: &ExplainArgs,
    io: &mut Io,
) -> Result<ExitCode, Failure> {
    let config = load_config(config_path)?;
    let agent_config = agent(&config, &args.agent)?;
    let call_args: Value = serde_json::from_str(&args.args)
        .map_err(|e| Failure::usage(format!("--args is not valid JSON: {e}")))?;

    let (tool_allowlist, command_allowlist) = match io.existing_store(&config)? {
        Some(store) => {
            let lists = Allowlists::new(store);
            let tools = match &args.session {
                Some(s) => lists
                    .tools(s)
                    .map_err(|e| Failure::runtime(e.to_string()))?,
                None => BTreeSet::new(),
            };
            let keys = lists
                .command_keys(&args.agent)
                .map_err(|e| Failure::runtime(e.to_string()))?;
            (tools, keys)
        }
        None => (BTreeSet::new(), BTreeSet::new()),
    };

    // MCP servers are never started here: a tool named `mcp_<server>_<tool>` of a configured
    // server is judged as that server would offer it.
    let mut registry = ToolRegistry::builtin();
    let mut mcp_names = Vec::new();
    if let Some(rest) = args.tool.strip_prefix("mcp_") {
        for (server, server_config) in &agent_config.mcp {
            if let Some(remote) = rest
                .strip_prefix(server.as_str())
                .and_then(|r| r.strip_prefix('_'))
                .filter(|r| !r.is_empty())
            {
                let tool = McpTool::new(server, server_config, remote, "", json!({}));
                mcp_names.push(tool.name.clone());
                registry
                    .register(Arc::new(tool))
                    .map_err(|e| Failure::runtime(e.to_string()))?;
            }
        }
    }
    let toolset = Toolset::for_agent(agent_config, mcp_names.iter().map(String::as_str));

    let workspace = workspace_for(agent_config, args.session.as_deref());
    let roots = roots_for(&config, agent_config, &workspace);
    let dials = Dials {
        mode: args.mode.unwrap_or(agent_config.approval),
        sandbox: args.sandbox.unwrap_or(agent_config.sandbox),
    };
    let ctx = GateContext {
        agent_name: &args.agent,
        agent: agent_config,
        dials,
        roots: &roots,
        tool_allowlist: &tool_allowlist,
        command_allowlist: &command_allowlist,
        support: crate::sandbox::probe(),
    };
    let propose = ProposeContext {
        workspace,
        prefix_binaries: agent_config.prefix_binaries.clone(),
        roots: roots.clone(),
        sandbox: ctx.dials.sandbox,
        // What the config binds (bindings made on cards are in the service's store).
        companions: crate::tools::tool::CompanionView::for_agent(agent_config, Default::default()),
    };
    let output = match evaluate(&ctx, &toolset, &registry, &propose, &args.tool, &call_args) {
        Evaluation::Refused(refusal) => json!({
            "decision": "error",
            "source": if refusal.code() == "toolset" { json!("toolset") } else { Value::Null },
            "tier": null,
            "reason_code": refusal.code(),
            "reason": refusal.message(),
            "approval_key": null,
            "classifier": null,
        }),
        Evaluation::Decided { decision, .. } => decision_json(&decision),
        Evaluation::Classify { deferred, .. } => {
            let report = if args.no_classifier {
                ClassifierReport::not_run("--no-classifier was given")
            } else {
                classify(
                    &config,
                    &args.agent,
                    agent_config,
                    args.surface,
                    deferred.command(),
                )?
            };
            decision_json(&deferred.finish(report))
        }
    };
    io_say!(io, "{output}");
    Ok(ExitCode::SUCCESS)
}

/// Asks the agent's classifier model for real (the agent's provider, `classifier_model`).
fn classify(
    config: &crate::config::Config,
    agent_name: &str,
    agent: &crate::config::AgentConfig,
    surface: Surface,
    command: &str,
) -> Result<ClassifierReport, Failure> {
    use crate::agent::classifier::{ModelClassifier, Surface as ClassifierSurface};
    use crate::executor::Classifier;
    let provider = match crate::agent::setup::provider_for(config, agent_name) {
        Ok(provider) => provider,
        Err(e) => return Ok(ClassifierReport::not_run(e.to_string())),
    };
    let classifier = ModelClassifier {
        provider,
        model: agent
            .classifier_model
            .clone()
            .unwrap_or_else(|| agent.model.clone()),
        timeout: std::time::Duration::from_secs(agent.classifier_timeout_secs),
        surface: match surface {
            Surface::Console => ClassifierSurface::Console,
            Surface::Bridge => ClassifierSurface::Bridge,
        },
        depth: 0,
        user_messages: Arc::default(),
        cache: Arc::default(),
        events: None,
        usage: Arc::default(),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::runtime(format!("starting the async runtime: {e}")))?;
    Ok(runtime.block_on(classifier.classify(command)))
}

fn decision_json(decision: &GateDecision) -> Value {
    json!({
        "decision": decision.decision,
        "source": decision.source,
        "tier": decision.tier,
        "reason_code": decision.reason_code,
        "reason": decision.reason,
        "approval_key": decision.approval_key.as_ref().map(ToString::to_string),
        "classifier": decision.classifier,
        "always": decision.always,
    })
}
