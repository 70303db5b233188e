//! Where events go, decided in microseconds so no chat waits on another: a message (or a
//! command) goes to its session's inbox, drained in order by a task that runs only while the
//! inbox holds something — one session's slow download or rate-limited notice holds back only
//! that session; a press runs on its own task, at most [`PRESSES_AT_ONCE`] at a time.

use super::inbound::{Incoming, handle_incoming};
use super::presses::handle_press;
use super::sessions::Service;
use super::shared::lock;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;
use tollgate_surface::BridgeEvent;

/// Messages one session may have waiting to be let in. Its rate limit refuses far fewer; past
/// this a flood is dropped (and logged) rather than held in memory.
const INBOX_CAP: usize = 64;

/// Presses handled at once (each is a store write and a few platform calls).
pub const PRESSES_AT_ONCE: usize = 32;

/// The sessions with messages waiting, and what waits. A session is here exactly while its
/// drain task runs: an idle session costs nothing.
type Inboxes = Arc<Mutex<HashMap<String, VecDeque<Incoming>>>>;

/// Routes events to inboxes and tasks.
pub struct Dispatcher {
    service: Arc<Service>,
    inboxes: Inboxes,
    presses: Arc<Semaphore>,
    /// Presses handed in and not yet handled (running or waiting for a permit).
    presses_in_flight: Arc<std::sync::atomic::AtomicUsize>,
}

/// Presses that may wait for a permit: anyone can press a button, so a flood of presses must
/// not become an unbounded pile of tasks. Past this, a press is dropped (and logged); a real
/// admin's press is rare enough never to meet it.
pub const PRESSES_IN_FLIGHT_CAP: usize = 256;

impl Dispatcher {
    #[must_use]
    pub fn new(service: Arc<Service>) -> Self {
        Dispatcher {
            service,
            inboxes: Arc::default(),
            presses: Arc::new(Semaphore::new(PRESSES_AT_ONCE)),
            presses_in_flight: Arc::default(),
        }
    }

    /// Sends `event` on its way; never waits.
    pub fn route(&self, event: BridgeEvent) {
        let incoming = match event {
            BridgeEvent::Press(press) => {
                use std::sync::atomic::Ordering;
                let in_flight = self.presses_in_flight.clone();
                if in_flight.fetch_add(1, Ordering::SeqCst) >= PRESSES_IN_FLIGHT_CAP {
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    self.service.shared.log(&format!(
                        "{PRESSES_IN_FLIGHT_CAP} presses are already being handled: one from {} was dropped",
                        press.presser.id
                    ));
                    return;
                }
                let (shared, presses) = (self.service.shared.clone(), self.presses.clone());
                tokio::spawn(async move {
                    // Counted down however the task ends (a panic included).
                    let _counted = CountedDown(in_flight);
                    // Closed only if the semaphore is dropped, which it never is while routing.
                    if let Ok(_permit) = presses.acquire_owned().await {
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

/// Counts a press down when its task ends.
struct CountedDown(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for CountedDown {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
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
