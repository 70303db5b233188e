//! Where log lines go and how they look: stderr, as text, or as one JSON object a line
//! (`--log-format json`, or `TOLLGATE_LOG_FORMAT=json`) whose lines inside a run carry the run's
//! span — its session and run ids. `TOLLGATE_LOG` filters (default: warnings, and `serve`'s
//! notes such as a bridge connecting). What `serve` logs
//! is redacted before it is logged (`serve::Shared::log`).

use tracing_subscriber::EnvFilter;

/// How log lines look.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// The variable that picks the format when `--log-format` is not given.
pub const FORMAT_ENV: &str = "TOLLGATE_LOG_FORMAT";

/// Colour codes only on a terminal, and not there when `NO_COLOR` is set (no-color.org):
/// tracing's default colours every line, and in a file, a pipe or journald the escapes bury
/// the words and break a `grep session=…`.
fn colours_wanted() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Starts logging (once per process; a second call changes nothing).
pub fn init(format: Option<LogFormat>) {
    let format = format.unwrap_or_else(|| match std::env::var(FORMAT_ENV).as_deref() {
        Ok("json") => LogFormat::Json,
        _ => LogFormat::Text,
    });
    // Warnings from everything; tollgate's own notes (a bridge connected, serving, stopped) too.
    let filter = || {
        EnvFilter::try_from_env("TOLLGATE_LOG")
            .unwrap_or_else(|_| EnvFilter::new("warn,tollgate::serve=info"))
    };
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(colours_wanted())
        .with_env_filter(filter());
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
}
