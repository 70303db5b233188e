//! The "Approve all N / Deny all N" row of a chat: posted when two or more cards wait there,
//! replaced whenever that set changes, so a press answers exactly the cards it named.

use super::shared::Shared;
use crate::approvals::{ApprovalToken, BulkApproval, PendingApproval};
use tollgate_surface::{Button, CardRef, ChatRef};

/// The waiting records whose cards are shown in `chat`.
pub fn waiting_in(shared: &Shared, chat: &ChatRef) -> Vec<PendingApproval> {
    let mut waiting: Vec<PendingApproval> = shared
        .approvals
        .waiting()
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.posted_to.iter().any(|c| c.chat.id == chat.id))
        .collect();
    waiting.sort_by(|a, b| (a.posted, &a.token).cmp(&(b.posted, &b.token)));
    waiting
}

/// Brings the chat's "all N" row up to date with the cards waiting there.
pub async fn refresh_bulk_row(shared: &Shared, chat: &ChatRef) {
    let mut rows = shared.bulk_rows.lock().await;
    let waiting = waiting_in(shared, chat);
    let tokens: Vec<String> = waiting.iter().map(|r| r.token.clone()).collect();
    if let Some((old, card)) = rows.get(&chat.id) {
        let unchanged = ApprovalToken::parse(old)
            .and_then(|t| shared.bulks.get(&t).ok().flatten())
            .is_some_and(|b| b.cards == tokens && !b.used);
        if unchanged {
            return;
        }
        let _ = shared
            .bot
            .edit_card(
                card.chat.id,
                card.message_id,
                "(the waiting approvals changed: this row is no longer valid)",
                &[],
            )
            .await;
        rows.remove(&chat.id);
    }
    if tokens.len() < 2 {
        return;
    }
    let Ok(token) = ApprovalToken::generate() else {
        return;
    };
    let bulk = BulkApproval {
        token: token.to_string(),
        cards: tokens.clone(),
        posted_to: None,
        used: false,
    };
    if let Err(e) = shared.bulks.create(&bulk) {
        shared.log(&format!("saving an approve-all row: {e}"));
        return;
    }
    let n = tokens.len();
    let listed: Vec<String> = waiting
        .iter()
        .map(|r| {
            format!(
                "• <code>{}</code>",
                tollgate_telegram::render::escape(&r.tool)
            )
        })
        .collect();
    let html = format!(
        "{n} approvals are waiting here (admins only):\n{}",
        listed.join("\n")
    );
    let buttons = vec![vec![
        Button {
            label: format!("✅ Approve all {n}"),
            token: token.button("approve-all"),
        },
        Button {
            label: format!("⛔ Deny all {n}"),
            token: token.button("deny-all"),
        },
    ]];
    match shared.bot.send_card(chat, &html, &buttons).await {
        Ok(message_id) => {
            let card = CardRef {
                chat: chat.clone(),
                message_id,
            };
            let _ = shared.bulks.set_posted(&token, card.clone());
            rows.insert(chat.id, (token.to_string(), card));
        }
        Err(e) => shared.log(&format!("posting an approve-all row: {e}")),
    }
}
