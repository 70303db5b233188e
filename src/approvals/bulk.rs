//! "Approve all N / Deny all N": one admin press that answers exactly the N cards a chat was
//! shown when the row was posted — never a card that arrived later. The row's token is
//! single-use like a card's.

use super::token::ApprovalToken;
use crate::store::{Store, StoreError};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tollgate_surface::CardRef;

const BULK_TREE: &str = "approval_bulks";

/// One "all N" row and the cards it answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulkApproval {
    pub token: String,
    /// The tokens of the cards it answers, as they were when the row was posted.
    pub cards: Vec<String>,
    /// Where the row was posted.
    pub posted_to: Option<CardRef>,
    pub used: bool,
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

    /// Marks a row used; `None` when it was used already (the first press wins) or is unknown.
    pub fn take(&self, token: &ApprovalToken) -> Result<Option<BulkApproval>, StoreError> {
        loop {
            let Some(bytes) = self.store.get(BULK_TREE, token.as_str().as_bytes())? else {
                return Ok(None);
            };
            let Ok(mut bulk) = serde_json::from_slice::<BulkApproval>(&bytes) else {
                return Ok(None);
            };
            if bulk.used {
                return Ok(None);
            }
            bulk.used = true;
            let swapped = self.store.compare_and_swap(
                BULK_TREE,
                token.as_str().as_bytes(),
                Some(&bytes),
                Some(&encode(&bulk)?),
            )?;
            if swapped.is_ok() {
                self.store.flush()?;
                return Ok(Some(bulk));
            }
        }
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
                posted_to: None,
                used: false,
            })
            .unwrap();
        let taken = bulks.take(&token).unwrap().unwrap();
        assert_eq!(taken.cards.len(), 2);
        assert_eq!(bulks.take(&token).unwrap(), None);
    }
}
