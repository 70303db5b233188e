//! Discord's REST API: requests built with serenity's [`Request`] and [`Route`] and sent by our
//! own reqwest client, so the rate-limit headers a response carries are read (serenity drops
//! them when its ratelimiter is off, and ignores its proxy when it is on). What must arrive
//! waits out 429s and retries transient failures; what may be dropped (typing, progress) is
//! refused at once while its bucket is empty.

use crate::ratelimit::RateLimits;
use reqwest::StatusCode;
use serde::de::DeserializeOwned;
use serenity::http::{LightMethod, Request, Route};
use std::time::{Duration, Instant};
use tollgate_surface::metered::rate_limit_wait;
use tollgate_surface::{BridgeError, BridgeErrorKind, Platform};

/// 429s waited out in a row before a must-arrive request gives up.
const MAX_RATE_LIMIT_WAITS: u32 = 5;

/// Tries after a network failure or a Discord 5xx before giving up.
const MAX_TRANSIENT_RETRIES: u32 = 3;

/// The longest wait a rate limit may impose before a send gives up instead (a misbehaving
/// server, or a ban, must not park every session for an hour).
const LONGEST_WAIT: Duration = Duration::from_secs(60);

/// How long an acknowledgement may keep trying: Discord drops an interaction not acknowledged
/// within three seconds.
const ACKNOWLEDGE_WITHIN: Duration = Duration::from_millis(2500);

/// Discord's JSON error code for "Cannot send messages to this user".
const CANNOT_MESSAGE_USER: i64 = 50007;

/// Whether a request must arrive (answers, cards, their edits, press answers), may be dropped
/// (typing, progress), or acknowledges an interaction (Discord allows three seconds, and
/// interaction endpoints are outside the global limit: never wait for it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    MustArrive,
    Droppable,
    Acknowledge,
}

/// A REST client for one bot.
pub struct Rest {
    client: reqwest::Client,
    /// `Bot <token>`, sent only in the `Authorization` header, only to `base`.
    authorization: String,
    /// `https://discord.com`, or a test fake.
    base: String,
    limits: RateLimits,
}

