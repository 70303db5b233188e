//! The resolution order (design.md section 3): the first step that decides wins, and every deny
//! comes before any allow. Step 1 (the toolset) is checked before a call is proposed; this
//! function takes the proposal from step 2 on. It is pure: it reads the dials, the allowlists
//! and the proposal, and never waits — where the classifier could change the outcome it returns
//! [`Resolution::Classify`] and the caller finishes the decision with the classifier's report.

use super::classifier::ClassifierReport;
use super::declaration::{Declaration, McpOrigin};
use super::effect::Effect;
use super::mode::{ApprovalMode, Dials, SandboxPolicy};
use super::reason::{DecisionSource, ReasonCode};
use super::sandbox::{Network, Roots, SandboxSupport, check_effects, network_denial};
use super::shell::ShellAnalysis;
use super::shell::approval_key::ApprovalKey;
use super::tier::{Decision, Tier, ToolPolicy};
use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt;

/// What the gate reads of an agent's settings. The config implements it, so the resolution
/// depends on these answers, not on the config's layout.
pub trait AgentPolicy: fmt::Debug {
    /// The agent's own allow / deny / prompt for a policy key (`tool_approval`), if it set one.
    fn tool_policy(&self, policy_key: &str) -> Option<ToolPolicy>;
    /// The agent's sandbox: a session narrowed below it turns untrusted MCP tools off.
    fn sandbox(&self) -> SandboxPolicy;
    /// Whether the agent's commands may reach the network.
    fn network_access(&self) -> bool;
    /// Non-public hosts the agent's web tools may reach (`private_hosts`).
    fn private_hosts(&self) -> &[super::private_hosts::HostPattern];
}

/// What the gate reads besides the call.
#[derive(Clone, Copy, Debug)]
pub struct GateContext<'a> {
    pub agent_name: &'a str,
    pub agent: &'a dyn AgentPolicy,
    /// The session's current mode and sandbox (read now, not captured at run start).
    pub dials: Dials,
    pub roots: &'a Roots,
    /// "Always approve this tool" choices of this session.
    pub tool_allowlist: &'a BTreeSet<String>,
    /// The agent's saved command keys.
    pub command_allowlist: &'a BTreeSet<ApprovalKey>,
    pub support: SandboxSupport,
}

/// The call as the gate sees it (built from a proposal).
#[derive(Clone, Copy, Debug)]
pub struct GateCall<'a> {
    pub tool: &'a str,
    pub declaration: &'a Declaration,
    pub effects: &'a [Effect],
    pub has_options: bool,
    pub shell: Option<&'a ShellAnalysis>,
    pub mcp: Option<&'a McpOrigin>,
}

/// Which "Always" a prompt may offer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "key")]
pub enum AlwaysOffer {
    /// No "Always" row: it would change nothing (or is never offered here).
    None,
    /// "Always: this tool (this session)".
    Tool,
    /// "Always: `git status …` (agent X)" for this command key.
    Command(ApprovalKey),
}

/// The gate's answer for one call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GateDecision {
    pub decision: Decision,
    pub source: DecisionSource,
    pub tier: Tier,
    pub reason_code: ReasonCode,
    /// What the model and the card are told.
    pub reason: String,
    pub approval_key: Option<ApprovalKey>,
    pub classifier: Option<ClassifierReport>,
    pub always: AlwaysOffer,
}

/// A decision, or the classifier's turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolution {
    Decided(GateDecision),
    Classify(Deferred),
}

/// A decision waiting only for the classifier (steps 12–13 for an unclassified command).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deferred {
    mode: ApprovalMode,
    approval_key: Option<ApprovalKey>,
    command: String,
}

impl Deferred {
    /// The command to classify, without its comments.
    #[must_use]
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Finishes the decision with what the classifier said (or that it was not asked).
    #[must_use]
    pub fn finish(self, report: ClassifierReport) -> GateDecision {
        let always = self
            .approval_key
            .clone()
            .map_or(AlwaysOffer::None, AlwaysOffer::Command);
        let Some(verdict) = report.verdict else {
            return GateDecision {
                decision: Decision::Prompt,
                source: DecisionSource::Mode,
                tier: Tier::Unknown,
                reason_code: ReasonCode::UnknownCommand,
                reason: "nobody classified this command, so it needs a human".into(),
                approval_key: self.approval_key,
                classifier: Some(report),
                always,
            };
        };
        let (decision, source) = if self.mode.admits(verdict) {
            (Decision::Allow, DecisionSource::Classifier)
        } else {
            (Decision::Prompt, DecisionSource::Mode)
        };
        let reason = match (&report.note, decision) {
            (Some(note), _) => {
                format!("the classifier failed ({note}), so the command counts as high-risk")
            }
            (None, Decision::Allow) => format!(
                "the classifier placed it at {verdict}, within mode {}",
                self.mode
            ),
            (None, _) => format!(
                "the classifier placed it at {verdict}, above mode {}'s ceiling",
                self.mode
            ),
        };
        GateDecision {
            decision,
            source,
            tier: verdict,
            reason_code: ReasonCode::ClassifierVerdict,
            reason,
            approval_key: self.approval_key,
            classifier: Some(report),
            always: if decision == Decision::Prompt {
                always
            } else {
                AlwaysOffer::None
            },
        }
    }
}

