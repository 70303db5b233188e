//! An in-test bridge: a second platform behind the same seam (it says it is Discord), driven
//! from the test and recording everything the runtime sends it. Its recorder outlives any one
//! bridge instance, so a "restarted" runtime gets a fresh bridge and the test sees both.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tollgate_surface::limits::{DISCORD_CUSTOM_ID, DISCORD_MESSAGE};
use tollgate_surface::{
    Bridge, BridgeError, BridgeErrorKind, BridgeEvent, BridgeFuture, CardOutcome, CardRef,
    CardView, ChatRef, CommandSpec, EventSender, Inbound, Limits, Platform, Press, PressHandle,
    RemoteFile, UserRef,
};

/// What the runtime did through the bridge.
#[derive(Clone, Debug)]
pub enum Sent {
    Answer {
        chat: ChatRef,
        text: String,
    },
    Notice {
        chat: ChatRef,
        text: String,
    },
    Card {
        at: CardRef,
        view: CardView,
    },
    /// A card the bridge refused to post (see [`Recorder::refuse_posts`]).
    RefusedCard {
        chat: ChatRef,
    },
    Settled {
        at: CardRef,
        outcome: CardOutcome,
    },
    PressAnswer {
        handle: String,
        text: String,
        private: bool,
    },
    Commands(Vec<String>),
}

/// The test's side of the bridge.
#[derive(Default)]
pub struct Recorder {
    sent: Mutex<Vec<Sent>>,
    inbox: Mutex<VecDeque<BridgeEvent>>,
    arrived: Notify,
    next_id: AtomicI64,
    refuse_posts: AtomicUsize,
}

fn user(id: i64) -> UserRef {
    UserRef {
        id,
        display: format!("User{id}"),
        is_bot: false,
    }
}

impl Recorder {
    /// Hands an event to whichever bridge instance is listening.
    pub fn push(&self, event: BridgeEvent) {
        self.inbox.lock().unwrap().push_back(event);
        // One listener at a time: a stored permit wakes it even if it is not waiting yet.
        self.arrived.notify_one();
    }

    /// A direct message from `from`.
    pub fn say(&self, from: i64, text: &str) {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        self.push(BridgeEvent::Message(Inbound {
            chat: ChatRef::private(Platform::Discord, from),
            sender: user(from),
            roles: Vec::new(),
            message_id: id,
            text: text.to_string(),
            mentioned: false,
            reply_to_bot: false,
            starts_thread: false,
            in_bot_thread: false,
            files: Vec::new(),
        }));
    }

    /// A press by `from`, in their direct messages, of a button carrying `token` on message
    /// `message_id`; returns the press's handle.
    pub fn press(&self, from: i64, message_id: i64, token: &str) -> String {
        let handle = format!("press-{}", self.next_id.fetch_add(1, Ordering::SeqCst));
        let chat = ChatRef::private(Platform::Discord, from);
        self.push(BridgeEvent::Press(Press {
            token: token.to_string(),
            presser: user(from),
            chat: chat.clone(),
            roles: Vec::new(),
            message: Some(CardRef { chat, message_id }),
            handle: PressHandle(handle.clone()),
        }));
        handle
    }

    /// The next `n` cards are refused (as a platform outage would).
    pub fn refuse_posts(&self, n: usize) {
        self.refuse_posts.store(n, Ordering::SeqCst);
    }

    pub fn sent(&self) -> Vec<Sent> {
        self.sent.lock().unwrap().clone()
    }

    fn record(&self, sent: Sent) {
        self.sent.lock().unwrap().push(sent);
    }

