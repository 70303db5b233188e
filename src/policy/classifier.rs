//! The classifier's contract with the gate: it is asked only about a command no rule decided, it
//! can only place that command on a tier, and any failure lands on `high-risk`.

use super::tier::Tier;
use serde::Serialize;

/// What became of asking the classifier.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClassifierReport {
    /// Whether a model was asked (or a cached verdict used).
    pub ran: bool,
    /// The tier it placed the command on (`high-risk` for any failure).
    pub verdict: Option<Tier>,
    pub cached: bool,
    /// Why it was not asked, or what went wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl ClassifierReport {
    /// The classifier was needed but not asked (`--no-classifier`, or nobody to ask).
    #[must_use]
    pub fn not_run(note: impl Into<String>) -> Self {
        ClassifierReport {
            ran: false,
            verdict: None,
            cached: false,
            note: Some(note.into()),
        }
    }

    /// A reply read strictly: exactly `read-only` or `low-risk` (surrounding whitespace aside);
    /// anything else — a paragraph, `high-risk`, an empty reply — is `high-risk`.
    #[must_use]
    pub fn from_reply(reply: &str, cached: bool) -> Self {
        let verdict = match reply.trim() {
            "read-only" => Tier::ReadOnly,
            "low-risk" => Tier::LowRisk,
            _ => Tier::HighRisk,
        };
        ClassifierReport {
            ran: true,
            verdict: Some(verdict),
            cached,
            note: None,
        }
    }

    /// A timeout or provider error: fail closed.
    #[must_use]
    pub fn failed(error: impl Into<String>) -> Self {
        ClassifierReport {
            ran: true,
            verdict: Some(Tier::HighRisk),
            cached: false,
            note: Some(error.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exact_low_verdicts_count() {
        assert_eq!(
            ClassifierReport::from_reply(" read-only\n", false).verdict,
            Some(Tier::ReadOnly)
        );
        assert_eq!(
            ClassifierReport::from_reply("low-risk", false).verdict,
            Some(Tier::LowRisk)
        );
        for reply in [
            "",
            "Read-only",
            "read-only.",
            "It is read-only",
            "high-risk",
            "read-only low-risk",
        ] {
            assert_eq!(
                ClassifierReport::from_reply(reply, false).verdict,
                Some(Tier::HighRisk),
                "{reply:?}"
            );
        }
        assert_eq!(
            ClassifierReport::failed("timeout").verdict,
            Some(Tier::HighRisk)
        );
    }
}
