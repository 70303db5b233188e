//! Button tokens: `t1` + 24 hex digits of kernel randomness, plus `:<choice>` on each button.
//! Short enough for Telegram's 64-byte `callback_data` and Discord's 100-character `custom_id`.

use std::fmt;

/// The token format's version; a token of another version is refused, not guessed at.
pub const TOKEN_VERSION: &str = "t1";

/// A pending record's token.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ApprovalToken(String);

impl ApprovalToken {
    /// A fresh random token (12 bytes from the kernel's CSPRNG).
    pub fn generate() -> std::io::Result<Self> {
        let mut bytes = [0u8; 12];
        // The crate retries on EINTR and keeps the kernel's errno in the io::Error.
        getrandom::fill(&mut bytes)?;
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ok(ApprovalToken(format!("{TOKEN_VERSION}{hex}")))
    }

    /// Reads a token as it came back from a button, or `None` for anything malformed.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        let hex = text.strip_prefix(TOKEN_VERSION)?;
        (hex.len() == 24
            && hex
                .chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()))
        .then(|| ApprovalToken(text.to_string()))
    }

    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A button's data: the token and the choice it stands for.
    #[must_use]
    pub fn button(&self, choice: &str) -> String {
        format!("{}:{choice}", self.0)
    }
}

impl fmt::Display for ApprovalToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_versioned_and_short() {
        let a = ApprovalToken::generate().unwrap();
        let b = ApprovalToken::generate().unwrap();
        assert_ne!(a, b);
        assert_eq!(ApprovalToken::parse(a.as_str()), Some(a.clone()));
        assert!(
            a.button("always-command").len() <= 64,
            "Telegram's callback_data limit"
        );
        for bad in [
            "",
            "t1",
            "t2000000000000000000000000",
            "t1zzzzzzzzzzzzzzzzzzzzzzzz",
            "t100000000000000000000000000",
        ] {
            assert_eq!(ApprovalToken::parse(bad), None, "{bad}");
        }
    }
}
