//! One call through the gate, end to end: the toolset (step 1), the registry, the tool's
//! `propose` half, then the resolution order. `explain` and (with the tools issue) the executor
//! both go through here, so they cannot disagree.

use crate::config::{AgentConfig, Config};
use crate::policy::paths::canonical_root;
use crate::policy::resolve::{Deferred, GateContext, GateDecision, Resolution, decide};
use crate::policy::sandbox::Roots;
use crate::tools::{Proposal, ProposeContext, ToolRegistry, Toolset};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Why a call never reached a decision: the model is told, and nothing runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Step 1: the tool does not exist for this agent.
    NotInToolset(String),
    /// The arguments do not fit the tool.
    InvalidArguments(String),
}

impl Refusal {
    /// The typed reason code (`toolset`, or `invalid-arguments`).
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::NotInToolset(_) => "toolset",
            Refusal::InvalidArguments(_) => "invalid-arguments",
        }
    }

    #[must_use]
    pub fn message(&self) -> &str {
        match self {
            Refusal::NotInToolset(m) | Refusal::InvalidArguments(m) => m,
        }
    }
}

/// The outcome of evaluating one call.
#[derive(Clone, Debug)]
pub enum Evaluation {
    Refused(Refusal),
    Decided {
        proposal: Box<Proposal>,
        decision: GateDecision,
    },
    /// Only the classifier can finish this decision.
    Classify {
        proposal: Box<Proposal>,
        deferred: Deferred,
    },
}

/// Proposes and decides one call.
#[must_use]
pub fn evaluate(
    ctx: &GateContext<'_>,
    toolset: &Toolset,
    registry: &ToolRegistry,
    propose: &ProposeContext,
    tool: &str,
    args: &Value,
) -> Evaluation {
    if !toolset.contains(tool) {
        return Evaluation::Refused(Refusal::NotInToolset(format!(
            "`{tool}` is not a tool of agent {}; nothing ran",
            ctx.agent_name
        )));
    }
    let Some(implementation) = registry.get(tool) else {
        return Evaluation::Refused(Refusal::NotInToolset(format!(
            "`{tool}` is not available to agent {} right now; nothing ran",
            ctx.agent_name
        )));
    };
    let proposal = match implementation.propose(args, propose) {
        Ok(p) => p,
        Err(e) => return Evaluation::Refused(Refusal::InvalidArguments(e.to_string())),
    };
    match decide(ctx, &proposal.gate_call()) {
        Resolution::Decided(decision) => Evaluation::Decided {
            proposal: Box::new(proposal),
            decision,
        },
        Resolution::Classify(deferred) => Evaluation::Classify {
            proposal: Box::new(proposal),
            deferred,
        },
    }
}

/// The directory name of a session: `telegram:-100:5` → `telegram_-100_5`. Characters other
/// than letters, digits, `.` and `-` are `%XX`-escaped (`:` becomes `_`), so two keys never share
/// a directory and no key climbs out with `..`.
#[must_use]
pub fn session_dir_name(session: &str) -> String {
    let mut out = String::new();
    for (i, b) in session.bytes().enumerate() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' => out.push(char::from(b)),
            b'.' if i > 0 => out.push('.'),
            b':' => out.push('_'),
            other => out.push_str(&format!("%{other:02x}")),
        }
    }
    out
}

/// The workspace a call runs in: the agent's workspace, or a session's directory in it.
#[must_use]
pub fn workspace_for(agent: &AgentConfig, session: Option<&str>) -> PathBuf {
    let root = agent_workspace(agent);
    let dir = match session {
        Some(key) => root.join(session_dir_name(key)),
        None => root,
    };
    canonical_root(&dir)
}

/// A session's directory entry in the agent's workspace, itself not resolved: what deleting
/// the session's workspace removes (a link there goes, never what it points to).
#[must_use]
pub fn session_dir_entry(agent: &AgentConfig, session: &str) -> PathBuf {
    canonical_root(&agent_workspace(agent)).join(session_dir_name(session))
}

fn agent_workspace(agent: &AgentConfig) -> PathBuf {
    agent
        .workspace
        .clone()
        .unwrap_or_else(|| PathBuf::from("data/workspaces"))
}

/// The roots one call may touch in `workspace`; the store, the config file and `/proc` are
/// protected.
#[must_use]
pub fn roots_for(config: &Config, agent: &AgentConfig, workspace: &Path) -> Roots {
    let mut protected = vec![canonical_root(&config.store.path), PathBuf::from("/proc")];
    if let Some(source) = &config.source {
        protected.push(canonical_root(source));
    }
    Roots {
        workspace: workspace.to_path_buf(),
        writable: agent
            .writable_roots
            .iter()
            .map(|p| canonical_root(p))
            .collect(),
        readable: agent
            .readable_roots
            .iter()
            .map(|p| canonical_root(p))
            .collect(),
        protected,
    }
}

#[cfg(test)]
mod tests {
    use super::session_dir_name;

    #[test]
    fn session_dirs_are_distinct_and_contained() {
        assert_eq!(session_dir_name("telegram:-100:5"), "telegram_-100_5");
        assert_ne!(session_dir_name("a:b"), session_dir_name("a_b"));
        assert_eq!(session_dir_name(".."), "%2e.");
        assert!(!session_dir_name("x/../../etc").contains('/'));
    }
}
