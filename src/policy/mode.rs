//! The two dials: when to ask (approval mode) and what is structurally possible (sandbox).

use super::tier::Tier;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// When the gate asks a human. Ordered from the strictest to the most permissive.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    /// Every call that is not denied asks.
    Always,
    /// Read-only calls run unasked.
    ReadOnly,
    /// Read-only and low-risk calls run unasked.
    #[default]
    LowRisk,
    /// Everything runs unasked except what a rule above the mode still stops.
    #[serde(alias = "yolo")]
    HighRisk,
}

impl ApprovalMode {
    /// Whether a call of `tier` runs unasked in this mode (step 13 of the resolution order).
    #[must_use]
    pub fn admits(self, tier: Tier) -> bool {
        match self {
            ApprovalMode::Always => false,
            ApprovalMode::ReadOnly => tier <= Tier::ReadOnly,
            ApprovalMode::LowRisk => tier <= Tier::LowRisk,
            ApprovalMode::HighRisk => true,
        }
    }

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Always => "always",
            ApprovalMode::ReadOnly => "read-only",
            ApprovalMode::LowRisk => "low-risk",
            ApprovalMode::HighRisk => "high-risk",
        }
    }
}

impl fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ApprovalMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "always" => Ok(ApprovalMode::Always),
            "read-only" => Ok(ApprovalMode::ReadOnly),
            "low-risk" => Ok(ApprovalMode::LowRisk),
            "high-risk" | "yolo" => Ok(ApprovalMode::HighRisk),
            other => Err(format!(
                "unknown approval mode `{other}`; expected always, read-only, low-risk or high-risk (alias yolo)"
            )),
        }
    }
}

/// What a tool call can structurally do. Ordered from narrowest to widest.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxPolicy {
    /// No writes at all; the shell gets only a private temp dir.
    ReadOnly,
    /// Writes only under the session's workspace, `writable_roots` and a private temp dir;
    /// network off unless `network_access`.
    #[default]
    WorkspaceWrite,
    /// No limits; `network_access` does not apply.
    DangerFullAccess,
}

impl SandboxPolicy {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxPolicy::ReadOnly => "read-only",
            SandboxPolicy::WorkspaceWrite => "workspace-write",
            SandboxPolicy::DangerFullAccess => "danger-full-access",
        }
    }
}

impl fmt::Display for SandboxPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SandboxPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read-only" => Ok(SandboxPolicy::ReadOnly),
            "workspace-write" => Ok(SandboxPolicy::WorkspaceWrite),
            "danger-full-access" => Ok(SandboxPolicy::DangerFullAccess),
            other => Err(format!(
                "unknown sandbox `{other}`; expected read-only, workspace-write or danger-full-access"
            )),
        }
    }
}

/// The current values of both dials for one session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dials {
    pub mode: ApprovalMode,
    pub sandbox: SandboxPolicy,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceilings() {
        use Tier::*;
        let table = [
            (ApprovalMode::Always, [false, false, false, false]),
            (ApprovalMode::ReadOnly, [true, false, false, false]),
            (ApprovalMode::LowRisk, [true, true, false, false]),
            (ApprovalMode::HighRisk, [true, true, true, true]),
        ];
        for (mode, expect) in table {
            let got = [ReadOnly, LowRisk, HighRisk, Unknown].map(|t| mode.admits(t));
            assert_eq!(got, expect, "{mode}");
        }
        // Ordered as they admit: the lesser of two modes admits no tier the other refuses.
        for (a, _) in table {
            for (b, _) in table {
                let stricter = a.min(b);
                for tier in [ReadOnly, LowRisk, HighRisk, Unknown] {
                    assert!(!stricter.admits(tier) || (a.admits(tier) && b.admits(tier)));
                }
            }
        }
    }

    #[test]
    fn yolo_is_an_alias() {
        assert_eq!("yolo".parse::<ApprovalMode>(), Ok(ApprovalMode::HighRisk));
        let parsed: ApprovalMode = serde_json::from_str("\"yolo\"").unwrap_or(ApprovalMode::Always);
        assert_eq!(parsed, ApprovalMode::HighRisk);
    }
}
