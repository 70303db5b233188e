//! The leak guard: configured secrets (bot tokens, provider keys, anything a `*_env` key names)
//! never appear in a log line or a message sent to a chat. Every outgoing text passes through
//! [`Redactor::redact`].

/// Secrets shorter than this are not matched (a one-character "secret" would redact prose);
/// such a value is not a real token anyway.
const MIN_SECRET_LEN: usize = 6;

/// Replaces the configured secrets' values in text.
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    /// The values, in this environment, of the named variables (every variable a `*_env` key
    /// names: see [`super::env::configured_secret_names`]).
    #[must_use]
    pub fn from_env_names(names: impl IntoIterator<Item = String>) -> Self {
        let values = names
            .into_iter()
            .filter_map(|name| std::env::var(name).ok());
        Redactor::with_secrets(values)
    }

    #[must_use]
    pub fn with_secrets(values: impl IntoIterator<Item = String>) -> Self {
        let mut secrets: Vec<String> = values
            .into_iter()
            .filter(|v| v.len() >= MIN_SECRET_LEN)
            .collect();
        // Longest first, so a secret containing another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Redactor { secrets }
    }

    /// The text with every secret (and a Telegram token's secret half) replaced.
    #[must_use]
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), "[redacted]");
            }
            // A Telegram token is `<bot id>:<secret>`; the secret half alone is as bad.
            if let Some((_, half)) = secret.split_once(':')
                && half.len() >= MIN_SECRET_LEN
                && out.contains(half)
            {
                out = out.replace(half, "[redacted]");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_pass() {
        let r = Redactor::with_secrets([
            "123456:AAH-bot-secret".to_string(),
            "sk-live-abcdef".to_string(),
            "x".to_string(),
        ]);
        assert_eq!(
            r.redact(
                "token 123456:AAH-bot-secret, half AAH-bot-secret, key sk-live-abcdef, x stays"
            ),
            "token [redacted], half [redacted], key [redacted], x stays"
        );
        assert_eq!(Redactor::default().redact("nothing"), "nothing");
    }
}
