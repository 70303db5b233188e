//! Pending approval records in the store, and what a press does to them.

use super::button::ButtonData;
use super::index;
use super::token::ApprovalToken;
use crate::store::{Store, StoreError};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tollgate_surface::{ApprovalCard, CardRef, ChatRef};

const APPROVALS_TREE: &str = "approvals";

/// What a button says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalChoice {
    Approve,
    Deny,
    AlwaysTool,
    AlwaysCommand,
    /// A picker's option, by its place in the proposal's options.
    Pick(u8),
    /// A picker's option, also bound for the agent (a companion binding, not an "always").
    Bind(u8),
}

/// Options a picker card offers at most (each is a row of two buttons).
pub const MAX_OPTIONS: usize = 20;

impl ApprovalChoice {
    /// The choice as button data writes it after the token (`approve`, `pick-2`).
    #[must_use]
    pub fn to_data(self) -> String {
        match self {
            ApprovalChoice::Approve => "approve".into(),
            ApprovalChoice::Deny => "deny".into(),
            ApprovalChoice::AlwaysTool => "always-tool".into(),
            ApprovalChoice::AlwaysCommand => "always-command".into(),
            ApprovalChoice::Pick(i) => format!("pick-{i}"),
            ApprovalChoice::Bind(i) => format!("bind-{i}"),
        }
    }

    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        let index = |digits: &str| {
            digits
                .parse::<u8>()
                .ok()
                .filter(|i| digits.len() <= 2 && usize::from(*i) < MAX_OPTIONS)
        };
        Some(match text {
            "approve" => ApprovalChoice::Approve,
            "deny" => ApprovalChoice::Deny,
            "always-tool" => ApprovalChoice::AlwaysTool,
            "always-command" => ApprovalChoice::AlwaysCommand,
            _ => {
                if let Some(i) = text.strip_prefix("pick-").and_then(index) {
                    ApprovalChoice::Pick(i)
                } else if let Some(i) = text.strip_prefix("bind-").and_then(index) {
                    ApprovalChoice::Bind(i)
                } else {
                    return None;
                }
            }
        })
    }
}

/// Where a record stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "state")]
pub enum PendingState {
    Waiting,
    Answered {
        choice: ApprovalChoice,
        by: String,
    },
    TimedOut,
    /// Settled without a press (decided again, or the run ended).
    Withdrawn {
        outcome: String,
    },
}

/// One pending approval.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingApproval {
    pub token: String,
    pub session: String,
    pub call_id: String,
    pub agent: String,
    pub tool: String,
    /// Unix seconds when the card was posted, and when it expires.
    pub posted: u64,
    pub expires: u64,
    /// The choices its buttons offer.
    pub choices: Vec<ApprovalChoice>,
    pub state: PendingState,
    /// The run the call belongs to: a press on a card whose run is gone finds it expired.
    #[serde(default)]
    pub run: String,
    /// The chat the request came from (cards go there, or to admins' DMs).
    #[serde(default)]
    pub chat: Option<ChatRef>,
    /// The card as shown, to send it again if it never went out, and to edit it.
    #[serde(default)]
    pub card: Option<ApprovalCard>,
    /// Where the card was posted (empty: not sent yet).
    #[serde(default)]
    pub posted_to: Vec<CardRef>,
    /// A picker's options (ids), in the order its buttons name them.
    #[serde(default)]
    pub options: Vec<String>,
    /// The fingerprint of the call it asks about (empty in records written before it was
    /// kept: those answer no call again).
    #[serde(default)]
    pub asked: String,
}

/// What a press did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PressOutcome {
    /// This press answered the card.
    Answered(Box<PendingApproval>),
    /// The presser is not one of the bridge's admins: nothing happened (audited).
    NotAnAdmin,
    /// Someone answered first.
    AlreadyAnswered { by: String },
    /// Past its deadline, or settled otherwise.
    Expired,
    /// The token locates nothing (malformed, or from a card that is gone).
    Unknown,
}

/// The pending approvals in a store.
#[derive(Clone)]
pub struct PendingApprovals {
    store: Arc<dyn Store>,
}

fn encode(record: &PendingApproval) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(record).map_err(|e| StoreError {
        context: "encoding a pending approval".into(),
        message: e.to_string(),
    })
}

fn decode(bytes: &[u8]) -> Option<PendingApproval> {
    serde_json::from_slice(bytes).ok()
}

impl PendingApprovals {
    #[must_use]
    pub fn new(store: Arc<dyn Store>) -> Self {
        PendingApprovals { store }
    }

