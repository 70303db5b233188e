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
    /// Swept when the map reaches this size: twice what the last sweep left (at least
    /// [`FORGET_AT`]), so a burst of users all inside the window costs a few sweeps, not one
    /// per message.
    sweep_at: usize,
    /// Sweeps made (what the tests count).
    sweeps: u64,
}

impl RateLimiter {
    #[must_use]
    pub fn new(per_minute: u32) -> Self {
        RateLimiter {
            per_minute,
            users: HashMap::new(),
            sweep_at: FORGET_AT,
            sweeps: 0,
        }
    }

    /// Forgets the users with nothing in the window and sets the next sweep's size.
    fn sweep(&mut self, now: Instant) {
        self.users.retain(|_, w| {
            w.seen
                .back()
                .is_some_and(|t| now.duration_since(*t) < WINDOW)
        });
        self.sweeps += 1;
        self.sweep_at = FORGET_AT.max(2 * self.users.len());
    }

    /// Forgets every user with nothing in the window (the housekeeping pass calls it): past the
    /// window, nothing of a user stays in memory, and the map gives its room back.
    pub fn forget_quiet(&mut self, now: Instant) {
        self.sweep(now);
        self.users.shrink_to_fit();
    }

    /// Users remembered now.
    #[must_use]
    pub fn remembered(&self) -> usize {
        self.users.len()
    }

    pub fn check(&mut self, user: i64, now: Instant) -> RateVerdict {
        if self.users.len() >= self.sweep_at {
            // Users with nothing in the window are as good as new: forget them, so a stream of
            // strangers' ids cannot grow this without end.
            self.sweep(now);
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
    fn a_burst_of_new_users_sweeps_the_map_a_logarithmic_number_of_times() {
        // 20,000 users all inside the window: none can be forgotten, so a sweep at every
        // message past the threshold would make the burst quadratic.
        let mut limiter = RateLimiter::new(5);
        let now = Instant::now();
        for user in 0..20_000 {
            assert_eq!(limiter.check(user, now), RateVerdict::Accept);
        }
        assert_eq!(limiter.remembered(), 20_000);
        assert!(
            limiter.sweeps <= 4,
            "{} sweeps over a map that could forget nobody",
            limiter.sweeps
        );
        // Once the window has passed, the next sweep (at twice what the last one left)
        // forgets them all: the map holds at most twice the users active in the window.
        let later = now + WINDOW;
        for user in 100_000..113_000 {
            limiter.check(user, later);
        }
        assert_eq!(limiter.remembered(), 13_000, "the quiet 20,000 forgotten");
        limiter.forget_quiet(later);
        assert_eq!(limiter.sweep_at, 26_000);
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
