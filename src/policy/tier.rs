//! How risky a tool call is, and what the gate answers. Plain data: the order of the variants is
//! the order of strictness, so the verdict of several findings is their `max`.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The risk of one tool call. `Unknown` is a shell command nobody has classified yet: it sits
/// above every mode's ceiling except `high-risk`'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tier {
    /// Observes, changes nothing.
    ReadOnly,
    /// Changes only the agent's own bookkeeping (todos, memory, reminders, `mkdir`).
    LowRisk,
    /// Writes files, talks to the network, runs other agents.
    HighRisk,
    /// A shell command before classification.
    Unknown,
}

impl Tier {
    /// The kebab-case name users type and the audit log shows.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::ReadOnly => "read-only",
            Tier::LowRisk => "low-risk",
            Tier::HighRisk => "high-risk",
            Tier::Unknown => "unknown",
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Tier {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read-only" => Ok(Tier::ReadOnly),
            "low-risk" => Ok(Tier::LowRisk),
            "high-risk" => Ok(Tier::HighRisk),
            "unknown" => Ok(Tier::Unknown),
            other => Err(format!(
                "unknown tier `{other}`; expected read-only, low-risk or high-risk"
            )),
        }
    }
}

/// What the gate answers for one call. Ordered by strictness: `max` of findings is the verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    /// Runs without asking.
    Allow,
    /// Waits for a human.
    Prompt,
    /// Never runs.
    Deny,
}

impl Decision {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Prompt => "prompt",
            Decision::Deny => "deny",
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A policy a tool declares or the config sets for a policy key (`tool_approval`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolPolicy {
    /// Run unasked.
    Allow,
    /// Ask a human.
    Prompt,
    /// Never run.
    Deny,
}

impl ToolPolicy {
    /// The decision this policy asks for.
    #[must_use]
    pub fn decision(self) -> Decision {
        match self {
            ToolPolicy::Allow => Decision::Allow,
            ToolPolicy::Prompt => Decision::Prompt,
            ToolPolicy::Deny => Decision::Deny,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strictest_wins_by_order() {
        assert_eq!(
            [Decision::Allow, Decision::Deny, Decision::Prompt]
                .iter()
                .max(),
            Some(&Decision::Deny)
        );
        assert!(Tier::ReadOnly < Tier::LowRisk && Tier::LowRisk < Tier::HighRisk);
        assert!(Tier::HighRisk < Tier::Unknown);
    }

    #[test]
    fn tier_names_round_trip() {
        for tier in [Tier::ReadOnly, Tier::LowRisk, Tier::HighRisk, Tier::Unknown] {
            assert_eq!(tier.as_str().parse::<Tier>(), Ok(tier));
        }
        assert!("medium".parse::<Tier>().is_err());
    }
}