    /// Indexes a store written before the indexes existed (once; a marker records it). Run
    /// where the store is opened, not on every construction: that is on a session's first
    /// message.
    pub fn index_existing(store: &dyn Store) -> Result<(), StoreError> {
        index::index_existing(store, APPROVALS_TREE, decode)
    }

    /// Saves a new record, durably: the card may be sent only after this returns.
    pub fn create(&self, record: &PendingApproval) -> Result<(), StoreError> {
        self.write_new(record)?;
        self.store.flush()
    }

    /// [`PendingApprovals::create`] from async code: the flush is waited for without holding
    /// an async worker (the store's flusher thread answers).
    pub async fn create_soon(&self, record: &PendingApproval) -> Result<(), StoreError> {
        self.write_new(record)?;
        self.store.flush_soon().await
    }

    /// A new record's writes: its index entries first, then the record.
    fn write_new(&self, record: &PendingApproval) -> Result<(), StoreError> {
        index::add(self.store.as_ref(), record)?;
        self.store
            .insert(APPROVALS_TREE, record.token.as_bytes(), &encode(record)?)
            .map(|_| ())
    }

    pub fn get(&self, token: &ApprovalToken) -> Result<Option<PendingApproval>, StoreError> {
        Ok(self
            .store
            .get(APPROVALS_TREE, token.as_str().as_bytes())?
            .and_then(|b| decode(&b)))
    }

    /// A press of button `data` (`<token>:<choice>`) by `presser`, who is an admin or not (the
    /// bridge checks its own `admins`/`admin_roles`). The first valid press wins atomically.
    pub fn press(
        &self,
        data: &str,
        presser: &str,
        is_admin: bool,
        now: u64,
    ) -> Result<PressOutcome, StoreError> {
        let Some(ButtonData::Card { token, choice }) = ButtonData::parse(data) else {
            return Ok(PressOutcome::Unknown);
        };
        loop {
            let Some(bytes) = self.store.get(APPROVALS_TREE, token.as_str().as_bytes())? else {
                return Ok(PressOutcome::Unknown);
            };
            let Some(record) = decode(&bytes) else {
                return Ok(PressOutcome::Unknown);
            };
            match &record.state {
                PendingState::Answered { by, .. } => {
                    return Ok(PressOutcome::AlreadyAnswered { by: by.clone() });
                }
                PendingState::TimedOut | PendingState::Withdrawn { .. } => {
                    return Ok(PressOutcome::Expired);
                }
                PendingState::Waiting => {}
            }
            if !record.choices.contains(&choice) {
                return Ok(PressOutcome::Unknown);
            }
            if !is_admin {
                return Ok(PressOutcome::NotAnAdmin);
            }
            if now >= record.expires {
                self.settle(&token, PendingState::TimedOut)?;
                return Ok(PressOutcome::Expired);
            }
            let mut answered = record.clone();
            answered.state = PendingState::Answered {
                choice,
                by: presser.to_string(),
            };
            index::date_settling(self.store.as_ref(), token.as_str())?;
            let swapped = self.store.compare_and_swap(
                APPROVALS_TREE,
                token.as_str().as_bytes(),
                Some(&bytes),
                Some(&encode(&answered)?),
            )?;
            if swapped.is_ok() {
                index::settled(self.store.as_ref(), &answered)?;
                self.store.flush()?;
                return Ok(PressOutcome::Answered(Box::new(answered)));
            }
            // Someone else changed it in between: look again (they probably answered).
        }
    }

    /// Notes where the card was posted (after sending it: a kill before this line means the
    /// card is sent again on the next start, never that a sent card is forgotten).
    pub fn set_posted(&self, token: &ApprovalToken, posted: &[CardRef]) -> Result<(), StoreError> {
        index::shown_in(self.store.as_ref(), token.as_str(), posted)?;
        self.update(token, |record| {
            record.posted_to = posted.to_vec();
            true
        })
        .map(|_| ())
    }

    /// Changes a record atomically (compare-and-swap, retried if someone else changed it in
    /// between) and flushes; `change` returns false to leave it as it is. False if the record
    /// is missing or was left alone.
    fn update(
        &self,
        token: &ApprovalToken,
        mut change: impl FnMut(&mut PendingApproval) -> bool,
    ) -> Result<bool, StoreError> {
        loop {
            let Some(bytes) = self.store.get(APPROVALS_TREE, token.as_str().as_bytes())? else {
                return Ok(false);
            };
            let Some(mut record) = decode(&bytes) else {
                return Ok(false);
            };
            let was_waiting = record.state == PendingState::Waiting;
            if !change(&mut record) {
                return Ok(false);
            }
            let settling = was_waiting && record.state != PendingState::Waiting;
            if settling {
                index::date_settling(self.store.as_ref(), token.as_str())?;
            }
            let swapped = self.store.compare_and_swap(
                APPROVALS_TREE,
                token.as_str().as_bytes(),
                Some(&bytes),
                Some(&encode(&record)?),
            )?;
            if swapped.is_ok() {
                if settling {
                    index::settled(self.store.as_ref(), &record)?;
                }
                self.store.flush()?;
                return Ok(true);
            }
        }
    }

