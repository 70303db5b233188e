//! The per-user rate limit: at most N messages in any 60 seconds. The first message over the
//! limit gets one notice; later ones are dropped silently until the window has room again.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

const WINDOW: Duration = Duration::from_secs(60);

/// Users remembered before the quiet ones are forgotten.
const FORGET_AT: usize = 4096;

/// What to do with a message.
#[derive(Debug, PartialEq, Eq)]
pub enum RateVerdict {
    Accept,
    /// Over the limit: tell the user once.
    RefuseWithNotice,
    RefuseSilently,
}

#[derive(Default)]
struct UserWindow {
    seen: VecDeque<Instant>,
    noticed: bool,
}

/// Counts messages per user.
pub struct RateLimiter {
    per_minute: u32,
    users: HashMap<i64, UserWindow>,
}

impl RateLimiter {
    #[must_use]
    pub fn new(per_minute: u32) -> Self {
        RateLimiter {
            per_minute,
            users: HashMap::new(),
        }
    }

    /// Forgets every user with nothing in the window (the housekeeping pass calls it): past the
    /// window, nothing of a user stays in memory, and the map gives its room back.
    pub fn forget_quiet(&mut self, now: Instant) {
        self.users.retain(|_, w| {
            w.seen
                .back()
                .is_some_and(|t| now.duration_since(*t) < WINDOW)
        });
        self.users.shrink_to_fit();
    }

    /// Users remembered now.
    #[must_use]
    pub fn remembered(&self) -> usize {
        self.users.len()
    }

    pub fn check(&mut self, user: i64, now: Instant) -> RateVerdict {
        if self.users.len() >= FORGET_AT {
            // Users with nothing in the window are as good as new: forget them, so a stream of
            // strangers' ids cannot grow this without end.
            self.users.retain(|_, w| {
                w.seen
                    .back()
                    .is_some_and(|t| now.duration_since(*t) < WINDOW)
            });
        }
        let window = self.users.entry(user).or_default();
        while window
            .seen
            .front()
            .is_some_and(|t| now.duration_since(*t) >= WINDOW)
        {
            window.seen.pop_front();
        }
        if window.seen.len() < self.per_minute as usize {
            window.seen.push_back(now);
            window.noticed = false;
            return RateVerdict::Accept;
        }
        if window.noticed {
            RateVerdict::RefuseSilently
        } else {
            window.noticed = true;
            RateVerdict::RefuseWithNotice
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_notice_then_silence_then_room_again() {
        let mut limiter = RateLimiter::new(2);
        let t0 = Instant::now();
        assert_eq!(limiter.check(1, t0), RateVerdict::Accept);
        assert_eq!(limiter.check(1, t0), RateVerdict::Accept);
        assert_eq!(limiter.check(1, t0), RateVerdict::RefuseWithNotice);
        assert_eq!(limiter.check(1, t0), RateVerdict::RefuseSilently);
        assert_eq!(limiter.check(2, t0), RateVerdict::Accept, "per user");
        assert_eq!(limiter.check(1, t0 + WINDOW), RateVerdict::Accept);
    }

    #[test]
    fn quiet_users_are_forgotten_after_the_window() {
        let mut limiter = RateLimiter::new(5);
        let start = Instant::now();
        for user in 0..1000 {
            limiter.check(user, start);
        }
        limiter.forget_quiet(start + WINDOW / 2);
        assert_eq!(limiter.remembered(), 1000, "still inside the window");
        limiter.check(7, start + WINDOW / 2);
        limiter.forget_quiet(start + WINDOW);
        assert_eq!(
            limiter.remembered(),
            1,
            "only the user active within the window"
        );
        limiter.forget_quiet(start + WINDOW * 2);
        assert_eq!(limiter.remembered(), 0);
    }
}
