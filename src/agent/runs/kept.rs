//! The transcript a session runner's store keeps: while a session's worker lives, its runners
//! write the session's transcript through one store, so a turn decodes what that store last
//! read or wrote instead of reading it back (a store read stepped aside from the async worker,
//! every turn). The one other writer, retention, tells the worker to forget it
//! (`serve::sessions::Service::remember_if_live`).

use super::{ChatMessage, RunStore, decode};
use std::sync::{Mutex, MutexGuard};

/// A transcript longer than this (encoded) is read from the store at each turn: a live worker
/// holds at most this much of it.
pub const KEPT_TRANSCRIPT_MAX: usize = 64 * 1024;

/// What the store holds for `session`'s transcript, as last read or written through this
/// store (`None`: no transcript).
struct Kept {
    session: String,
    bytes: Option<Box<[u8]>>,
}

/// The slot of a store that keeps its session's transcript.
#[derive(Default)]
pub(super) struct KeptSlot {
    kept: Option<Kept>,
    /// Counts every change to `kept`: what a read or write of the store found or wrote is kept
    /// only if nothing was kept or forgotten while it ran.
    changes: u64,
}

/// A [`KeptSlot`] shared by a store's clones.
pub(super) type SharedSlot = std::sync::Arc<Mutex<KeptSlot>>;

/// A session's transcript as kept, or that it must be read from the store.
pub(super) enum Lookup {
    Kept(Result<Vec<ChatMessage>, crate::store::StoreError>),
    /// Read it, then pass `changes` to [`RunStore::keep_transcript_if_unchanged`].
    Read {
        changes: u64,
    },
}

impl RunStore {
    /// A store for one session's runners (and the tools that rewrite that session's
    /// transcript): it keeps the transcript it last read or wrote, which its clones share.
    /// While it lives, whatever else writes the session's transcript must go through it or
    /// call [`RunStore::forget_kept_transcript`] after.
    #[must_use]
    pub fn keeping_transcript(store: std::sync::Arc<dyn crate::store::Store>) -> Self {
        RunStore {
            kept: Some(SharedSlot::default()),
            ..RunStore::new(store)
        }
    }

    /// The slot, if this store keeps a transcript (a poisoned lock still holds a whole value).
    fn kept_slot(&self) -> Option<MutexGuard<'_, KeptSlot>> {
        self.kept
            .as_ref()
            .map(|slot| slot.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// `session`'s transcript as this store last read or wrote it, or that it must be read.
    pub(super) fn kept_transcript(&self, session: &str) -> Lookup {
        let Some(slot) = self.kept_slot() else {
            return Lookup::Read { changes: 0 };
        };
        let Some(kept) = slot.kept.as_ref().filter(|k| k.session == session) else {
            return Lookup::Read {
                changes: slot.changes,
            };
        };
        Lookup::Kept(kept.bytes.as_deref().map_or(Ok(Vec::new()), decode))
    }

    /// The count of changes to the slot, taken before a read or write of the store whose
    /// outcome is then kept with [`RunStore::keep_transcript_if_unchanged`].
    pub(super) fn kept_changes(&self) -> u64 {
        self.kept_slot().map_or(0, |slot| slot.changes)
    }

    /// Keeps `bytes` as what the store holds for `session`'s transcript (just read or
    /// written) if nothing changed the slot since `changes` was taken; otherwise forgets it, as
    /// what the store holds now depends on which of the two came last. A transcript over
    /// [`KEPT_TRANSCRIPT_MAX`] is not kept.
    pub(super) fn keep_transcript_if_unchanged(
        &self,
        session: &str,
        bytes: Option<&[u8]>,
        changes: u64,
    ) {
        let Some(mut slot) = self.kept_slot() else {
            return;
        };
        if slot.changes != changes {
            slot.forget();
            return;
        }
        slot.kept = match bytes {
            Some(bytes) if bytes.len() > KEPT_TRANSCRIPT_MAX => None,
            bytes => Some(Kept {
                session: session.to_string(),
                bytes: bytes.map(Box::from),
            }),
        };
        slot.changes += 1;
    }

    /// Forgets the kept transcript: the next read goes to the store (after a failed write, or
    /// a write made elsewhere, such as retention's).
    pub fn forget_kept_transcript(&self) {
        if let Some(mut slot) = self.kept_slot() {
            slot.forget();
        }
    }
}

impl KeptSlot {
    fn forget(&mut self) {
        self.kept = None;
        self.changes += 1;
    }
}
