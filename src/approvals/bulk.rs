//! "Approve all N / Deny all N": one admin press that answers exactly the N cards a chat was
//! shown when the row was posted — never a card that arrived later. The row's token is
//! single-use like a card's.

use super::token::ApprovalToken;
use crate::store::{Store, StoreError};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tollgate_surface::CardRef;

const BULK_TREE: &str = "approval_bulks";
/// Rows used or replaced, by when (`store::aged` keys), for retention.
const DONE_TREE: &str = "approval_bulks_done";

/// One "all N" row and the cards it answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulkApproval {
    pub token: String,
    /// The tokens of the cards it answers, as they were when the row was posted.
    pub cards: Vec<String>,
    /// The tool of each card, in the same order (what the row shows).
    #[serde(default)]
    pub tools: Vec<String>,
    /// Where the row was posted.
    pub posted_to: Option<CardRef>,
    pub used: bool,
    /// The set of waiting cards changed and a newer row took its place: it answers nothing.
    #[serde(default)]
    pub replaced: bool,
}

/// What pressing a row found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Taken {
    /// The row was live and is now used: answer its cards.
    Row(Box<BulkApproval>),
    Used,
    Replaced,
    Unknown,
}

/// The "all N" rows in a store.
#[derive(Clone)]
pub struct BulkApprovals {
    store: Arc<dyn Store>,
}

fn encode(bulk: &BulkApproval) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(bulk).map_err(|e| StoreError {
        context: "encoding an approve-all row".into(),
        message: e.to_string(),
    })
}

impl BulkApprovals {
    #[must_use]
    pub fn new(store: Arc<dyn Store>) -> Self {
        BulkApprovals { store }
    }

    /// Saves a row, durably, before it is shown.
    pub fn create(&self, bulk: &BulkApproval) -> Result<(), StoreError> {
        self.store
            .insert(BULK_TREE, bulk.token.as_bytes(), &encode(bulk)?)?;
        self.store.flush()
    }

    pub fn get(&self, token: &ApprovalToken) -> Result<Option<BulkApproval>, StoreError> {
        Ok(self
            .store
            .get(BULK_TREE, token.as_str().as_bytes())?
            .and_then(|b| serde_json::from_slice(&b).ok()))
    }

    /// Marks a row used, if it is live: the first press wins, and a replaced row answers
    /// nothing.
    pub fn take(&self, token: &ApprovalToken) -> Result<Taken, StoreError> {
        let mut row = None;
        let changed = self.change(token, |bulk| {
            row = Some(bulk.clone());
            if bulk.used || bulk.replaced {
                return false;
            }
            bulk.used = true;
            true
        })?;
        Ok(match row {
            None => Taken::Unknown,
            Some(mut bulk) if changed => {
                bulk.used = true;
                Taken::Row(Box::new(bulk))
            }
            Some(bulk) if bulk.replaced => Taken::Replaced,
            Some(_) => Taken::Used,
        })
    }

    /// Marks a live row replaced; false when it was used (or replaced) first.
    pub fn retire(&self, token: &ApprovalToken) -> Result<bool, StoreError> {
        self.change(token, |bulk| {
            if bulk.used || bulk.replaced {
                return false;
            }
            bulk.replaced = true;
            true
        })
    }

    /// Every row still live (after a restart: the rows on screen belong to the last process).
    pub fn live(&self) -> Result<Vec<BulkApproval>, StoreError> {
        Ok(self
            .store
            .scan_prefix(BULK_TREE, b"")?
            .iter()
            .filter_map(|(_, b)| serde_json::from_slice::<BulkApproval>(b).ok())
            .filter(|b| !b.used && !b.replaced)
            .collect())
    }

