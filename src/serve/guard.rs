//! The guard every bridge is wrapped in: whatever the runtime sends to a chat — an answer, a
//! notice, a press answer, the progress line, and every field of a card (reason, details,
//! button labels, question choices, the outcome) — passes the leak guard (configured secrets
//! replaced) and is shown as it is (control and invisible characters escaped; see
//! `tollgate_surface::text`). Wrapping the bridge, rather than guarding at each call site,
//! means a field added later cannot reach a chat unguarded.

use crate::policy::redact::Redactor;
use std::sync::Arc;
use tollgate_surface::text::{Layout, show_exactly, show_prose};
use tollgate_surface::{
    Bridge, BridgeFuture, CardOutcome, CardRef, CardView, ChatRef, CommandSpec, EventSender,
    FetchSink, Inbound, Limits, Platform, PressHandle, RemoteFile,
};

/// A bridge whose outgoing text is guarded.
pub struct Guarded {
    inner: Arc<dyn Bridge>,
    redactor: Redactor,
}

impl Guarded {
    pub fn new(inner: Arc<dyn Bridge>, redactor: Redactor) -> Self {
        Guarded { inner, redactor }
    }

    /// Text shown exactly (cards, notices, press answers).
    fn exact(&self, text: &str, layout: Layout) -> String {
        guard_text(&self.redactor, text, layout)
    }

    /// Prose (answers, progress).
    fn prose(&self, text: &str) -> String {
        show_prose(&self.redactor.redact(text))
    }

    fn card(&self, card: &CardView) -> CardView {
        guard_card(card, &self.redactor)
    }
}

/// One field of a card (or a notice) as every surface shows it, the console included:
/// secrets replaced, then controls and invisible characters escaped.
#[must_use]
pub fn guard_text(redactor: &Redactor, text: &str, layout: Layout) -> String {
    show_exactly(&redactor.redact(text), layout)
}

/// A card's fields guarded the way every surface shows them.
#[must_use]
pub fn guard_card(card: &CardView, redactor: &Redactor) -> CardView {
    card.map_text(&|text, layout| guard_text(redactor, text, layout))
}

impl Bridge for Guarded {
    fn platform(&self) -> Platform {
        self.inner.platform()
    }

    fn limits(&self) -> Limits {
        self.inner.limits()
    }

    fn connected(&self) -> bool {
        self.inner.connected()
    }

    fn listen(&self, events: EventSender) -> BridgeFuture<'_, ()> {
        self.inner.listen(events)
    }

    fn send_answer<'a>(&'a self, chat: &'a ChatRef, markdown: &'a str) -> BridgeFuture<'a, ()> {
        Box::pin(async move { self.inner.send_answer(chat, &self.prose(markdown)).await })
    }

    fn send_notice<'a>(&'a self, chat: &'a ChatRef, text: &'a str) -> BridgeFuture<'a, CardRef> {
        Box::pin(async move {
            let text = self.exact(text, Layout::Lines);
            self.inner.send_notice(chat, &text).await
        })
    }

    fn post_card<'a>(&'a self, chat: &'a ChatRef, card: &'a CardView) -> BridgeFuture<'a, CardRef> {
        Box::pin(async move { self.inner.post_card(chat, &self.card(card)).await })
    }

    fn settle_card<'a>(
        &'a self,
        at: &'a CardRef,
        card: &'a CardView,
        outcome: &'a CardOutcome,
    ) -> BridgeFuture<'a, ()> {
        Box::pin(async move {
            let outcome = outcome.map_text(&|text, layout| self.exact(text, layout));
            self.inner.settle_card(at, &self.card(card), &outcome).await
        })
    }

    fn answer_press<'a>(
        &'a self,
        press: &'a PressHandle,
        text: &'a str,
        private: bool,
    ) -> BridgeFuture<'a, ()> {
        Box::pin(async move {
            let text = self.exact(text, Layout::Lines);
            self.inner.answer_press(press, &text, private).await
        })
    }

    fn typing<'a>(&'a self, chat: &'a ChatRef) -> BridgeFuture<'a, ()> {
        self.inner.typing(chat)
    }

    fn progress<'a>(
        &'a self,
        chat: &'a ChatRef,
        at: Option<&'a CardRef>,
        text: &'a str,
    ) -> BridgeFuture<'a, CardRef> {
        Box::pin(async move { self.inner.progress(chat, at, &self.prose(text)).await })
    }

    fn fetch<'a>(
        &'a self,
        file: &'a RemoteFile,
        sink: &'a mut FetchSink,
        cap: u64,
    ) -> BridgeFuture<'a, u64> {
        self.inner.fetch(file, sink, cap)
    }

    fn open_thread<'a>(&'a self, message: &'a Inbound) -> BridgeFuture<'a, ()> {
        self.inner.open_thread(message)
    }

    fn register_commands<'a>(&'a self, commands: &'a [CommandSpec]) -> BridgeFuture<'a, ()> {
        self.inner.register_commands(commands)
    }
}