/// Runs steps 2–13 for one proposed call.
#[must_use]
pub fn decide(ctx: &GateContext<'_>, call: &GateCall<'_>) -> Resolution {
    let approval_key = call.shell.and_then(|s| s.approval_key.clone());
    let tier = call.declaration.tier;
    let verdict = |decision, source, tier, reason_code, reason: String| {
        Resolution::Decided(GateDecision {
            decision,
            source,
            tier,
            reason_code,
            reason,
            approval_key: approval_key.clone(),
            classifier: None,
            always: AlwaysOffer::None,
        })
    };
    let deny =
        |source, reason_code, reason| verdict(Decision::Deny, source, tier, reason_code, reason);
    let policy_key = call.declaration.policy_key.as_deref().unwrap_or(call.tool);
    let agent = ctx.agent_name;

    // 2. The shell denylist, in every mode; a command too large or too tangled to judge in
    // bounded time is denied the same way.
    if let Some(why) = call.shell.and_then(|s| s.too_complex.as_ref()) {
        return deny(
            DecisionSource::Denylist,
            ReasonCode::TooComplex,
            format!("too complex to judge: {why}; split it into simpler commands"),
        );
    }
    if let Some(hit) = call.shell.and_then(|s| s.denied.as_ref()) {
        return deny(
            DecisionSource::Denylist,
            ReasonCode::Denylist(hit.rule),
            format!("blocked by the shell denylist: {}", hit.message),
        );
    }
    // 3. The sandbox.
    if let Some((code, reason)) = sandbox_step(ctx, call) {
        return deny(DecisionSource::Sandbox, code, reason);
    }
    // 4. The tool declares deny.
    if call.declaration.policy == Some(ToolPolicy::Deny) {
        return deny(
            DecisionSource::Tool,
            ReasonCode::ToolPolicy,
            declared_reason(call.declaration, "the tool declares deny for this call"),
        );
    }
    // 5. The config denies the policy key.
    let config_policy = ctx.agent.tool_policy(policy_key);
    if config_policy == Some(ToolPolicy::Deny) {
        return deny(
            DecisionSource::User,
            ReasonCode::ConfigPolicy,
            format!("agent {agent}'s tool_approval denies `{policy_key}`"),
        );
    }
    // 6. A picker always asks.
    if call.has_options {
        return verdict(
            Decision::Prompt,
            DecisionSource::Picker,
            tier,
            ReasonCode::Picker,
            "the call offers options for a human to pick".into(),
        );
    }
    let mode = ctx.dials.mode;
    // 7. Mode `always`.
    if mode == ApprovalMode::Always {
        return verdict(
            Decision::Prompt,
            DecisionSource::Mode,
            tier,
            ReasonCode::PolicyAlways,
            "mode `always` asks before every call".into(),
        );
    }
    // 8. Mode `high-risk`: the tool's allow/prompt, else the config's, else allow.
    if mode == ApprovalMode::HighRisk {
        if let Some(policy) = soft(call.declaration.policy) {
            return verdict(
                policy.decision(),
                DecisionSource::Tool,
                tier,
                ReasonCode::ToolPolicy,
                declared_reason(
                    call.declaration,
                    &format!("the tool declares {}", policy.decision()),
                ),
            );
        }
        if let Some(policy) = soft(config_policy) {
            return verdict(
                policy.decision(),
                DecisionSource::User,
                tier,
                ReasonCode::ConfigPolicy,
                format!(
                    "agent {agent}'s tool_approval says {} for `{policy_key}`",
                    policy.decision()
                ),
            );
        }
        return verdict(
            Decision::Allow,
            DecisionSource::Mode,
            tier,
            ReasonCode::ModeCeiling,
            "mode `high-risk` runs every call no rule stops".into(),
        );
    }
    // 9. The tool's override or allow/prompt policy.
    if call.declaration.override_policy || soft(call.declaration.policy).is_some() {
        let decision = if call.declaration.policy == Some(ToolPolicy::Allow) {
            Decision::Allow
        } else {
            Decision::Prompt
        };
        return verdict(
            decision,
            DecisionSource::Tool,
            tier,
            ReasonCode::ToolPolicy,
            declared_reason(call.declaration, &format!("the tool declares {decision}")),
        );
    }
    // 10. The config's allow/prompt.
    if let Some(policy) = soft(config_policy) {
        return verdict(
            policy.decision(),
            DecisionSource::User,
            tier,
            ReasonCode::ConfigPolicy,
            format!(
                "agent {agent}'s tool_approval says {} for `{policy_key}`",
                policy.decision()
            ),
        );
    }
    // 11. "Always approve this tool" in this session (never for an unknown-tier tool).
    if tier != Tier::Unknown && ctx.tool_allowlist.contains(call.tool) {
        return verdict(
            Decision::Allow,
            DecisionSource::Allowlist,
            tier,
            ReasonCode::Allowlist,
            format!("`{}` was approved for the rest of this session", call.tool),
        );
    }
    // 12. An unclassified command: the pre-check, the command allowlist, then the classifier.
    if tier == Tier::Unknown {
        let Some(shell) = call.shell else {
            return Resolution::Classify(Deferred {
                mode,
                approval_key,
                command: String::new(),
            });
        };
        if let Some(hazard) = &shell.high_risk {
            return ceiling(
                mode,
                Tier::HighRisk,
                ReasonCode::DestructiveEffect,
                format!("high-risk without asking the classifier: {hazard}"),
                AlwaysOffer::None,
                approval_key.clone(),
            );
        }
        if let Some(key) = &approval_key
            && ctx.command_allowlist.contains(key)
        {
            return verdict(
                Decision::Allow,
                DecisionSource::Allowlist,
                tier,
                ReasonCode::Allowlist,
                format!("agent {agent} always approves {}", key.describe()),
            );
        }
        return Resolution::Classify(Deferred {
            mode,
            approval_key,
            command: shell.classifier_text.clone(),
        });
    }
    // 13. The tier against the mode's ceiling.
    let (code, reason) = match call.mcp {
        Some(origin) if !origin.trusted => (
            ReasonCode::UntrustedMcpServer,
            format!(
                "tools of the untrusted MCP server `{}` are high-risk (mark it `trusted` with a `tier` to change that)",
                origin.server
            ),
        ),
        _ => (
            ReasonCode::ModeCeiling,
            format!("`{}` is {tier}", call.tool),
        ),
    };
    ceiling(mode, tier, code, reason, AlwaysOffer::Tool, approval_key)
}

