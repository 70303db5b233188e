//! Where events go, decided in microseconds so no chat waits on another: a message (or a
//! command) goes to its session's inbox, drained in order by that session's own task — one
//! session's slow download or rate-limited notice holds back only that session; a press runs on
//! its own task, at most [`PRESSES_AT_ONCE`] at a time.

use super::inbound::{Incoming, handle_incoming};
use super::presses::handle_press;
use super::sessions::Service;
use super::shared::lock;
use crate::router::chat_session_key;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Semaphore, mpsc};
use tollgate_surface::BridgeEvent;

/// Messages one session may have waiting to be let in. Its rate limit refuses far fewer; past
/// this a flood is dropped (and logged) rather than held in memory.
const INBOX_CAP: usize = 64;

/// Presses handled at once (each is a store write and a few platform calls).
pub const PRESSES_AT_ONCE: usize = 32;

/// An inbox's task ends after this long without a message (the next one starts it again).
const INBOX_IDLE: Duration = Duration::from_secs(30);

type Inboxes = Arc<Mutex<HashMap<String, mpsc::Sender<Incoming>>>>;

/// Routes events to inboxes and tasks.
pub struct Dispatcher {
    service: Arc<Service>,
    inboxes: Inboxes,
    presses: Arc<Semaphore>,
}

impl Dispatcher {
    #[must_use]
    pub fn new(service: Arc<Service>) -> Self {
        Dispatcher {
            service,
            inboxes: Arc::default(),
            presses: Arc::new(Semaphore::new(PRESSES_AT_ONCE)),
        }
    }

    /// Sends `event` on its way; never waits.
    pub fn route(&self, event: BridgeEvent) {
        let incoming = match event {
            BridgeEvent::Press(press) => {
                let (shared, presses) = (self.service.shared.clone(), self.presses.clone());
                tokio::spawn(async move {
                    // Closed only if the semaphore is dropped, which it never is while routing.
                    let Ok(_permit) = presses.acquire_owned().await else {
                        return;
                    };
                    handle_press(&shared, press).await;
                });
                return;
            }
            BridgeEvent::Message(message) => Incoming::Message(message),
            BridgeEvent::Command(command) => Incoming::Command(command),
        };
        let (chat, sender) = incoming.origin();
        let Some(handle) = self.service.shared.bridge(chat.platform) else {
            return;
        };
        let key = chat_session_key(chat, sender, handle.settings.group_sessions_per_user);
        self.deliver(key, incoming);
    }

    /// Puts `incoming` in the inbox of session `key`, starting its task if none runs.
    fn deliver(&self, key: String, incoming: Incoming) {
        let mut inboxes = lock(&self.inboxes);
        let incoming = match inboxes.get(&key) {
            Some(inbox) => match inbox.try_send(incoming) {
                Ok(()) => return,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    self.service.shared.log(&format!(
                        "session {key} has {INBOX_CAP} messages waiting to be let in: one more was dropped"
                    ));
                    return;
                }
                // Its task ended between our look and now: start a fresh one.
                Err(mpsc::error::TrySendError::Closed(incoming)) => incoming,
            },
            None => incoming,
        };
        let (sender, receiver) = mpsc::channel(INBOX_CAP);
        // A fresh channel has room.
        let _ = sender.try_send(incoming);
        let own = sender.downgrade();
        inboxes.insert(key.clone(), sender);
        drop(inboxes);
        tokio::spawn(drain(
            self.service.clone(),
            self.inboxes.clone(),
            key,
            (own, receiver),
        ));
    }
}

/// Lets a session's messages in, one at a time, in the order they came.
async fn drain(
    service: Arc<Service>,
    inboxes: Inboxes,
    key: String,
    (own, mut receiver): (mpsc::WeakSender<Incoming>, mpsc::Receiver<Incoming>),
) {
    loop {
        match tokio::time::timeout(INBOX_IDLE, receiver.recv()).await {
            Ok(Some(incoming)) => handle_incoming(&service, &key, incoming).await,
            Ok(None) => return,
            Err(_) => {
                // Senders only send under this lock, so an empty inbox here stays empty.
                let mut inboxes = lock(&inboxes);
                if receiver.is_empty() {
                    let ours = own.upgrade().is_some_and(|mine| {
                        inboxes.get(&key).is_some_and(|s| s.same_channel(&mine))
                    });
                    if ours {
                        inboxes.remove(&key);
                    }
                    return;
                }
            }
        }
    }
}
