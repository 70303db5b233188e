//! When to retry a model call and how long to wait: 429, 5xx and connection failures are worth
//! another try; `Retry-After` is honoured (capped, so a hostile endpoint cannot park a run).

use super::LlmError;
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

/// An HTTP client for a model endpoint: the request timeout, a shorter connect timeout, and
/// idle connections let go after [`tollgate_surface::limits::IDLE_CONNECTION`].
pub fn http_client(timeout: Duration) -> Result<reqwest::Client, LlmError> {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .pool_idle_timeout(tollgate_surface::limits::IDLE_CONNECTION)
        .build()
        .map_err(|e| LlmError {
            message: format!("could not make an HTTP client: {e}"),
        })
}

/// Bytes of an error body quoted back to the user.
const ERROR_BODY_QUOTE: usize = 500;

/// Sends a request (built afresh for each attempt) until it succeeds or the attempts run out;
/// the error says what the endpoint did, in words the user can act on.
pub async fn send_with_retries(
    endpoint: &str,
    attempts: u32,
    build: impl Fn() -> reqwest::RequestBuilder,
) -> Result<reqwest::Response, LlmError> {
    let attempts = attempts.max(1);
    let mut last = String::new();
    for attempt in 0..attempts {
        let more = attempt + 1 < attempts;
        let response = match build().send().await {
            Ok(r) => r,
            Err(e) => {
                last = format!("could not be reached ({e})");
                if more {
                    tokio::time::sleep(backoff(attempt, None)).await;
                }
                continue;
            }
        };
        let status = response.status().as_u16();
        if retryable(status) {
            last = format!("answered {status}");
            let header = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            if more {
                tokio::time::sleep(backoff(attempt, header.as_deref())).await;
            }
            continue;
        }
        if !response.status().is_success() {
            let text = response.text().await.unwrap_or_default();
            let quote: String = text.chars().take(ERROR_BODY_QUOTE).collect();
            return Err(LlmError {
                message: format!("the model endpoint at {endpoint} answered {status}: {quote}"),
            });
        }
        return Ok(response);
    }
    let times = match attempts {
        1 => "once".to_string(),
        2 => "twice".to_string(),
        3 => "three times".to_string(),
        n => format!("{n} times"),
    };
    Err(LlmError {
        message: format!(
            "the model endpoint at {endpoint} {last} — tried {times}; check that it is running and reachable"
        ),
    })
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
