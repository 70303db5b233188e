//! Where events go, decided in microseconds so no chat waits on another: a message (or a
//! command) goes to its session's inbox, drained in order by a task that runs only while the
//! inbox holds something — one session's slow download or rate-limited notice holds back only
//! that session; a press runs on its own task, in its lane ([`PressLanes`]).

use super::inbound::{Incoming, handle_incoming};
use super::press_lanes::{Dropped, PressLanes};
use super::presses::handle_press;
use super::sessions::Service;
use super::shared::lock;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use tollgate_surface::BridgeEvent;

/// Messages one session may have waiting to be let in. Its rate limit refuses far fewer; past
/// this a flood is dropped (and logged) rather than held in memory.
const INBOX_CAP: usize = 64;

/// The sessions with messages waiting, and what waits. A session is here exactly while its
/// drain task runs: an idle session costs nothing.
type Inboxes = Arc<Mutex<HashMap<String, VecDeque<Incoming>>>>;

/// Routes events to inboxes and tasks.
pub struct Dispatcher {
    service: Arc<Service>,
    inboxes: Inboxes,
    /// Presses handed in and not yet handled: an admin's never waits behind others'.
    presses: PressLanes,
}

impl Dispatcher {
    #[must_use]
    pub fn new(service: Arc<Service>) -> Self {
        Dispatcher {
            service,
            inboxes: Arc::default(),
            presses: PressLanes::default(),
        }
    }

    /// Sends `event` on its way; never waits.
    pub fn route(&self, event: BridgeEvent) {
        let incoming = match event {
            BridgeEvent::Press(press) => {
                let shared = self.service.shared.clone();
                // Which lane only: the press's handling checks the admin again, against the
                // card's platform.
                let admin = shared.bridge(press.chat.platform).is_some_and(|h| {
                    h.settings
                        .is_admin(&press.presser, &press.roles, &press.chat)
                });
                let place = match self
                    .presses
                    .enter(admin, (press.chat.platform, press.presser.id))
                {
                    Ok(place) => place,
                    Err(dropped) => {
                        shared.log(&format!(
                            "a press from {} was dropped: {}",
                            press.presser.id,
                            match dropped {
                                Dropped::LaneFull(cap) =>
                                    format!("{cap} presses like it are already being handled"),
                                Dropped::PresserBusy(cap) =>
                                    format!("its presser already has {cap} being handled"),
                            }
                        ));
                        return;
                    }
                };
                tokio::spawn(async move {
                    // The place is given back however the task ends (a panic included).
                    if let Some(_turn) = place.turn().await {
                        handle_press(&shared, press).await;
                    }
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
        let key = handle.settings.session_key(chat, sender);
        self.deliver(key, incoming);
    }

    /// Puts `incoming` in the inbox of session `key`, starting its drain task if none runs.
    fn deliver(&self, key: String, incoming: Incoming) {
        let mut inboxes = lock(&self.inboxes);
        if let Some(waiting) = inboxes.get_mut(&key) {
            if waiting.len() >= INBOX_CAP {
                drop(inboxes);
                self.service.shared.log(&format!(
                    "session {key} has {INBOX_CAP} messages waiting to be let in: one more was dropped"
                ));
            } else {
                waiting.push_back(incoming);
            }
            return;
        }
        inboxes.insert(key.clone(), VecDeque::new());
        drop(inboxes);
        tokio::spawn(drain(
            self.service.clone(),
            self.inboxes.clone(),
            key,
            incoming,
        ));
    }
}

/// Frees a session's inbox if its drain task panics, so its next message starts a new one.
struct Unstick {
    inboxes: Inboxes,
    key: String,
}

impl Drop for Unstick {
    fn drop(&mut self) {
        if std::thread::panicking() {
            lock(&self.inboxes).remove(&self.key);
        }
    }
}

/// Lets a session's messages in, one at a time, in the order they came; ends (and leaves the
/// map) when none waits.
async fn drain(service: Arc<Service>, inboxes: Inboxes, key: String, first: Incoming) {
    let _unstick = Unstick {
        inboxes: inboxes.clone(),
        key: key.clone(),
    };
    let mut next = first;
    loop {
        handle_incoming(&service, &key, next).await;
        // Deliveries push under this lock, so an empty inbox removed here stays gone: the next
        // message starts a new drain.
        let mut waiting = lock(&inboxes);
        match waiting.get_mut(&key).and_then(VecDeque::pop_front) {
            Some(incoming) => next = incoming,
            None => {
                waiting.remove(&key);
                // After a burst of new chats, give the map's room back once it is mostly empty.
                if waiting.capacity() > 2 * waiting.len() + 64 {
                    waiting.shrink_to_fit();
                }
                return;
            }
        }
    }
}