    /// Waits until `check` finds something in what was sent, or panics after 20 s.
    pub async fn wait_for<T>(&self, what: &str, check: impl Fn(&[Sent]) -> Option<T>) -> T {
        let start = Instant::now();
        loop {
            if let Some(found) = check(&self.sent()) {
                return found;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "timed out waiting for {what}; sent: {:#?}",
                self.sent()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The answer given to press `handle`.
    pub async fn press_answer(&self, handle: &str) -> (String, bool) {
        self.wait_for("the press's answer", |sent| {
            sent.iter().find_map(|s| match s {
                Sent::PressAnswer {
                    handle: h,
                    text,
                    private,
                } if h == handle => Some((text.clone(), *private)),
                _ => None,
            })
        })
        .await
    }
}

/// One instance of the bridge, as one runtime holds it.
pub struct TestBridge {
    pub recorder: Arc<Recorder>,
}

impl Bridge for TestBridge {
    fn platform(&self) -> Platform {
        Platform::Discord
    }

    fn connected(&self) -> bool {
        true
    }

    fn limits(&self) -> Limits {
        Limits {
            message_chars: DISCORD_MESSAGE,
            button_data: DISCORD_CUSTOM_ID,
            download_bytes: 8 * 1024 * 1024,
            typing_lasts: Duration::from_secs(10),
        }
    }

    fn listen(&self, events: EventSender) -> BridgeFuture<'_, ()> {
        Box::pin(async move {
            loop {
                let next = self.recorder.inbox.lock().unwrap().pop_front();
                match next {
                    Some(event) => {
                        if events.send(event).await.is_err() {
                            return Ok(());
                        }
                    }
                    None => self.recorder.arrived.notified().await,
                }
            }
        })
    }

    fn send_answer<'a>(&'a self, chat: &'a ChatRef, markdown: &'a str) -> BridgeFuture<'a, ()> {
        self.recorder.record(Sent::Answer {
            chat: chat.clone(),
            text: markdown.to_string(),
        });
        Box::pin(async { Ok(()) })
    }

    fn send_notice<'a>(&'a self, chat: &'a ChatRef, text: &'a str) -> BridgeFuture<'a, CardRef> {
        self.recorder.record(Sent::Notice {
            chat: chat.clone(),
            text: text.to_string(),
        });
        let message_id = self.recorder.next_id.fetch_add(1, Ordering::SeqCst);
        let at = CardRef {
            chat: chat.clone(),
            message_id,
        };
        Box::pin(async move { Ok(at) })
    }

    fn post_card<'a>(&'a self, chat: &'a ChatRef, card: &'a CardView) -> BridgeFuture<'a, CardRef> {
        let refuse = self
            .recorder
            .refuse_posts
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if refuse {
            self.recorder
                .record(Sent::RefusedCard { chat: chat.clone() });
            return Box::pin(async {
                Err(BridgeError::new(
                    BridgeErrorKind::Transient,
                    "test bridge: refused",
                ))
            });
        }
        let at = CardRef {
            chat: chat.clone(),
            message_id: self.recorder.next_id.fetch_add(1, Ordering::SeqCst),
        };
        self.recorder.record(Sent::Card {
            at: at.clone(),
            view: card.clone(),
        });
        Box::pin(async move { Ok(at) })
    }

    fn settle_card<'a>(
        &'a self,
        at: &'a CardRef,
        _card: &'a CardView,
        outcome: &'a CardOutcome,
    ) -> BridgeFuture<'a, ()> {
        self.recorder.record(Sent::Settled {
            at: at.clone(),
            outcome: outcome.clone(),
        });
        Box::pin(async { Ok(()) })
    }

    fn answer_press<'a>(
        &'a self,
        press: &'a PressHandle,
        text: &'a str,
        private: bool,
    ) -> BridgeFuture<'a, ()> {
        self.recorder.record(Sent::PressAnswer {
            handle: press.0.clone(),
            text: text.to_string(),
            private,
        });
        Box::pin(async { Ok(()) })
    }

    fn typing<'a>(&'a self, _chat: &'a ChatRef) -> BridgeFuture<'a, ()> {
        Box::pin(async { Ok(()) })
    }

    fn progress<'a>(
        &'a self,
        chat: &'a ChatRef,
        at: Option<&'a CardRef>,
        _text: &'a str,
    ) -> BridgeFuture<'a, CardRef> {
        let at = at.cloned().unwrap_or_else(|| CardRef {
            chat: chat.clone(),
            message_id: self.recorder.next_id.fetch_add(1, Ordering::SeqCst),
        });
        Box::pin(async move { Ok(at) })
    }

    fn fetch<'a>(
        &'a self,
        _file: &'a RemoteFile,
        _sink: &'a mut tollgate_surface::FetchSink,
        _cap: u64,
    ) -> BridgeFuture<'a, u64> {
        Box::pin(async { Err(BridgeError::rejected("test bridge: no files here")) })
    }

    fn open_thread<'a>(&'a self, _message: &'a Inbound) -> BridgeFuture<'a, ()> {
        Box::pin(async { Ok(()) })
    }

    fn register_commands<'a>(&'a self, commands: &'a [CommandSpec]) -> BridgeFuture<'a, ()> {
        self.recorder.record(Sent::Commands(
            commands.iter().map(|c| c.name.to_string()).collect(),
        ));
        Box::pin(async { Ok(()) })
    }
}
