//! When to retry a model call and how long to wait: 429, 5xx and connection failures are worth
//! another try; `Retry-After` is honoured (capped, so a hostile endpoint cannot park a run).

use std::time::Duration;

/// The longest wait taken from a `Retry-After` header.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// Whether an HTTP status is worth retrying.
#[must_use]
pub fn retryable(status: u16) -> bool {
    status == 429 || (500..=599).contains(&status)
}

/// The wait before attempt `attempt + 1` (attempt counts from 0): `Retry-After` seconds when
/// given, else exponential backoff from 500 ms, capped at 8 s.
#[must_use]
pub fn backoff(attempt: u32, retry_after: Option<&str>) -> Duration {
    if let Some(secs) = retry_after.and_then(|v| v.trim().parse::<u64>().ok()) {
        return Duration::from_secs(secs).min(MAX_RETRY_AFTER);
    }
    let millis = 500u64.saturating_mul(1u64 << attempt.min(4));
    Duration::from_millis(millis.min(8_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits() {
        assert!(retryable(429) && retryable(503) && !retryable(400) && !retryable(401));
        assert_eq!(backoff(0, Some("2")), Duration::from_secs(2));
        assert_eq!(backoff(0, Some("3600")), MAX_RETRY_AFTER);
        assert_eq!(backoff(0, None), Duration::from_millis(500));
        assert_eq!(backoff(9, None), Duration::from_secs(8));
    }
}
