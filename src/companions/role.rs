//! Companion roles and bindings as the config writes them.

use std::fmt;
use std::str::FromStr;

/// What a companion does with a kind of media: reads it (`analyze`) or makes it (`generate`,
/// reserved: no tool uses it yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verb {
    Analyze,
    Generate,
}

/// A kind of media.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Modality {
    Image,
    Audio,
    Video,
}

/// A companion role: `analyze:image`, `generate:audio`, …
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Role {
    pub verb: Verb,
    pub modality: Modality,
}

impl Role {
    #[must_use]
    pub fn analyze(modality: Modality) -> Role {
        Role {
            verb: Verb::Analyze,
            modality,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = match self.verb {
            Verb::Analyze => "analyze",
            Verb::Generate => "generate",
        };
        let modality = match self.modality {
            Modality::Image => "image",
            Modality::Audio => "audio",
            Modality::Video => "video",
        };
        write!(f, "{verb}:{modality}")
    }
}

impl FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            format!(
                "`{s}` is not a companion role: write \"<analyze|generate>:<image|audio|video>\""
            )
        };
        let (verb, modality) = s.split_once(':').ok_or_else(bad)?;
        let verb = match verb {
            "analyze" => Verb::Analyze,
            "generate" => Verb::Generate,
            _ => return Err(bad()),
        };
        let modality = match modality {
            "image" => Modality::Image,
            "audio" => Modality::Audio,
            "video" => Modality::Video,
            _ => return Err(bad()),
        };
        Ok(Role { verb, modality })
    }
}

/// A companion: a configured provider and one of its models.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Companion {
    pub provider: String,
    pub model: String,
}

impl FromStr for Companion {
    type Err = String;

    /// `"provider/model"`, split at the first `/` (model names have slashes of their own).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.split_once('/') {
            Some((provider, model)) if !provider.is_empty() && !model.is_empty() => Ok(Companion {
                provider: provider.to_string(),
                model: model.to_string(),
            }),
            _ => Err(format!(
                "`{s}` is not a companion: write \"provider/model\" (a [providers.<name>] and one of its models)"
            )),
        }
    }
}

impl fmt::Display for Companion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_and_companions_read_as_written() {
        assert_eq!("analyze:image".parse(), Ok(Role::analyze(Modality::Image)));
        assert_eq!(
            "generate:audio".parse::<Role>().map(|r| r.to_string()),
            Ok("generate:audio".to_string())
        );
        assert!("analyse:image".parse::<Role>().is_err());
        assert!("analyze".parse::<Role>().is_err());
        let c: Companion = "local/llava/v1.6:7b".parse().unwrap_or(Companion {
            provider: String::new(),
            model: String::new(),
        });
        assert_eq!(
            (c.provider.as_str(), c.model.as_str()),
            ("local", "llava/v1.6:7b")
        );
        assert!("gpt-4o".parse::<Companion>().is_err());
        assert!("/m".parse::<Companion>().is_err());
    }
}
