//! Reminders under `serve`: the shared scheduler (`agent::scheduler`) fires a reminder of a
//! session whose chat is on a platform this service runs into that session's worker — the
//! transcript's one owner — as an unattended run whose answer goes to the chat.

use super::sessions::Service;
use super::worker::Queued;
use crate::agent::scheduler::ReminderSink;
use crate::reminders::Reminder;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// The service as the scheduler's sink.
pub struct ServeReminders {
    pub service: Arc<Service>,
}

impl ReminderSink for ServeReminders {
    fn accepts(&self, reminder: &Reminder) -> bool {
        self.service
            .remembered_chat(&reminder.session)
            .is_some_and(|chat| self.service.shared.bridge(chat.platform).is_some())
    }

    fn deliver(
        &self,
        reminder: Reminder,
        text: String,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            let service = &self.service;
            let key = &reminder.session;
            let Some(chat) = service.remembered_chat(key) else {
                return;
            };
            // Twice at most: a worker let go as idle between the lookup and the push is
            // replaced by a fresh one.
            for _ in 0..2 {
                let worker = match service.session(key, &chat) {
                    Ok(worker) => worker,
                    Err(e) => {
                        service.shared.log(&format!(
                            "reminder {} of session {key} could not fire: {e}",
                            reminder.id
                        ));
                        return;
                    }
                };
                if worker.remind(&reminder, text.clone()) != Queued::Evicted {
                    return;
                }
                service.forget(key, &worker);
            }
            service.shared.log(&format!(
                "reminder {} of session {key} could not be queued (its worker kept stopping); it fires at the next start",
                reminder.id
            ));
        })
    }
}
