//! Discord's rate limits as the REST layer keeps them: per-route buckets (serenity's
//! [`RatelimitingBucket`]: the route and its major id) that Discord says are empty until a
//! moment, and the global limit. Read from the response headers (`X-RateLimit-Remaining`,
//! `X-RateLimit-Reset-After`) and from a 429's `retry_after`, on the same path in tests and in
//! production — serenity's own ratelimiter is off (with it on, its proxy setting is ignored).

use serenity::http::RatelimitingBucket;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The longest a bucket is remembered as empty.
const LONGEST_BLOCK: Duration = Duration::from_secs(3600);

/// Buckets remembered at most; expired ones are dropped first (a bot in many channels must not
/// grow a map without end).
const BUCKETS_KEPT: usize = 4096;

/// When each bucket, and the whole bot, may send again.
#[derive(Default)]
pub struct RateLimits {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    global_until: Option<Instant>,
    buckets: HashMap<RatelimitingBucket, Instant>,
}

impl RateLimits {
    /// How long a request on `bucket` must wait before it may go (zero: now).
    pub fn wait_for(&self, bucket: RatelimitingBucket, now: Instant) -> Duration {
        let state = self.lock();
        let global = state
            .global_until
            .map_or(Duration::ZERO, |t| t.saturating_duration_since(now));
        let route = state
            .buckets
            .get(&bucket)
            .map_or(Duration::ZERO, |t| t.saturating_duration_since(now));
        global.max(route)
    }

    /// `bucket` (or every route, when `global`) may not send for `after` (at most an hour: a
    /// wild header must not overflow the clock).
    pub fn block(&self, bucket: RatelimitingBucket, global: bool, after: Duration, now: Instant) {
        let until = now
            .checked_add(after.min(LONGEST_BLOCK))
            .unwrap_or(now + LONGEST_BLOCK);
        let mut state = self.lock();
        if global {
            state.global_until = Some(state.global_until.map_or(until, |t| t.max(until)));
            return;
        }
        if state.buckets.len() >= BUCKETS_KEPT {
            state.buckets.retain(|_, t| *t > now);
            if state.buckets.len() >= BUCKETS_KEPT {
                // Every bucket is still waiting: forget them (a 429 teaches us again).
                state.buckets.clear();
            }
        }
        let entry = state.buckets.entry(bucket).or_insert(until);
        *entry = (*entry).max(until);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind: keep using it.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serenity::http::Route;
    use serenity::model::id::ChannelId;

    fn bucket(channel: u64) -> RatelimitingBucket {
        Route::ChannelMessages {
            channel_id: ChannelId::new(channel),
        }
        .ratelimiting_bucket()
    }

    #[test]
    fn a_route_waits_alone_and_the_global_limit_stops_every_route() {
        let limits = RateLimits::default();
        let now = Instant::now();
        limits.block(bucket(1), false, Duration::from_secs(2), now);
        assert_eq!(limits.wait_for(bucket(1), now), Duration::from_secs(2));
        assert_eq!(limits.wait_for(bucket(2), now), Duration::ZERO);
        limits.block(bucket(1), true, Duration::from_secs(5), now);
        assert_eq!(limits.wait_for(bucket(2), now), Duration::from_secs(5));
        let later = now + Duration::from_secs(6);
        assert_eq!(limits.wait_for(bucket(1), later), Duration::ZERO);
        // A wild `retry_after` neither panics nor blocks for more than an hour.
        limits.block(bucket(3), false, Duration::MAX, now);
        assert_eq!(limits.wait_for(bucket(3), now), Duration::from_secs(3600));
    }
}
