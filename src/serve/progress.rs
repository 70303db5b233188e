//! What a chat sees while a run works: the typing indicator, and one progress message edited
//! at most every `progress_interval_secs` (Telegram allows about 20 messages a minute in a
//! group), never with an identical text. Both are droppable: a 429 skips a beat, it never
//! delays the answer.

use super::shared::{Shared, lock};
use crate::events::{Event, EventSink};
use std::sync::Mutex;
use std::time::Duration;
use tollgate_surface::ChatRef;

/// Telegram shows "typing…" for five seconds per call.
const TYPING_EVERY: Duration = Duration::from_millis(4_500);

/// Lines of tool activity kept on the progress message.
const PROGRESS_LINES: usize = 8;

/// The run's tool activity, as the executor's events report it.
#[derive(Default)]
pub struct ProgressWatch {
    lines: Mutex<Vec<String>>,
}

impl EventSink for ProgressWatch {
    fn record(&self, event: Event) {
        let line = match event.kind {
            "tool_started" => format!("▶ {}", event.tool),
            "tool_completed" => format!("✓ {}", event.tool),
            "tool_failed" => format!("✗ {}", event.tool),
            "permission_requested" => format!("⏳ {} (waiting for approval)", event.tool),
            "permission_denied" => format!("⛔ {}", event.tool),
            _ => return,
        };
        let mut lines = lock(&self.lines);
        lines.push(line);
        let excess = lines.len().saturating_sub(PROGRESS_LINES);
        lines.drain(..excess);
    }
}

impl ProgressWatch {
    pub fn clear(&self) {
        lock(&self.lines).clear();
    }

    fn text(&self) -> String {
        let lines = lock(&self.lines);
        if lines.is_empty() {
            "Working…".to_string()
        } else {
            format!("Working…\n{}", lines.join("\n"))
        }
    }
}

/// Shows typing and progress until the task is aborted (the run ended).
pub async fn show_progress(shared: &Shared, chat: &ChatRef, watch: &ProgressWatch) {
    let telegram = &shared.telegram;
    let interval = Duration::from_secs(telegram.progress_interval_secs);
    let mut message: Option<i64> = None;
    let mut shown = String::new();
    let mut next_progress = tokio::time::Instant::now() + interval;
    loop {
        if telegram.typing {
            let _ = shared.bot.typing(chat).await;
        }
        let now = tokio::time::Instant::now();
        if telegram.progress_interval_secs > 0 && now >= next_progress {
            let text = shared.redactor.redact(&watch.text());
            if text != shown {
                let sent = match message {
                    None => shared.bot.send_progress(chat, &text).await.map(Some),
                    Some(id) => shared
                        .bot
                        .edit_progress(chat.id, id, &text)
                        .await
                        .map(|()| Some(id)),
                };
                match sent {
                    Ok(id) => {
                        message = id;
                        shown = text;
                        next_progress = now + interval;
                    }
                    // Rate-limited: skip this edit and wait as long as Telegram asks.
                    Err(e) => {
                        next_progress = now
                            + interval.max(Duration::from_secs(e.retry_after_secs.unwrap_or(0)));
                    }
                }
            } else {
                next_progress = now + interval;
            }
        }
        if !telegram.typing && telegram.progress_interval_secs == 0 {
            return;
        }
        let wake = if telegram.typing {
            TYPING_EVERY
        } else {
            next_progress.saturating_duration_since(tokio::time::Instant::now())
        };
        tokio::time::sleep(wake.min(interval.max(Duration::from_millis(500)))).await;
    }
}
