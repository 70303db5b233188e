//! Who decided, and why, as typed values: every decision carries one source and one reason code
//! into the audit log and into what the model is told.

use serde::{Serialize, Serializer};
use std::fmt;

/// Which layer of the resolution order answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DecisionSource {
    /// Step 1: the tool is not in the agent's toolset.
    Toolset,
    /// Step 2: the shell denylist.
    Denylist,
    /// Step 3: the sandbox rejects the call's effects.
    Sandbox,
    /// Steps 4 and 9: the tool's own declaration.
    Tool,
    /// Steps 5 and 10: the agent's `tool_approval` config.
    User,
    /// Step 6: the call offers options for a human to pick.
    Picker,
    /// Steps 7, 8 and 13: the approval mode.
    Mode,
    /// Steps 11 and 12: an "always" the session or agent saved.
    Allowlist,
    /// Step 13: the classifier set the tier.
    Classifier,
}

impl DecisionSource {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionSource::Toolset => "toolset",
            DecisionSource::Denylist => "denylist",
            DecisionSource::Sandbox => "sandbox",
            DecisionSource::Tool => "tool",
            DecisionSource::User => "user",
            DecisionSource::Picker => "picker",
            DecisionSource::Mode => "mode",
            DecisionSource::Allowlist => "allowlist",
            DecisionSource::Classifier => "classifier",
        }
    }
}

impl fmt::Display for DecisionSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The typed reason of a decision (design.md section 3, "Resolution order").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReasonCode {
    Toolset,
    /// `denylist:<rule>`
    Denylist(&'static str),
    /// A command past the size, nesting or work limit: nobody can judge it, so it is denied.
    TooComplex,
    SandboxWrite,
    SandboxRead,
    NetworkRequest,
    SandboxUnavailable,
    ToolPolicy,
    ConfigPolicy,
    Picker,
    PolicyAlways,
    ModeCeiling,
    Allowlist,
    ClassifierVerdict,
    DestructiveEffect,
    UnknownCommand,
    UntrustedMcpServer,
}

impl fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            ReasonCode::Toolset => "toolset",
            ReasonCode::Denylist(rule) => return write!(f, "denylist:{rule}"),
            ReasonCode::TooComplex => "too-complex",
            ReasonCode::SandboxWrite => "sandbox-write",
            ReasonCode::SandboxRead => "sandbox-read",
            ReasonCode::NetworkRequest => "network-request",
            ReasonCode::SandboxUnavailable => "sandbox-unavailable",
            ReasonCode::ToolPolicy => "tool-policy",
            ReasonCode::ConfigPolicy => "config-policy",
            ReasonCode::Picker => "picker",
            ReasonCode::PolicyAlways => "policy-always",
            ReasonCode::ModeCeiling => "mode-ceiling",
            ReasonCode::Allowlist => "allowlist",
            ReasonCode::ClassifierVerdict => "classifier-verdict",
            ReasonCode::DestructiveEffect => "destructive-effect",
            ReasonCode::UnknownCommand => "unknown-command",
            ReasonCode::UntrustedMcpServer => "untrusted-mcp-server",
        };
        f.write_str(text)
    }
}

impl Serialize for ReasonCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}
