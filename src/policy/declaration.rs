//! What a tool declares about one call: its tier, and optionally a policy, an override, a
//! reason for the card, and the config key that governs it. Declaring nothing, or something
//! malformed, makes the call high-risk: fail closed.

use super::tier::{Tier, ToolPolicy};
use serde_json::Value;

/// The MCP server a tool comes from, and whether the config trusts it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpOrigin {
    pub server: String,
    pub trusted: bool,
}

/// A tool's declaration for one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declaration {
    pub tier: Tier,
    /// allow | deny | prompt, if the tool has an opinion.
    pub policy: Option<ToolPolicy>,
    /// Force the tool's answer (allow if its policy is allow, else prompt) over the config's
    /// allow; ignored in mode `high-risk`.
    pub override_policy: bool,
    /// Shown on the approval card.
    pub reason: Option<String>,
    /// The `tool_approval` key that governs the call; the tool's name when absent.
    pub policy_key: Option<String>,
}

impl Default for Declaration {
    /// A tool that declares nothing is high-risk.
    fn default() -> Self {
        Declaration::tier(Tier::HighRisk)
    }
}

impl Declaration {
    /// A declaration of only a tier.
    #[must_use]
    pub fn tier(tier: Tier) -> Self {
        Declaration {
            tier,
            policy: None,
            override_policy: false,
            reason: None,
            policy_key: None,
        }
    }

    /// Reads a declaration written as JSON (`{"tier": "read-only", "policy": "prompt", …}`), as
    /// tools outside this crate declare. Anything malformed — an unknown tier, a policy that is
    /// not allow/deny/prompt, a field of the wrong type, an unknown field — yields a plain
    /// high-risk declaration: a tool cannot lower its tier by declaring badly.
    #[must_use]
    pub fn from_json(value: &Value) -> Self {
        Self::parse_json(value).unwrap_or_default()
    }

    fn parse_json(value: &Value) -> Option<Self> {
        let object = value.as_object()?;
        let mut declaration = Declaration::default();
        for (key, field) in object {
            match key.as_str() {
                "tier" => {
                    let tier: Tier = field.as_str()?.parse().ok()?;
                    if tier == Tier::Unknown {
                        return None;
                    }
                    declaration.tier = tier;
                }
                "policy" => {
                    declaration.policy = Some(serde_json::from_value(field.clone()).ok()?);
                }
                "override" => declaration.override_policy = field.as_bool()?,
                "reason" => declaration.reason = Some(field.as_str()?.to_string()),
                "policy_key" => {
                    let key = field.as_str()?;
                    if key.is_empty() {
                        return None;
                    }
                    declaration.policy_key = Some(key.to_string());
                }
                _ => return None,
            }
        }
        if !object.contains_key("tier") {
            return None;
        }
        Some(declaration)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn malformed_is_high_risk() {
        for bad in [
            json!(null),
            json!("read-only"),
            json!({}),
            json!({"tier": "medium"}),
            json!({"tier": "read-only", "policy": "maybe"}),
            json!({"tier": "read-only", "override": "yes"}),
            json!({"tier": "read-only", "extra": 1}),
            json!({"tier": "unknown"}),
        ] {
            let d = Declaration::from_json(&bad);
            assert_eq!(d, Declaration::default(), "{bad}");
            assert_eq!(d.tier, Tier::HighRisk);
        }
    }

    #[test]
    fn reads_a_full_declaration() {
        let d = Declaration::from_json(&json!({
            "tier": "read-only", "policy": "prompt", "override": true,
            "reason": "asks first", "policy_key": "probe"
        }));
        assert_eq!(d.tier, Tier::ReadOnly);
        assert_eq!(d.policy, Some(ToolPolicy::Prompt));
        assert!(d.override_policy);
        assert_eq!(d.policy_key.as_deref(), Some("probe"));
    }
}
