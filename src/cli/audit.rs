//! `tollgate audit`: the recorded events, oldest first — every decision with its source.

use super::{Failure, Io, load_config};
use crate::events::StoreEvents;
use clap::Args;
use std::path::Path;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct AuditArgs {
    /// Only this session's events (`telegram:123`, `run:…`).
    #[arg(long)]
    pub session: Option<String>,
    /// Only events at or after this time (RFC 3339, UTC, e.g. 2026-11-29T10:00:00Z).
    #[arg(long)]
    pub since: Option<String>,
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
}

pub fn run(config_path: Option<&Path>, args: &AuditArgs, io: &mut Io) -> Result<ExitCode, Failure> {
    let config = load_config(config_path)?;
    let Some(store) = io.existing_store(&config)? else {
        io_say!(
            io,
            "(no store yet at {}: nothing recorded)",
            config.store.path.display()
        );
        return Ok(ExitCode::SUCCESS);
    };
    if let Some(since) = &args.since
        && !(since.ends_with('Z') && crate::events::millis_of(since).is_some())
    {
        return Err(Failure::usage(format!(
            "--since `{since}` is not RFC 3339 in UTC (like 2026-11-29T10:00:00Z)"
        )));
    }
    let events = StoreEvents::read(
        store.as_ref(),
        args.session.as_deref(),
        args.since.as_deref(),
    )
    .map_err(|e| Failure::runtime(e.to_string()))?;
    if !args.json {
        // What the log can show: older events were pruned (`[store] retain_days`).
        let cutoff = crate::retention::cutoff(&config, crate::clock::now_secs());
        let since = i64::try_from(cutoff)
            .ok()
            .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0))
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
            .unwrap_or_default();
        io_say!(
            io,
            "(the audit log keeps {} days: events before {since} are pruned)",
            config.store.retain_days
        );
    }
    for event in events {
        if args.json {
            io_say!(io, "{}", serde_json::to_string(&event).unwrap_or_default());
            continue;
        }
        io_say!(io, "{}", event_line(&event));
    }
    Ok(ExitCode::SUCCESS)
}

/// One event as a line of text. A tool's name and call id are the model's own words (an
/// unknown tool is recorded as proposed): control characters are escaped, so none can move
/// the operator's cursor, set a terminal's title or clipboard, or start a line of its own.
/// Field values are JSON, escaped already.
fn event_line(event: &crate::events::StoredEvent) -> String {
    use tollgate_surface::text::{Layout, show_exactly};
    let shown = |text: &str| show_exactly(text, Layout::Line);
    let mut line = format!(
        "{} {} {}",
        shown(&event.ts),
        shown(&event.session),
        shown(&event.kind)
    );
    if let Some(run) = &event.run {
        line.push_str(&format!(" run={}", shown(run)));
    }
    if !event.tool.is_empty() {
        line.push_str(&format!(
            " {}#{}",
            shown(&event.tool),
            shown(&event.call_id)
        ));
    }
    for (key, value) in &event.fields {
        line.push_str(&format!(" {}={value}", shown(key)));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::event_line;
    use crate::events::StoredEvent;

    #[test]
    fn a_models_tool_name_cannot_write_to_the_terminal() {
        let event = StoredEvent {
            ts: "2026-12-03T10:00:00.000Z".into(),
            session: "telegram:1".into(),
            run: Some("r\n1".into()),
            kind: "tool_proposed".into(),
            call_id: "c\r1".into(),
            tool: "x\u{1b}]52;c;AAAA\u{7}\u{1b}[2K\nfake line\u{202e}".into(),
            fields: serde_json::Map::from_iter([("note".to_string(), "a\u{1b}b\n".into())]),
        };
        let line = event_line(&event);
        assert!(
            !line.chars().any(|c| c.is_control() || c == '\u{202e}'),
            "{line:?}"
        );
        assert!(
            line.contains("x\\x1b]52;c;AAAA\\x07\\x1b[2K\\nfake line\\u202E#c\\r1"),
            "{line}"
        );
    }
}
