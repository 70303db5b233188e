//! Metrics read off the audit events as a session records them: the events already carry the
//! facts (`duration_ms`, `source`, `usage`…), so counting them here keeps one place that knows
//! what happened, and `/metrics` agrees with `tollgate audit`.

use super::{METRICS, labels};
use crate::events::{Event, EventKind, EventSink};
use serde_json::Value;
use std::sync::Arc;

/// Passes every event on to `inner`, counting it for the agent `agent`.
pub struct MeteredEvents {
    pub agent: String,
    pub inner: Arc<dyn EventSink>,
}

impl EventSink for MeteredEvents {
    fn record(&self, event: Event) {
        count(&self.agent, &event);
        self.inner.record(event);
    }
}

/// A label value from a field: a short string, or `unknown` (a label must stay a small set).
fn label(fields: &Value, key: &str) -> String {
    match &fields[key] {
        Value::String(s) if !s.is_empty() && s.len() <= 64 => s.clone(),
        Value::Bool(b) => b.to_string(),
        _ => "unknown".to_string(),
    }
}

fn seconds(millis: &Value) -> Option<f64> {
    millis.as_u64().map(|ms| ms as f64 / 1000.0)
}

fn count(agent: &str, event: &Event) {
    let m = &*METRICS;
    let fields = &event.fields;
    match event.kind {
        EventKind::RunCompleted => {
            m.runs
                .get_or_create(&labels([("agent", agent), ("outcome", "completed")]))
                .inc();
        }
        EventKind::RunInterrupted => {
            m.runs
                .get_or_create(&labels([("agent", agent), ("outcome", "interrupted")]))
                .inc();
        }
        EventKind::PermissionGranted | EventKind::PermissionDenied => {
            let outcome = if event.kind == EventKind::PermissionGranted {
                "granted"
            } else {
                "denied"
            };
            let source = label(fields, "source");
            m.approvals
                .get_or_create(&labels([
                    ("agent", agent),
                    ("outcome", outcome),
                    ("source", &source),
                ]))
                .inc();
        }
        EventKind::PermissionRequested => {
            m.approval_requests
                .get_or_create(&labels([("agent", agent)]))
                .inc();
        }
        EventKind::Classified => {
            let (verdict, cached) = (label(fields, "verdict"), label(fields, "cached"));
            m.classifier_calls
                .get_or_create(&labels([
                    ("agent", agent),
                    ("verdict", &verdict),
                    ("cached", &cached),
                ]))
                .inc();
        }
        EventKind::LlmUsage => {
            let purpose = label(fields, "purpose");
            let usage = &fields["usage"];
            for (direction, key) in [("input", "input_tokens"), ("output", "output_tokens")] {
                if let Some(tokens) = usage[key].as_u64() {
                    m.model_tokens
                        .get_or_create(&labels([
                            ("agent", agent),
                            ("purpose", &purpose),
                            ("direction", direction),
                        ]))
                        .inc_by(tokens);
                }
            }
            let by = labels([("agent", agent), ("purpose", &purpose)]);
            if let Some(latency) = seconds(&usage["latency_ms"]) {
                m.model_seconds.get_or_create(&by).observe(latency);
            }
            if fields["error"].is_string() {
                m.model_errors.get_or_create(&by).inc();
            }
        }
        EventKind::ToolCompleted | EventKind::ToolFailed => {
            // Only calls that ran carry a duration (a refused one never started).
            if let Some(duration) = seconds(&fields["duration_ms"]) {
                let outcome = if event.kind == EventKind::ToolCompleted {
                    "completed"
                } else {
                    "failed"
                };
                m.tool_seconds
                    .get_or_create(&labels([
                        ("agent", agent),
                        ("tool", &event.tool),
                        ("outcome", outcome),
                    ]))
                    .observe(duration);
            }
        }
        _ => {}
    }
}
