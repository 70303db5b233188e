//! The one reminder scheduler, for `chat` and `serve` alike: it claims due reminders from the
//! store (each marked fired before it is handed on, so none fires twice, across restarts too)
//! and hands each, with its firing text (marked late after downtime), to the surface's
//! [`ReminderSink`]. The surface decides how a reminder's unattended run is started and where
//! its answer goes; the scheduler decides only when.

use crate::reminders::{Reminder, Reminders};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// How often the store is asked for due reminders.
pub const POLL: Duration = Duration::from_millis(500);

/// Where fired reminders go.
pub trait ReminderSink: Send + Sync + 'static {
    /// Whether this process fires `reminder` (its session belongs here).
    fn accepts(&self, reminder: &Reminder) -> bool;

    /// Starts the reminder's run with `text` (the reminder as its session is told it).
    fn deliver(
        &self,
        reminder: Reminder,
        text: String,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

/// The scheduler: claims what is due by `now()` every `every`, and delivers it in due order.
/// Runs until its task is dropped.
pub async fn run(
    reminders: Reminders,
    sink: Arc<dyn ReminderSink>,
    now: impl Fn() -> u64 + Send,
    every: Duration,
    log: impl Fn(&str) + Send,
) {
    loop {
        fire_due(&reminders, sink.as_ref(), now(), &log).await;
        tokio::time::sleep(every).await;
    }
}

/// One pass: every reminder due at `now` that the sink accepts, claimed then delivered.
pub async fn fire_due(
    reminders: &Reminders,
    sink: &dyn ReminderSink,
    now: u64,
    log: &(impl Fn(&str) + Send),
) {
    let mut due = match reminders.take_due(now, |r| sink.accepts(r)) {
        Ok(due) => due,
        Err(e) => {
            log(&format!("reading due reminders: {e}"));
            return;
        }
    };
    due.sort_by_key(|r| r.due);
    for reminder in due {
        let text = reminder.firing_text(now.saturating_sub(reminder.due));
        sink.deliver(reminder, text).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;
    use std::sync::Mutex;

    struct Collect(Mutex<Vec<String>>);

    impl ReminderSink for Collect {
        fn accepts(&self, reminder: &Reminder) -> bool {
            reminder.session.starts_with("telegram:")
        }

        fn deliver(
            &self,
            _reminder: Reminder,
            text: String,
        ) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
            Box::pin(async move { self.0.lock().unwrap().push(text) })
        }
    }

    fn reminder(id: &str, session: &str, due: u64) -> Reminder {
        Reminder {
            id: id.into(),
            session: session.into(),
            agent: "a".into(),
            message: format!("do {id}"),
            due,
            created: "2026-12-01T00:00:00Z".into(),
            fired: false,
        }
    }

    #[tokio::test]
    async fn fires_what_is_due_here_in_order_once_and_marks_late_ones() {
        let reminders = Reminders::new(Arc::new(MemoryStore::new()));
        reminders.add(&reminder("r2", "telegram:1", 200)).unwrap();
        reminders.add(&reminder("r1", "telegram:1", 100)).unwrap();
        reminders.add(&reminder("r3", "discord:9", 100)).unwrap();
        reminders
            .add(&reminder("r4", "telegram:1", 10_000))
            .unwrap();
        let sink = Collect(Mutex::default());
        let log = |line: &str| panic!("{line}");
        // The clock is injected: "now" is 500 s, 400 s after r1 was due.
        fire_due(&reminders, &sink, 500, &log).await;
        fire_due(&reminders, &sink, 501, &log).await;
        let fired = sink.0.lock().unwrap().clone();
        assert_eq!(fired.len(), 2, "{fired:?}");
        assert!(fired[0].contains("do r1") && fired[0].contains("6 min late"));
        assert!(fired[1].contains("do r2"));
        assert_eq!(reminders.pending("discord:9").unwrap().len(), 1);
        assert_eq!(reminders.pending("telegram:1").unwrap().len(), 1);
    }
}
