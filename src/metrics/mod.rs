//! `[metrics] listen = "127.0.0.1:9464"`: Prometheus text at `/metrics` and `/healthz` beside it.
//! The families are process-wide (the bridges' and the store's included), so every part counts
//! without a registry passed around; `serve` registers them when `[metrics]` is on. Labels name
//! an agent, a platform, a tool, an outcome or a source — never a user or a chat (their number
//! is unbounded, and a scrape must not list who talks to the bot).
//!
//! - [`events`]: runs, approvals, classifier calls, tokens, model latency and tool durations,
//!   read off the audit events as they are recorded (one place, the same facts `audit` shows)
//! - [`server`]: the HTTP endpoint

pub mod events;
pub mod server;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::LazyLock;
pub use tollgate_surface::metered::{Histograms, Labels, seconds_histogram};

/// Every family tollgate itself counts in.
pub struct Metrics {
    /// Messages handed in by a bridge, by `platform`, `agent` and `outcome`.
    pub messages: Family<Labels, Counter>,
    /// Runs that ended, by `agent` and `outcome` (`completed`, `interrupted`).
    pub runs: Family<Labels, Counter>,
    /// Tool calls allowed or refused, by `agent`, `outcome` (`granted`, `denied`) and `source`
    /// (`admin`, `runtime`, `toolset`, or the gate's rule).
    pub approvals: Family<Labels, Counter>,
    /// Cards that asked a person, by `agent`.
    pub approval_requests: Family<Labels, Counter>,
    /// The command classifier's verdicts, by `agent`, `verdict` and `cached`.
    pub classifier_calls: Family<Labels, Counter>,
    /// Tokens a model used, by `agent`, `purpose` and `direction` (`input`, `output`).
    pub model_tokens: Family<Labels, Counter>,
    /// How long model calls took, by `agent` and `purpose`.
    pub model_seconds: Histograms,
    /// Model calls that failed, by `agent` and `purpose`.
    pub model_errors: Family<Labels, Counter>,
    /// How long tool calls ran, by `agent`, `tool` and `outcome`.
    pub tool_seconds: Histograms,
    /// How long one flush of the store took (shared by every session it covered).
    pub store_flush_seconds: Histograms,
    /// Session workers in memory now, by `platform`.
    pub live_sessions: Family<Labels, Gauge>,
}

/// The process's metrics.
pub static METRICS: LazyLock<Metrics> = LazyLock::new(|| Metrics {
    messages: Family::default(),
    runs: Family::default(),
    approvals: Family::default(),
    approval_requests: Family::default(),
    classifier_calls: Family::default(),
    model_tokens: Family::default(),
    model_seconds: Family::new_with_constructor(seconds_histogram),
    model_errors: Family::default(),
    tool_seconds: Family::new_with_constructor(seconds_histogram),
    store_flush_seconds: Family::new_with_constructor(seconds_histogram),
    live_sessions: Family::default(),
});

/// Labels from names and values.
#[must_use]
pub fn labels<const N: usize>(pairs: [(&'static str, &str); N]) -> Labels {
    pairs.into_iter().map(|(k, v)| (k, v.to_string())).collect()
}

/// A registry holding every family (counters gain `_total` when rendered).
#[must_use]
pub fn registry() -> Registry {
    let m = &*METRICS;
    let mut r = Registry::default();
    r.register(
        "tollgate_messages",
        "Messages handed in by a bridge, by platform, agent and outcome",
        m.messages.clone(),
    );
    r.register(
        "tollgate_runs",
        "Runs that ended, by agent and outcome",
        m.runs.clone(),
    );
    r.register(
        "tollgate_approvals",
        "Tool calls allowed or refused, by agent, outcome and source",
        m.approvals.clone(),
    );
    r.register(
        "tollgate_approval_requests",
        "Cards that asked a person, by agent",
        m.approval_requests.clone(),
    );
    r.register(
        "tollgate_classifier_calls",
        "Command classifier verdicts, by agent, verdict and cached",
        m.classifier_calls.clone(),
    );
    r.register(
        "tollgate_model_tokens",
        "Model tokens used, by agent, purpose and direction",
        m.model_tokens.clone(),
    );
    r.register(
        "tollgate_model_request_seconds",
        "Model call latency in seconds, by agent and purpose",
        m.model_seconds.clone(),
    );
    r.register(
        "tollgate_model_errors",
        "Model calls that failed, by agent and purpose",
        m.model_errors.clone(),
    );
    r.register(
        "tollgate_tool_seconds",
        "Tool call durations in seconds, by agent, tool and outcome",
        m.tool_seconds.clone(),
    );
    r.register(
        "tollgate_store_flush_seconds",
        "Store flush latency in seconds (one flush covers every session that wrote before it)",
        m.store_flush_seconds.clone(),
    );
    r.register(
        "tollgate_live_sessions",
        "Session workers in memory, by platform",
        m.live_sessions.clone(),
    );
    r.register(
        "tollgate_platform_rate_limit_waits",
        "Sends a platform's rate limit made wait, by platform",
        tollgate_surface::metered::RATE_LIMIT_WAITS.clone(),
    );
    r.register(
        "tollgate_platform_rate_limit_wait_seconds",
        "How long platform rate limits made sends wait, in seconds, by platform",
        tollgate_surface::metered::RATE_LIMIT_WAIT_SECONDS.clone(),
    );
    r
}

/// The scrape: every family in Prometheus' text format.
pub fn render(registry: &Registry) -> Result<String, std::fmt::Error> {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry)?;
    Ok(text)
}