    /// The record of a call of a run, if one was made (a resumed run asks again: its card is
    /// the one already shown).
    pub fn for_call(
        &self,
        session: &str,
        run: &str,
        call_id: &str,
    ) -> Result<Option<PendingApproval>, StoreError> {
        let Some(token) = self
            .store
            .get(index::BY_CALL_TREE, &index::call_key(session, run, call_id))?
        else {
            return Ok(None);
        };
        Ok(self
            .store
            .get(APPROVALS_TREE, &token)?
            .and_then(|b| decode(&b))
            .filter(|r| r.session == session && r.run == run && r.call_id == call_id))
    }

    /// Settles a waiting record without a press (timeout, withdrawal); false if it was not
    /// waiting any more.
    pub fn settle(&self, token: &ApprovalToken, state: PendingState) -> Result<bool, StoreError> {
        self.update(token, |record| {
            if record.state != PendingState::Waiting {
                return false;
            }
            record.state = state.clone();
            true
        })
    }

    /// Records still waiting whose deadline passed (including while the process was down):
    /// they are resolved as timeouts and returned, for their cards to be edited.
    pub fn expire_due(&self, now: u64) -> Result<Vec<PendingApproval>, StoreError> {
        let mut expired = Vec::new();
        // The waiting index is in expiry order: only the due head is read.
        let due_end = now.saturating_add(1).to_be_bytes();
        for (key, _) in self.store.scan_before(index::WAITING_TREE, &due_end)? {
            let Some((_, token)) = index::split_waiting_key(&key) else {
                continue;
            };
            let Some(record) = self.indexed(&key, token)? else {
                continue;
            };
            let Some(token) = ApprovalToken::parse(&record.token) else {
                continue;
            };
            if self.settle(&token, PendingState::TimedOut)? {
                expired.push(record);
            }
        }
        Ok(expired)
    }

    /// Every record still waiting (after a restart: their buttons must keep working).
    pub fn waiting(&self) -> Result<Vec<PendingApproval>, StoreError> {
        let mut waiting = Vec::new();
        for (key, _) in self.store.scan_prefix(index::WAITING_TREE, b"")? {
            let Some((_, token)) = index::split_waiting_key(&key) else {
                continue;
            };
            if let Some(record) = self.indexed(&key, token)? {
                waiting.push(record);
            }
        }
        Ok(waiting)
    }

    /// Deletes the records settled before `before` (seconds), with their index entries; how
    /// many. Only the settled-by-time index's old head is read, and the records it names.
    pub fn prune_settled(&self, before: u64) -> Result<usize, StoreError> {
        let store = self.store.as_ref();
        let mut pruned = 0;
        for (index_key, token) in
            crate::store::aged::older_than(store, index::SETTLED_TREE, before)?
        {
            if let Some(record) = store.get(APPROVALS_TREE, &token)?.and_then(|b| decode(&b))
                && record.state != PendingState::Waiting
            {
                let by_call = index::call_key(&record.session, &record.run, &record.call_id);
                if store.get(index::BY_CALL_TREE, &by_call)?.as_deref() == Some(token.as_slice()) {
                    store.delete(index::BY_CALL_TREE, &by_call)?;
                }
                store.delete(APPROVALS_TREE, &token)?;
                pruned += 1;
            }
            store.delete(index::SETTLED_TREE, &index_key)?;
        }
        Ok(pruned)
    }

    /// Dates at `now` the settled records of a store written before they were dated.
    pub fn date_undated(store: &dyn Store, now: u64) -> Result<usize, StoreError> {
        let settled = store
            .scan_prefix(APPROVALS_TREE, b"")?
            .into_iter()
            .filter_map(|(token, bytes)| {
                (decode(&bytes)?.state != PendingState::Waiting).then_some((token, None))
            });
        crate::store::aged::date_undated(store, index::SETTLED_TREE, settled, now)
    }