/// Step 13: allow within the mode's ceiling, else prompt (with the "Always" this prompt offers).
fn ceiling(
    mode: ApprovalMode,
    tier: Tier,
    prompt_code: ReasonCode,
    reason: String,
    offer: AlwaysOffer,
    approval_key: Option<ApprovalKey>,
) -> Resolution {
    let within = mode.admits(tier);
    Resolution::Decided(GateDecision {
        decision: if within {
            Decision::Allow
        } else {
            Decision::Prompt
        },
        source: DecisionSource::Mode,
        tier,
        reason_code: if within {
            ReasonCode::ModeCeiling
        } else {
            prompt_code
        },
        reason: if within {
            format!("{reason}, within mode {mode}")
        } else {
            format!("{reason}, above mode {mode}'s ceiling")
        },
        approval_key,
        classifier: None,
        always: if within { AlwaysOffer::None } else { offer },
    })
}

/// An allow or prompt policy (a deny was handled before).
fn soft(policy: Option<ToolPolicy>) -> Option<ToolPolicy> {
    policy.filter(|p| *p != ToolPolicy::Deny)
}

fn declared_reason(declaration: &Declaration, fallback: &str) -> String {
    declaration
        .reason
        .clone()
        .unwrap_or_else(|| fallback.to_string())
}

/// Step 3: file and network effects, the shell's network clients and the kernel's support, and
/// untrusted MCP servers in a session narrowed below the agent's sandbox.
fn sandbox_step(ctx: &GateContext<'_>, call: &GateCall<'_>) -> Option<(ReasonCode, String)> {
    let sandbox = ctx.dials.sandbox;
    if let Some(shell) = call.shell {
        if !ctx.support.bash {
            return Some((
                ReasonCode::SandboxUnavailable,
                super::sandbox::NO_BASH.to_string(),
            ));
        }
        if let Some(shortfall) = ctx.support.shortfall(sandbox) {
            return Some((ReasonCode::SandboxUnavailable, shortfall));
        }
        if shell.network
            && let Some(denial) = network_denial(
                sandbox,
                ctx.agent.network_access(),
                ctx.agent_name,
                &shell.command,
            )
        {
            return Some(denial);
        }
    }
    if let Some(origin) = call.mcp
        && !origin.trusted
        && sandbox < ctx.agent.sandbox()
    {
        return Some((
            ReasonCode::SandboxWrite,
            format!(
                "this session's sandbox is `{sandbox}`, narrower than agent {}'s `{}`; the untrusted MCP server `{}` runs under the agent's sandbox, so its tools are off until `/sandbox` restores it",
                ctx.agent_name,
                ctx.agent.sandbox(),
                origin.server
            ),
        ));
    }
    check_effects(
        call.effects,
        sandbox,
        ctx.roots,
        &Network {
            access: ctx.agent.network_access(),
            private_hosts: ctx.agent.private_hosts(),
        },
        ctx.agent_name,
    )
}