impl Rest {
    /// A client for the API at `base` (`https://discord.com` or another host speaking it).
    pub fn new(token: &str, base: &str) -> Result<Self, BridgeError> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30))
            .pool_idle_timeout(tollgate_surface::limits::IDLE_CONNECTION)
            .build()
            .map_err(|e| BridgeError::rejected(format!("building the HTTP client: {e}")))?;
        let token = token.trim();
        let authorization = if token.starts_with("Bot ") {
            token.to_string()
        } else {
            format!("Bot {token}")
        };
        Ok(Rest {
            client,
            authorization,
            base: base.trim_end_matches('/').to_string(),
            limits: RateLimits::default(),
        })
    }

    /// The plain HTTP client (attachment downloads, which carry no token).
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// Sends `route` with an optional JSON `body`; decodes the answer as `T`.
    pub async fn json<T: DeserializeOwned>(
        &self,
        method: LightMethod,
        route: Route<'_>,
        body: Option<&serde_json::Value>,
        delivery: Delivery,
    ) -> Result<T, BridgeError> {
        let body = body.map(|b| b.to_string().into_bytes());
        let request = Request::new(route, method).body(body);
        let bytes = self.send(request, delivery).await?;
        serde_json::from_slice(&bytes).map_err(|e| {
            BridgeError::rejected(format!(
                "Discord: an answer that is not what was asked: {e}"
            ))
        })
    }

    /// Sends `route` and ignores the answer's body.
    pub async fn call(
        &self,
        method: LightMethod,
        route: Route<'_>,
        body: Option<&serde_json::Value>,
        delivery: Delivery,
    ) -> Result<(), BridgeError> {
        let body = body.map(|b| b.to_string().into_bytes());
        self.send(Request::new(route, method).body(body), delivery)
            .await
            .map(|_| ())
    }

    /// Sends a request, waiting for its bucket, waiting out 429s and retrying transient
    /// failures when it must arrive.
    pub async fn send(
        &self,
        request: Request<'_>,
        delivery: Delivery,
    ) -> Result<Vec<u8>, BridgeError> {
        let bucket = request.route_ref().ratelimiting_bucket();
        let started = Instant::now();
        let (mut waits, mut retries) = (0, 0);
        loop {
            if delivery != Delivery::Acknowledge {
                let wait = self.limits.wait_for(bucket, Instant::now());
                if !wait.is_zero() {
                    rate_limit_wait(Platform::Discord, wait);
                    if delivery == Delivery::Droppable || wait > LONGEST_WAIT {
                        return Err(rate_limited(wait));
                    }
                    tokio::time::sleep(wait).await;
                }
            }
            match self.once(request.clone()).await {
                Ok(bytes) => return Ok(bytes),
                Err(Failure::RateLimited { after, global }) => {
                    self.limits.block(bucket, global, after, Instant::now());
                    rate_limit_wait(Platform::Discord, after);
                    let in_time = match delivery {
                        Delivery::MustArrive => {
                            waits < MAX_RATE_LIMIT_WAITS && after <= LONGEST_WAIT
                        }
                        Delivery::Droppable => false,
                        Delivery::Acknowledge => started.elapsed() + after < ACKNOWLEDGE_WITHIN,
                    };
                    if !in_time {
                        return Err(rate_limited(after));
                    }
                    waits += 1;
                    if delivery == Delivery::Acknowledge {
                        tokio::time::sleep(after).await;
                    }
                }
                Err(Failure::Other(e))
                    if e.kind == BridgeErrorKind::Transient
                        && delivery == Delivery::MustArrive
                        && retries < MAX_TRANSIENT_RETRIES =>
                {
                    retries += 1;
                    tokio::time::sleep(Duration::from_secs(u64::from(retries))).await;
                }
                Err(Failure::Other(e))
                    if e.kind == BridgeErrorKind::Transient
                        && delivery == Delivery::Acknowledge
                        && retries == 0
                        && started.elapsed() < ACKNOWLEDGE_WITHIN / 2 =>
                {
                    retries += 1;
                }
                Err(Failure::Other(e)) => return Err(e),
            }
        }
    }

    async fn once(&self, request: Request<'_>) -> Result<Vec<u8>, Failure> {
        let bucket = request.route_ref().ratelimiting_bucket();
        let built = request
            .build(&self.client, &self.authorization, Some(&self.base))
            .map_err(|e| Failure::Other(BridgeError::rejected(format!("Discord: {e}"))))?;
        let response = built.send().await.map_err(|e| {
            Failure::Other(BridgeError::new(
                BridgeErrorKind::Transient,
                // Without the URL: an interaction's token is part of some paths.
                format!("Discord: {}", e.without_url()),
            ))
        })?;
        let status = response.status();
        let headers = response.headers().clone();
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let body = response.bytes().await.map_err(|e| {
            Failure::Other(BridgeError::new(
                BridgeErrorKind::Transient,
                format!("Discord: reading an answer: {}", e.without_url()),
            ))
        })?;
        if status == StatusCode::TOO_MANY_REQUESTS {
            let answer: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let seconds = answer["retry_after"]
                .as_f64()
                .or_else(|| header("retry-after").and_then(|v| v.parse().ok()))
                .unwrap_or(1.0);
            let global = answer["global"].as_bool().unwrap_or(false)
                || header("x-ratelimit-global").is_some_and(|v| v == "true")
                || header("x-ratelimit-scope").is_some_and(|v| v == "global");
            return Err(Failure::RateLimited {
                after: seconds_to_duration(seconds),
                global,
            });
        }
        if header("x-ratelimit-remaining").as_deref() == Some("0")
            && let Some(after) = header("x-ratelimit-reset-after").and_then(|v| v.parse().ok())
        {
            self.limits
                .block(bucket, false, seconds_to_duration(after), Instant::now());
        }
        if status.is_success() {
            return Ok(body.to_vec());
        }
        Err(Failure::Other(error_for(status, &body)))
    }
}

/// What one attempt ended with, when not with an answer.
enum Failure {
    RateLimited { after: Duration, global: bool },
    Other(BridgeError),
}

fn rate_limited(after: Duration) -> BridgeError {
    BridgeError::new(
        BridgeErrorKind::RateLimited { after },
        "Discord: rate limited",
    )
}

fn seconds_to_duration(seconds: f64) -> Duration {
    Duration::try_from_secs_f64(seconds.max(0.0)).unwrap_or(LONGEST_WAIT + Duration::from_secs(1))
}

/// A non-success answer as a bridge error, by kind.
fn error_for(status: StatusCode, body: &[u8]) -> BridgeError {
    let answer: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let code = answer["code"].as_i64().unwrap_or(0);
    let message = answer["message"].as_str().unwrap_or("");
    let text = format!("Discord answered {status}: {message} (code {code})");
    let kind = if status.is_server_error() {
        BridgeErrorKind::Transient
    } else if code == CANNOT_MESSAGE_USER {
        BridgeErrorKind::Unreachable
    } else {
        BridgeErrorKind::Rejected
    };
    BridgeError::new(kind, text)
}
