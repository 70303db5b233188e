//! The "Approve all N / Deny all N" row of a chat: posted when two or more cards wait there,
//! replaced whenever that set changes, so a press answers exactly the cards it named.
//!
//! Each chat's row is kept by that chat's own keeper task, nudged whenever a card there is
//! posted or settled: no lock is held while a platform is called, and one chat's slow edits never
//! hold back another's. A row that is replaced is marked so in the store before its buttons are
//! taken off, so pressing it is refused like pressing a used one.

use super::shared::{Shared, lock};
use crate::approvals::{ApprovalToken, BulkApproval, BulkChoice, PendingApproval};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tollgate_surface::{Button, CardOutcome, CardView, ChatRef};

/// The keepers of the chats' rows.
#[derive(Default)]
pub struct BulkRows {
    keepers: Mutex<HashMap<ChatRef, mpsc::Sender<()>>>,
}

impl BulkRows {
    /// Has `chat`'s keeper bring its row up to date (soon, not before this returns). Nudges
    /// that arrive while it works are folded into one more look.
    pub fn refresh(&self, shared: &Arc<Shared>, chat: &ChatRef) {
        let mut keepers = lock(&self.keepers);
        if let Some(keeper) = keepers.get(chat) {
            match keeper.try_send(()) {
                // Full: a look is already due, and it will see this change too.
                Ok(()) | Err(mpsc::error::TrySendError::Full(())) => return,
                Err(mpsc::error::TrySendError::Closed(())) => {}
            }
        }
        let (nudge, nudged) = mpsc::channel(1);
        let _ = nudge.try_send(());
        keepers.insert(chat.clone(), nudge);
        tokio::spawn(keep(shared.clone(), chat.clone(), nudged));
    }
}

/// A chat's keeper: looks again at every nudge; ends when the chat has no row and no nudge.
async fn keep(shared: Arc<Shared>, chat: ChatRef, mut nudged: mpsc::Receiver<()>) {
    let mut current: Option<BulkApproval> = None;
    while nudged.recv().await.is_some() {
        update(&shared, &chat, &mut current).await;
        if current.is_none() {
            // Nudges are only sent under this lock: an empty channel here stays empty.
            let mut keepers = lock(&shared.bulk_rows.keepers);
            if nudged.is_empty() {
                keepers.remove(&chat);
                return;
            }
        }
    }
}

/// The waiting records whose cards are shown in `chat`, oldest first.
pub fn waiting_in(shared: &Shared, chat: &ChatRef) -> Vec<PendingApproval> {
    let mut waiting: Vec<PendingApproval> = shared
        .approvals
        .waiting_in_chat(chat)
        .unwrap_or_default()
        .into_iter()
        // A picker has nothing to approve until someone picks: no "all N" row answers it.
        .filter(|r| r.options.is_empty())
        .collect();
    waiting.sort_by(|a, b| (a.posted, &a.token).cmp(&(b.posted, &b.token)));
    waiting
}

/// The row's card: its tools listed, and its two buttons (none once settled).
#[must_use]
pub fn row_view(row: &BulkApproval, live: bool) -> CardView {
    let n = row.cards.len();
    let rows = match (live, ApprovalToken::parse(&row.token)) {
        (true, Some(token)) => vec![vec![
            Button {
                label: format!("✅ Approve all {n}"),
                token: token.button(BulkChoice::ApproveAll.as_str()),
            },
            Button {
                label: format!("⛔ Deny all {n}"),
                token: token.button(BulkChoice::DenyAll.as_str()),
            },
        ]],
        _ => Vec::new(),
    };
    CardView::Bulk {
        tools: row.tools.clone(),
        rows,
    }
}

/// Brings the chat's row up to date with the cards waiting there.
async fn update(shared: &Shared, chat: &ChatRef, current: &mut Option<BulkApproval>) {
    let waiting = waiting_in(shared, chat);
    let tokens: Vec<String> = waiting.iter().map(|r| r.token.clone()).collect();
    if let Some(row) = current.take() {
        let Some(token) = ApprovalToken::parse(&row.token) else {
            return;
        };
        let live = shared
            .bulks
            .get(&token)
            .ok()
            .flatten()
            .is_some_and(|b| !b.used && !b.replaced);
        if live && row.cards == tokens {
            *current = Some(row);
            return;
        }
        // Retired first, so a press from now on is refused; a row pressed first is the
        // press's to settle.
        match shared.bulks.retire(&token) {
            Ok(true) => retire_on_screen(shared, &row).await,
            Ok(false) => {}
            Err(e) => {
                // Not retired: it stays the chat's row (a new one beside it would leave two
                // live); the next nudge tries again.
                shared.log(&format!("replacing an approve-all row: {e}"));
                *current = Some(row);
                return;
            }
        }
    }
    if tokens.len() < 2 {
        return;
    }
    let Some(handle) = shared.bridge(chat.platform) else {
        return;
    };
    let Ok(token) = ApprovalToken::generate() else {
        return;
    };
    let mut row = BulkApproval {
        token: token.to_string(),
        cards: tokens,
        tools: waiting.iter().map(|r| r.tool.clone()).collect(),
        posted_to: None,
        used: false,
        replaced: false,
    };
    // Write ahead: the row goes out only once it is on disk.
    if let Err(e) = shared.bulks.create(&row) {
        shared.log(&format!("saving an approve-all row: {e}"));
        return;
    }
    match handle.bridge.post_card(chat, &row_view(&row, true)).await {
        Ok(at) => {
            if let Err(e) = shared.bulks.set_posted(&token, at.clone()) {
                shared.log(&format!("recording where an approve-all row went: {e}"));
            }
            // A press read while the row was being posted waits for this.
            shared.cards_posted.notify_waiters();
            row.posted_to = Some(at);
            *current = Some(row);
        }
        Err(e) => {
            shared.log(&format!("posting an approve-all row: {e}"));
            let _ = shared.bulks.retire(&token);
            shared.cards_posted.notify_waiters();
        }
    }
}

/// Shows a replaced row as replaced, its buttons gone.
pub async fn retire_on_screen(shared: &Shared, row: &BulkApproval) {
    if let Some(at) = &row.posted_to {
        shared
            .settle_view(
                &row_view(row, false),
                std::slice::from_ref(at),
                &CardOutcome::Replaced,
            )
            .await;
    }
}
