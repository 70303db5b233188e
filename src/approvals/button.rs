//! What a button's data says, read in one place: an approval card's choice (`t1…:approve`), an
//! "Approve all / Deny all" row (`t1…:approve-all`), or a question's option (`q1…:2`). Data
//! from a press comes from whoever pressed — it is parsed strictly, and anything else is `None`
//! (the press is then answered as stale, never guessed at).

use super::pending::ApprovalChoice;
use super::token::ApprovalToken;

/// Button data longer than this is refused before it is looked at (Discord's `custom_id` limit;
/// Telegram's `callback_data` is shorter still).
pub const MAX_BUTTON_DATA: usize = 100;

/// Which row of "Approve all N / Deny all N" was pressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BulkChoice {
    ApproveAll,
    DenyAll,
}

impl BulkChoice {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            BulkChoice::ApproveAll => "approve-all",
            BulkChoice::DenyAll => "deny-all",
        }
    }

    /// The single choice each card of the row gets.
    #[must_use]
    pub fn single(self) -> ApprovalChoice {
        match self {
            BulkChoice::ApproveAll => ApprovalChoice::Approve,
            BulkChoice::DenyAll => ApprovalChoice::Deny,
        }
    }
}

/// A button's data, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ButtonData {
    /// One approval card's choice.
    Card {
        token: ApprovalToken,
        choice: ApprovalChoice,
    },
    /// An "Approve all / Deny all" row.
    Bulk {
        token: ApprovalToken,
        choice: BulkChoice,
    },
    /// A question card's option (`key` is the question's own token, `q…`).
    Question { key: String, index: usize },
}

impl ButtonData {
    /// Reads button data as a press delivered it; `None` for anything malformed.
    #[must_use]
    pub fn parse(data: &str) -> Option<Self> {
        if data.len() > MAX_BUTTON_DATA {
            return None;
        }
        let (head, tail) = data.split_once(':')?;
        if let Some(token) = head.strip_prefix('q') {
            // A question key is its token with `q` in place of the version's `t`.
            ApprovalToken::parse(&format!("t{token}"))?;
            let index = tail.parse().ok().filter(|_| tail.len() <= 3)?;
            return Some(ButtonData::Question {
                key: head.to_string(),
                index,
            });
        }
        let token = ApprovalToken::parse(head)?;
        if let Some(choice) = ApprovalChoice::parse(tail) {
            return Some(ButtonData::Card { token, choice });
        }
        let choice = match tail {
            "approve-all" => BulkChoice::ApproveAll,
            "deny-all" => BulkChoice::DenyAll,
            _ => return None,
        };
        Some(ButtonData::Bulk { token, choice })
    }

    /// The data a button carries.
    #[must_use]
    pub fn encode(&self) -> String {
        match self {
            ButtonData::Card { token, choice } => token.button(&choice.to_data()),
            ButtonData::Bulk { token, choice } => token.button(choice.as_str()),
            ButtonData::Question { key, index } => format!("{key}:{index}"),
        }
    }
}

/// The key of a question card made from a fresh token (`t1…` → `q1…`).
#[must_use]
pub fn question_key(token: &ApprovalToken) -> String {
    format!("q{}", token.as_str().get(1..).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_kind_strictly() {
        let token = ApprovalToken::generate().unwrap();
        for data in [
            ButtonData::Card {
                token: token.clone(),
                choice: ApprovalChoice::AlwaysCommand,
            },
            ButtonData::Bulk {
                token: token.clone(),
                choice: BulkChoice::DenyAll,
            },
            ButtonData::Question {
                key: question_key(&token),
                index: 3,
            },
        ] {
            let encoded = data.encode();
            assert!(encoded.len() <= 64, "Telegram's callback_data limit");
            assert_eq!(ButtonData::parse(&encoded), Some(data));
        }
        let t = token.as_str();
        for bad in [
            String::new(),
            t.to_string(),
            format!("{t}:"),
            format!("{t}:approve "),
            format!("{t}:Approve"),
            format!("{t}:approve-all:x"),
            format!("q{}:x", &t[1..]),
            format!("q{}:-1", &t[1..]),
            format!("q{}:99999", &t[1..]),
            "q:1".to_string(),
            format!("t2{}:approve", &t[2..]),
        ] {
            assert_eq!(ButtonData::parse(&bad), None, "{bad:?}");
        }
    }
}