    /// Applies `edit` atomically (it returns whether it changed anything), flushed; false when
    /// the row is unknown or `edit` left it alone.
    fn change(
        &self,
        token: &ApprovalToken,
        mut edit: impl FnMut(&mut BulkApproval) -> bool,
    ) -> Result<bool, StoreError> {
        loop {
            let Some(bytes) = self.store.get(BULK_TREE, token.as_str().as_bytes())? else {
                return Ok(false);
            };
            let Ok(mut bulk) = serde_json::from_slice::<BulkApproval>(&bytes) else {
                return Ok(false);
            };
            if !edit(&mut bulk) {
                return Ok(false);
            }
            // Dated before it is done: a kill can keep any prefix of these writes, and a done
            // row without its date would never be pruned (a date on a live row is dropped).
            if bulk.used || bulk.replaced {
                self.store.insert(
                    DONE_TREE,
                    &crate::store::aged::key(crate::clock::now_secs(), token.as_str().as_bytes()),
                    b"",
                )?;
            }
            let swapped = self.store.compare_and_swap(
                BULK_TREE,
                token.as_str().as_bytes(),
                Some(&bytes),
                Some(&encode(&bulk)?),
            )?;
            if swapped.is_ok() {
                self.store.flush()?;
                return Ok(true);
            }
            // Changed in between (a press racing a replacement): look again.
        }
    }

    /// Deletes the rows used or replaced before `before` (seconds); how many.
    pub fn prune_done(store: &dyn Store, before: u64) -> Result<usize, StoreError> {
        crate::store::aged::prune_where(store, DONE_TREE, BULK_TREE, before, |bytes| {
            // A row that no longer reads is pruned as before; only a live one stays.
            !matches!(serde_json::from_slice::<BulkApproval>(bytes), Ok(row) if !row.used && !row.replaced)
        })
    }

    /// Dates at `now` the used or replaced rows of a store written before they were dated.
    pub fn date_undated(store: &dyn Store, now: u64) -> Result<usize, StoreError> {
        let done = store
            .scan_prefix(BULK_TREE, b"")?
            .into_iter()
            .filter_map(|(key, bytes)| {
                let row = serde_json::from_slice::<BulkApproval>(&bytes).ok()?;
                (row.used || row.replaced).then_some((key, None))
            });
        crate::store::aged::date_undated(store, DONE_TREE, done, now)
    }

    /// Notes where the row was posted.
    pub fn set_posted(&self, token: &ApprovalToken, card: CardRef) -> Result<(), StoreError> {
        if let Some(mut bulk) = self.get(token)? {
            bulk.posted_to = Some(card);
            self.store
                .insert(BULK_TREE, token.as_str().as_bytes(), &encode(&bulk)?)?;
            self.store.flush()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    #[test]
    fn a_row_answers_once() {
        let bulks = BulkApprovals::new(Arc::new(MemoryStore::new()));
        let token = ApprovalToken::generate().unwrap();
        bulks
            .create(&BulkApproval {
                token: token.to_string(),
                cards: vec!["t1a".into(), "t1b".into()],
                tools: vec!["shell".into(), "shell".into()],
                posted_to: None,
                used: false,
                replaced: false,
            })
            .unwrap();
        let Taken::Row(taken) = bulks.take(&token).unwrap() else {
            panic!("a live row is taken");
        };
        assert_eq!(taken.cards.len(), 2);
        assert_eq!(bulks.take(&token).unwrap(), Taken::Used);
        assert!(!bulks.retire(&token).unwrap(), "a used row is not replaced");
    }

    #[test]
    fn a_replaced_row_answers_nothing() {
        let bulks = BulkApprovals::new(Arc::new(MemoryStore::new()));
        let token = ApprovalToken::generate().unwrap();
        bulks
            .create(&BulkApproval {
                token: token.to_string(),
                cards: vec!["t1a".into(), "t1b".into()],
                tools: Vec::new(),
                posted_to: None,
                used: false,
                replaced: false,
            })
            .unwrap();
        assert_eq!(bulks.live().unwrap().len(), 1);
        assert!(bulks.retire(&token).unwrap());
        assert_eq!(bulks.take(&token).unwrap(), Taken::Replaced);
        assert!(bulks.live().unwrap().is_empty());
        let unknown = ApprovalToken::generate().unwrap();
        assert_eq!(bulks.take(&unknown).unwrap(), Taken::Unknown);
    }
}
