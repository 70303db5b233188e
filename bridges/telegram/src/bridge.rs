//! The Telegram bridge: the [`Bridge`] the runtime calls, over the Bot API. It polls updates and
//! hands them in, renders cards and answers as Telegram HTML, and maps teloxide's errors to the
//! seam's kinds. It decides nothing.

use crate::bot::TelegramBot;
use crate::card::{render_view, settled_html};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tollgate_surface::limits::{TELEGRAM_CALLBACK_DATA, TELEGRAM_DOWNLOAD_BYTES, TELEGRAM_MESSAGE};
use tollgate_surface::{
    Bridge, BridgeError, BridgeFuture, CardOutcome, CardRef, CardView, ChatRef, CommandSpec,
    EventSender, FetchSink, Inbound, Limits, Platform, PressHandle, RemoteFile,
};

/// How long one `getUpdates` long-poll waits.
const POLL_WAIT: Duration = Duration::from_secs(25);

/// Failed polls in a row after which the bridge counts as disconnected: one failure is a
/// blip (and a long poll that follows it only returns when an update comes, up to
/// [`POLL_WAIT`] later), three — about six seconds of failing — is an outage.
const FAILED_POLLS_DOWN: u32 = 3;

/// Telegram shows "typing…" for five seconds per call.
const TYPING_LASTS: Duration = Duration::from_secs(5);

/// A connected Telegram bot as a bridge.
pub struct TelegramBridge {
    bot: TelegramBot,
    /// Polling works: connecting reached the Bot API, and fewer than
    /// [`FAILED_POLLS_DOWN`] polls in a row have failed since a poll last succeeded.
    connected: AtomicBool,
}

impl TelegramBridge {
    #[must_use]
    pub fn new(bot: TelegramBot) -> Self {
        TelegramBridge {
            bot,
            connected: AtomicBool::new(true),
        }
    }

    /// The bot's username (for the log).
    #[must_use]
    pub fn username(&self) -> &str {
        &self.bot.username
    }
}

impl Bridge for TelegramBridge {
    fn platform(&self) -> Platform {
        Platform::Telegram
    }

    fn limits(&self) -> Limits {
        Limits {
            message_chars: TELEGRAM_MESSAGE,
            button_data: TELEGRAM_CALLBACK_DATA,
            download_bytes: TELEGRAM_DOWNLOAD_BYTES,
            typing_lasts: TYPING_LASTS,
        }
    }

    fn connected(&self) -> bool {
        self.connected.load(Ordering::Relaxed)
    }

    fn listen(&self, events: EventSender) -> BridgeFuture<'_, ()> {
        Box::pin(async move {
            let mut failures = 0u32;
            loop {
                match self.bot.poll(POLL_WAIT).await {
                    Ok(updates) => {
                        failures = 0;
                        self.connected.store(true, Ordering::Relaxed);
                        for update in updates {
                            // A full channel makes polling wait: nothing is dropped.
                            if events.send(update).await.is_err() {
                                self.connected.store(false, Ordering::Relaxed);
                                return Ok(());
                            }
                        }
                    }
                    Err(e) => {
                        failures = failures.saturating_add(1);
                        if failures >= FAILED_POLLS_DOWN {
                            self.connected.store(false, Ordering::Relaxed);
                        }
                        tracing::warn!(
                            target: "tollgate::serve",
                            "polling Telegram: {}",
                            self.bot.redact(&e.to_string())
                        );
                        let wait = match e.retry_after() {
                            Some(wait) => {
                                tollgate_surface::metered::rate_limit_wait(
                                    Platform::Telegram,
                                    wait,
                                );
                                wait
                            }
                            None => Duration::from_secs(u64::from(failures.min(30))),
                        };
                        tokio::time::sleep(wait).await;
                    }
                }
            }
        })
    }

    fn send_answer<'a>(&'a self, chat: &'a ChatRef, markdown: &'a str) -> BridgeFuture<'a, ()> {
        Box::pin(self.bot.send_answer(chat, markdown))
    }

    fn send_notice<'a>(&'a self, chat: &'a ChatRef, text: &'a str) -> BridgeFuture<'a, CardRef> {
        Box::pin(async move {
            let message_id = self.bot.send_notice(chat, text).await?;
            Ok(CardRef {
                chat: chat.clone(),
                message_id,
            })
        })
    }

    fn post_card<'a>(&'a self, chat: &'a ChatRef, card: &'a CardView) -> BridgeFuture<'a, CardRef> {
        Box::pin(async move {
            let rendered = render_view(card);
            // The whole text goes first: a card whose details were cut is pressable only once
            // they can be read (nobody approves what they cannot read). If they cannot be
            // sent, neither is the card, and the caller is told why.
            // The card replies to its file: a file someone else posts beside it is not it.
            let mut details = None;
            if let Some(full) = &rendered.full_details {
                details = Some(
                    self.bot
                        .send_document(chat, "approval-details.txt", full)
                        .await
                    .map_err(|e| BridgeError {
                        message: format!(
                            "the card's full details could not be attached, so the card was not sent: {}",
                            self.bot.redact(&e.message)
                        ),
                        ..e
                    })?,
                );
            }
            let message_id = self
                .bot
                .send_card(chat, &rendered.html, card.rows(), details)
                .await?;
            Ok(CardRef {
                chat: chat.clone(),
                message_id,
            })
        })
    }

    fn settle_card<'a>(
        &'a self,
        at: &'a CardRef,
        card: &'a CardView,
        outcome: &'a CardOutcome,
    ) -> BridgeFuture<'a, ()> {
        Box::pin(async move {
            let html = settled_html(card, outcome);
            self.bot
                .edit_card(at.chat.id, at.message_id, &html, &[])
                .await
        })
    }

    fn answer_press<'a>(
        &'a self,
        press: &'a PressHandle,
        text: &'a str,
        private: bool,
    ) -> BridgeFuture<'a, ()> {
        // Telegram shows a press's answer to the presser only; an alert is the private form.
        Box::pin(self.bot.answer_press(&press.0, text, private))
    }

    fn typing<'a>(&'a self, chat: &'a ChatRef) -> BridgeFuture<'a, ()> {
        Box::pin(self.bot.typing(chat))
    }

    fn progress<'a>(
        &'a self,
        chat: &'a ChatRef,
        at: Option<&'a CardRef>,
        text: &'a str,
    ) -> BridgeFuture<'a, CardRef> {
        Box::pin(async move {
            let message_id = match at {
                None => self.bot.send_progress(chat, text).await?,
                Some(at) => {
                    self.bot
                        .edit_progress(at.chat.id, at.message_id, text)
                        .await?;
                    at.message_id
                }
            };
            Ok(CardRef {
                chat: chat.clone(),
                message_id,
            })
        })
    }

    fn fetch<'a>(
        &'a self,
        file: &'a RemoteFile,
        sink: &'a mut FetchSink,
        cap: u64,
    ) -> BridgeFuture<'a, u64> {
        Box::pin(self.bot.download(&file.id, sink, cap))
    }

    fn open_thread<'a>(&'a self, _message: &'a Inbound) -> BridgeFuture<'a, ()> {
        // Telegram conversations stay where they started (a group, or its forum topic).
        Box::pin(async { Ok(()) })
    }

    fn register_commands<'a>(&'a self, commands: &'a [CommandSpec]) -> BridgeFuture<'a, ()> {
        Box::pin(async move {
            let menu: Vec<(&str, &str)> =
                commands.iter().map(|c| (c.name, c.description)).collect();
            self.bot.set_commands(&menu).await
        })
    }
}