    /// The waiting cards shown in `chat` (through the chat index: never the other chats').
    pub fn waiting_in_chat(&self, chat: &ChatRef) -> Result<Vec<PendingApproval>, StoreError> {
        let prefix = index::chat_prefix(chat);
        let mut waiting = Vec::new();
        for (key, _) in self.store.scan_prefix(index::IN_CHAT_TREE, &prefix)? {
            let Some(token) = key.get(prefix.len()..) else {
                continue;
            };
            match self
                .store
                .get(APPROVALS_TREE, token)?
                .and_then(|b| decode(&b))
            {
                Some(record) if record.state == PendingState::Waiting => {
                    // Not yet saying so: a `set_posted` between its index and its record.
                    if record.posted_to.iter().any(|at| at.chat == *chat) {
                        waiting.push(record);
                    }
                }
                // Settled (or gone) since: a stale entry.
                _ => {
                    self.store.delete(index::IN_CHAT_TREE, &key)?;
                }
            }
        }
        Ok(waiting)
    }

    /// The waiting record a waiting-index entry names; a stale entry (its record settled, or
    /// gone) is removed and `None` returned.
    fn indexed(&self, key: &[u8], token: &str) -> Result<Option<PendingApproval>, StoreError> {
        let record = self
            .store
            .get(APPROVALS_TREE, token.as_bytes())?
            .and_then(|b| decode(&b))
            .filter(|r| r.state == PendingState::Waiting);
        if record.is_none() {
            self.store.delete(index::WAITING_TREE, key)?;
        }
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    fn record(token: &ApprovalToken) -> PendingApproval {
        PendingApproval {
            token: token.to_string(),
            session: "telegram:-100".into(),
            call_id: "c1".into(),
            agent: "ops".into(),
            tool: "write_file".into(),
            posted: 1_000,
            expires: 1_600,
            choices: vec![ApprovalChoice::Approve, ApprovalChoice::Deny],
            state: PendingState::Waiting,
            run: "r1".into(),
            chat: None,
            card: None,
            posted_to: Vec::new(),
            options: Vec::new(),
            asked: String::new(),
        }
    }

    #[test]
    fn only_admins_answer_and_the_first_press_wins() {
        let approvals = PendingApprovals::new(Arc::new(MemoryStore::new()));
        let token = ApprovalToken::generate().unwrap();
        approvals.create(&record(&token)).unwrap();
        let approve = token.button("approve");
        assert_eq!(
            approvals
                .press(&approve, "telegram:7", false, 1_100)
                .unwrap(),
            PressOutcome::NotAnAdmin
        );
        assert_eq!(
            approvals
                .press(&token.button("always-tool"), "telegram:1", true, 1_100)
                .unwrap(),
            PressOutcome::Unknown,
            "a choice the card did not offer"
        );
        let PressOutcome::Answered(answered) = approvals
            .press(&approve, "telegram:1", true, 1_100)
            .unwrap()
        else {
            panic!("the admin's press should answer");
        };
        assert_eq!(
            answered.state,
            PendingState::Answered {
                choice: ApprovalChoice::Approve,
                by: "telegram:1".into()
            }
        );
        assert_eq!(
            approvals
                .press(&token.button("deny"), "telegram:2", true, 1_101)
                .unwrap(),
            PressOutcome::AlreadyAnswered {
                by: "telegram:1".into()
            }
        );
        assert_eq!(
            approvals
                .press("t1forged:approve", "telegram:1", true, 1_100)
                .unwrap(),
            PressOutcome::Unknown
        );
        assert_eq!(
            approvals
                .press("garbage", "telegram:1", true, 1_100)
                .unwrap(),
            PressOutcome::Unknown
        );
    }

    #[test]
    fn deadlines_pass_even_while_down() {
        let approvals = PendingApprovals::new(Arc::new(MemoryStore::new()));
        let late = ApprovalToken::generate().unwrap();
        let fresh = ApprovalToken::generate().unwrap();
        approvals.create(&record(&late)).unwrap();
        let mut later = record(&fresh);
        later.expires = 9_999;
        approvals.create(&later).unwrap();
        let expired = approvals.expire_due(2_000).unwrap();
        assert_eq!(expired.len(), 1);
        assert_eq!(expired[0].token, late.to_string());
        assert_eq!(
            approvals
                .press(&late.button("approve"), "telegram:1", true, 2_001)
                .unwrap(),
            PressOutcome::Expired
        );
        assert_eq!(approvals.waiting().unwrap().len(), 1);
        assert!(
            approvals
                .settle(
                    &fresh,
                    PendingState::Withdrawn {
                        outcome: "allowed".into()
                    }
                )
                .unwrap()
        );
        assert!(
            !approvals.settle(&fresh, PendingState::TimedOut).unwrap(),
            "settled once"
        );
    }
}
