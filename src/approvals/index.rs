//! The indexes that keep hot paths off the full approvals tree, which holds every card ever
//! shown: the waiting cards by expiry (the expiry sweep, and resending after a restart, read
//! only those), each call's card (a resumed run finds its card by one lookup), and the waiting
//! cards by the chat they are shown in (a chat's "Approve all N" row reads its own cards).
//!
//! An index entry is written before its record and removed after it, so the index is always a
//! superset of the truth: a kill between the two leaves an entry that the next reader finds
//! stale (its record is no longer waiting) and removes. A store written before the indexes
//! existed is indexed once, on first use (a marker records that it was).

use super::pending::{PendingApproval, PendingState};
use crate::store::{Store, StoreError};
use tollgate_surface::{CardRef, ChatRef};

/// Waiting records: `expires` (8 bytes, big-endian, so the tree is in expiry order) then the
/// token → empty.
pub const WAITING_TREE: &str = "approvals_waiting";
/// `session \0 run \0 call id` → token of the call's latest card.
pub const BY_CALL_TREE: &str = "approvals_by_call";
const INDEXED_MARKER: &[u8] = b"approvals-indexed-v1";
/// Waiting cards by chat: the chat (as JSON) `\0` token → empty. Written when a card is
/// posted, before its record says where; dropped when it settles (or found stale on reading).
pub const IN_CHAT_TREE: &str = "approvals_in_chat";
const IN_CHAT_MARKER: &[u8] = b"approvals-in-chat-v1";

/// The keys of `chat`'s entries start with this.
#[must_use]
pub fn chat_prefix(chat: &ChatRef) -> Vec<u8> {
    let mut key = serde_json::to_vec(chat).unwrap_or_default();
    key.push(0);
    key
}

fn in_chat_key(chat: &ChatRef, token: &str) -> Vec<u8> {
    let mut key = chat_prefix(chat);
    key.extend_from_slice(token.as_bytes());
    key
}

/// Notes that the card `token` is shown at `posted` (before the record says so).
pub fn shown_in(store: &dyn Store, token: &str, posted: &[CardRef]) -> Result<(), StoreError> {
    for at in posted {
        store.insert(IN_CHAT_TREE, &in_chat_key(&at.chat, token), b"")?;
    }
    Ok(())
}

#[must_use]
pub fn waiting_key(expires: u64, token: &str) -> Vec<u8> {
    crate::store::aged::key(expires, token.as_bytes())
}

/// The expiry and token of a waiting-index key.
#[must_use]
pub fn split_waiting_key(key: &[u8]) -> Option<(u64, &str)> {
    let expires = crate::store::aged::time_of(key)?;
    Some((expires, std::str::from_utf8(key.get(8..)?).ok()?))
}

#[must_use]
pub fn call_key(session: &str, run: &str, call_id: &str) -> Vec<u8> {
    format!("{session}\0{run}\0{call_id}").into_bytes()
}

/// Writes the index entries of a record about to be written.
pub fn add(store: &dyn Store, record: &PendingApproval) -> Result<(), StoreError> {
    if record.state == PendingState::Waiting {
        store.insert(
            WAITING_TREE,
            &waiting_key(record.expires, &record.token),
            b"",
        )?;
    }
    store.insert(
        BY_CALL_TREE,
        &call_key(&record.session, &record.run, &record.call_id),
        record.token.as_bytes(),
    )?;
    Ok(())
}

/// Settled records by when they were settled (`store::aged` keys), for retention.
pub const SETTLED_TREE: &str = "approvals_settled";

/// Dates the settling of record `token`, before it is settled: a kill can keep any prefix of
/// the writes, and a settled record without its date would never be pruned. A date whose
/// record is still waiting (the kill came first, or the settling lost a race) is only dropped.
pub fn date_settling(store: &dyn Store, token: &str) -> Result<(), StoreError> {
    store
        .insert(
            SETTLED_TREE,
            &crate::store::aged::key(crate::clock::now_secs(), token.as_bytes()),
            b"",
        )
        .map(|_| ())
}

/// Drops the waiting entries of a record that was just settled.
pub fn settled(store: &dyn Store, record: &PendingApproval) -> Result<(), StoreError> {
    for at in &record.posted_to {
        store.delete(IN_CHAT_TREE, &in_chat_key(&at.chat, &record.token))?;
    }
    store.delete(WAITING_TREE, &waiting_key(record.expires, &record.token))
}

/// Indexes a store written before the indexes existed (once: a marker says it was done).
pub fn index_existing(
    store: &dyn Store,
    tree: &str,
    decode: impl Fn(&[u8]) -> Option<PendingApproval>,
) -> Result<(), StoreError> {
    crate::store::migrate::once(store, INDEXED_MARKER, || {
        for (_, bytes) in store.scan_prefix(tree, b"")? {
            if let Some(record) = decode(&bytes) {
                add(store, &record)?;
            }
        }
        Ok(())
    })?;
    // The chat index came later: the waiting cards (found through their own index) only.
    crate::store::migrate::once(store, IN_CHAT_MARKER, || {
        for (key, _) in store.scan_prefix(WAITING_TREE, b"")? {
            let Some((_, token)) = split_waiting_key(&key) else {
                continue;
            };
            if let Some(record) = store.get(tree, token.as_bytes())?.and_then(|b| decode(&b))
                && record.state == PendingState::Waiting
            {
                shown_in(store, &record.token, &record.posted_to)?;
            }
        }
        Ok(())
    })
}
