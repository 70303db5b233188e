//! The transcript a session runner's store keeps: while a session's worker lives, its store is
//! the only writer of the session's transcript, so a turn decodes what the store last wrote
//! instead of reading it back (a store read stepped aside from the async worker, every turn).

use super::{ChatMessage, RunStore, decode};
use std::sync::{Mutex, MutexGuard};

/// A transcript longer than this (encoded) is read from the store at each turn: a live worker
/// holds at most this much of it.
pub const KEPT_TRANSCRIPT_MAX: usize = 64 * 1024;

/// What the store holds for `session`'s transcript, as last read or written through this
/// store (`None`: no transcript).
pub(super) struct Kept {
    session: String,
    bytes: Option<Vec<u8>>,
}

/// The slot of a store that keeps its session's transcript.
pub(super) type KeptSlot = std::sync::Arc<Mutex<Option<Kept>>>;

impl RunStore {
    /// A store for one session's runner (and the tools that rewrite that session's
    /// transcript, which share its slot): it keeps the transcript it last read or wrote.
    /// Anything else that writes the transcript while the runner lives must go through it.
    #[must_use]
    pub fn keeping_transcript(store: std::sync::Arc<dyn crate::store::Store>) -> Self {
        RunStore {
            kept: Some(KeptSlot::default()),
            ..RunStore::new(store)
        }
    }

    /// The slot, if this store keeps a transcript (a poisoned lock still holds a whole value).
    fn kept_slot(&self) -> Option<MutexGuard<'_, Option<Kept>>> {
        self.kept
            .as_ref()
            .map(|slot| slot.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// `session`'s transcript as this store last read or wrote it, if it kept it.
    pub(super) fn kept_transcript(
        &self,
        session: &str,
    ) -> Option<Result<Vec<ChatMessage>, crate::store::StoreError>> {
        let slot = self.kept_slot()?;
        let kept = slot.as_ref().filter(|k| k.session == session)?;
        Some(kept.bytes.as_deref().map_or(Ok(Vec::new()), decode))
    }

    /// Keeps `bytes` as what the store now holds for `session`'s transcript (a transcript
    /// over [`KEPT_TRANSCRIPT_MAX`] is not kept: the next turn reads it).
    pub(super) fn keep_transcript(&self, session: &str, bytes: Option<Vec<u8>>) {
        if let Some(mut slot) = self.kept_slot() {
            *slot = match bytes {
                Some(bytes) if bytes.len() > KEPT_TRANSCRIPT_MAX => None,
                bytes => Some(Kept {
                    session: session.to_string(),
                    bytes,
                }),
            };
        }
    }

    /// Forgets the kept transcript (a write failed: what the store holds is not known here).
    pub(super) fn forget_kept_transcript(&self) {
        if let Some(mut slot) = self.kept_slot() {
            *slot = None;
        }
    }
}
