//! What a bridge counts for the service's `/metrics`: process-wide families, so a bridge needs
//! no registry passed in (the service registers them when `[metrics]` is on; otherwise they
//! count unread). Labelled by platform only — never by user or chat.

use crate::message::Platform;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use std::sync::LazyLock;
use std::time::Duration;

/// A metric's labels: names and values (the values a small set: platforms, agents, outcomes).
pub type Labels = Vec<(&'static str, String)>;

/// A histogram family whose histograms share one set of buckets.
pub type Histograms = Family<Labels, Histogram, fn() -> Histogram>;

/// Buckets in seconds, from a flush's milliseconds to a slow tool's minutes.
pub fn seconds_histogram() -> Histogram {
    Histogram::new([
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
        300.0,
    ])
}

/// Sends a platform's rate limit made wait (or give up, when they could not wait), by platform.
pub static RATE_LIMIT_WAITS: LazyLock<Family<Labels, Counter>> = LazyLock::new(Family::default);

/// How long those waits were, in seconds, by platform.
pub static RATE_LIMIT_WAIT_SECONDS: LazyLock<Histograms> =
    LazyLock::new(|| Family::new_with_constructor(seconds_histogram));

/// Notes a rate-limit wait of `wait` on `platform`.
pub fn rate_limit_wait(platform: Platform, wait: Duration) {
    let labels = vec![("platform", platform.as_str().to_string())];
    RATE_LIMIT_WAITS.get_or_create(&labels).inc();
    RATE_LIMIT_WAIT_SECONDS
        .get_or_create(&labels)
        .observe(wait.as_secs_f64());
}
