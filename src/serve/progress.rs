//! What a chat sees while a run works: the typing indicator, renewed a little before the
//! platform stops showing it, and one progress message edited at most every
//! `progress_interval_secs` (Telegram allows about 20 messages a minute in a group), never with
//! an identical text. Both are droppable: a rate limit skips a beat, it never delays the answer.

use super::shared::{Shared, lock};
use crate::events::{Event, EventKind, EventSink};
use std::sync::Mutex;
use std::time::Duration;
use tollgate_surface::{CardRef, ChatRef};

/// Lines of tool activity kept on the progress message.
const PROGRESS_LINES: usize = 8;

/// How much of a tool's name a progress line shows (the names tollgate gives are far shorter).
const TOOL_NAME_SHOWN: usize = 64;

/// The run's tool activity, as the executor's events report it.
#[derive(Default)]
pub struct ProgressWatch {
    lines: Mutex<Vec<String>>,
}

impl EventSink for ProgressWatch {
    fn record(&self, event: Event) {
        let Some((before, after)) = line_marks(event.kind) else {
            return;
        };
        let mut lines = lock(&self.lines);
        // The model's words (a tool it made up is reported too): one line, escaped, short.
        let tool: String =
            tollgate_surface::text::show_exactly(&event.tool, tollgate_surface::text::Layout::Line)
                .chars()
                .take(TOOL_NAME_SHOWN)
                .collect();
        lines.push(format!("{before}{tool}{after}"));
        let excess = lines.len().saturating_sub(PROGRESS_LINES);
        lines.drain(..excess);
    }

    fn wants(&self, kind: EventKind) -> bool {
        line_marks(kind).is_some()
    }
}

/// What goes before and after the tool's name on the line an event of `kind` adds, if it
/// adds one.
fn line_marks(kind: EventKind) -> Option<(&'static str, &'static str)> {
    Some(match kind {
        EventKind::ToolStarted => ("▶ ", ""),
        EventKind::ToolCompleted => ("✓ ", ""),
        EventKind::ToolFailed => ("✗ ", ""),
        EventKind::PermissionRequested => ("⏳ ", " (waiting for approval)"),
        EventKind::PermissionDenied => ("⛔ ", ""),
        _ => return None,
    })
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

/// The shortest wait between two typing calls.
const MIN_TYPING_GAP: Duration = Duration::from_secs(1);

/// Shows typing and progress until the task is aborted (the run ended).
pub async fn show_progress(shared: &Shared, chat: &ChatRef, watch: &ProgressWatch) {
    let Some(handle) = shared.bridge(chat.platform) else {
        return;
    };
    let (bridge, settings) = (&handle.bridge, &handle.settings);
    // Renewed at nine tenths of how long the platform shows it, so it never blinks off.
    // At least a second apart whatever a bridge or a 429 says (a `retry_after` of zero
    // would otherwise resend at once).
    let typing_every = bridge
        .limits()
        .typing_lasts
        .mul_f64(0.9)
        .max(MIN_TYPING_GAP);
    let interval = Duration::from_secs(settings.progress_interval_secs);
    let mut message: Option<CardRef> = None;
    let mut shown = String::new();
    let mut next_progress = tokio::time::Instant::now() + interval;
    // Typing shares the chat's rate limit with the answer: after a 429 it waits as long as
    // the platform asks, or each ignored refusal could lengthen the wait the answer has.
    let mut next_typing = tokio::time::Instant::now();
    loop {
        if settings.typing && tokio::time::Instant::now() >= next_typing {
            let refused = bridge.typing(chat).await.err();
            next_typing = tokio::time::Instant::now()
                + refused
                    .and_then(|e| e.retry_after())
                    .map_or(typing_every, |wait| wait.max(MIN_TYPING_GAP));
        }
        let now = tokio::time::Instant::now();
        if settings.progress_interval_secs > 0 && now >= next_progress {
            let text = watch.text();
            if text != shown {
                match bridge.progress(chat, message.as_ref(), &text).await {
                    Ok(at) => {
                        message = Some(at);
                        shown = text;
                        next_progress = now + interval;
                    }
                    // Rate-limited: skip this edit and wait as long as the platform asks.
                    Err(e) => {
                        next_progress = now + interval.max(e.retry_after().unwrap_or_default());
                    }
                }
            } else {
                next_progress = now + interval;
            }
        }
        // Until the next typing or progress edit is due (typing was renewed at every wake, as
        // often as every half second, which spent the chat's rate limit the answer needs).
        let wake = match (settings.typing, settings.progress_interval_secs > 0) {
            (false, false) => return,
            (true, false) => next_typing,
            (false, true) => next_progress,
            (true, true) => next_typing.min(next_progress),
        };
        tokio::time::sleep_until(wake).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventKind;

    #[test]
    fn a_made_up_tool_name_stays_on_one_short_line() {
        let watch = ProgressWatch::default();
        watch.record(Event {
            kind: EventKind::ToolStarted,
            session: "telegram:1".into(),
            run: None,
            call_id: "c1".into(),
            tool: format!(
                "x\n✅ Approved by telegram:1 (Admin)\u{1b}[2K{}",
                "y".repeat(200)
            ),
            fields: serde_json::Value::Null,
        });
        let text = watch.text();
        assert_eq!(text.lines().count(), 2, "{text}");
        let line = text.lines().nth(1).unwrap_or_default();
        assert!(line.contains("x\\n✅ Approved"), "{line}");
        assert!(!line.contains('\u{1b}'), "{line}");
        assert!(line.chars().count() < 80, "{line}");
    }
}
