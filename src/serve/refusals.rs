//! How many refusals of untrusted senders are written to the audit log. Every stranger's
//! message and every non-admin's press is refused, and each refusal is worth an audit entry —
//! but a flood of them (many senders, or one sender many times) must not turn into as many
//! store writes. So at most [`PER_WINDOW`] refusals are written a minute, the last of them
//! saying that further ones are only counted, and the next one written after the minute
//! carries how many were left out. Strangers' messages and refused presses have a budget
//! each: strangers writing to the bot (anyone can) cannot use up the entries that name a
//! chat member pressing a card they may not press.

use std::time::{Duration, Instant};

/// Refusal entries written per window.
pub const PER_WINDOW: u32 = 30;

/// The window.
pub const WINDOW: Duration = Duration::from_secs(60);

/// What to do with one refusal.
#[derive(Debug, PartialEq, Eq)]
pub struct RefusalVerdict {
    /// Write its entry.
    pub write: bool,
    /// It is the last entry this window: further refusals are only counted.
    pub last_in_window: bool,
    /// Refusals left out in the window before (to be written with this one).
    pub left_out_before: u64,
}

/// The budget: a fixed window, no per-sender state (its size never depends on who floods).
#[derive(Debug, Default)]
pub struct RefusalBudget {
    started: Option<Instant>,
    written: u32,
    left_out: u64,
}

/// What a refusal is of: each has its own budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// A message from someone the bot does not serve.
    Stranger,
    /// A press on a card by someone who may not press it.
    Press,
}

/// One budget for each kind of refusal.
#[derive(Debug, Default)]
pub struct RefusalBudgets {
    strangers: RefusalBudget,
    presses: RefusalBudget,
}

impl RefusalBudgets {
    /// Counts one refusal of `kind` at `now`.
    pub fn admit(&mut self, kind: Refused, now: Instant) -> RefusalVerdict {
        match kind {
            Refused::Stranger => self.strangers.admit(now),
            Refused::Press => self.presses.admit(now),
        }
    }
}

impl RefusalBudget {
    /// Counts one refusal at `now`.
    pub fn admit(&mut self, now: Instant) -> RefusalVerdict {
        let mut left_out_before = 0;
        let expired = self
            .started
            .is_none_or(|started| now.saturating_duration_since(started) >= WINDOW);
        if expired {
            left_out_before = std::mem::take(&mut self.left_out);
            self.started = Some(now);
            self.written = 0;
        }
        if self.written >= PER_WINDOW {
            self.left_out += 1;
            return RefusalVerdict {
                write: false,
                last_in_window: false,
                left_out_before,
            };
        }
        self.written += 1;
        RefusalVerdict {
            write: true,
            last_in_window: self.written == PER_WINDOW,
            left_out_before,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_of_strangers_leaves_the_presses_their_own_entries() {
        let mut budgets = RefusalBudgets::default();
        let now = Instant::now();
        for _ in 0..1_000 {
            budgets.admit(Refused::Stranger, now);
        }
        assert!(!budgets.admit(Refused::Stranger, now).write);
        assert!(budgets.admit(Refused::Press, now).write);
    }

    #[test]
    fn a_flood_writes_a_bounded_number_and_reports_the_rest() {
        let mut budget = RefusalBudget::default();
        let start = Instant::now();
        let verdicts: Vec<RefusalVerdict> = (0..10_000).map(|_| budget.admit(start)).collect();
        assert_eq!(
            verdicts.iter().filter(|v| v.write).count(),
            PER_WINDOW as usize
        );
        assert!(verdicts[PER_WINDOW as usize - 1].last_in_window);
        assert!(!verdicts[PER_WINDOW as usize].write);
        // Within the window, still nothing; after it, one is written with the count.
        assert!(!budget.admit(start + WINDOW / 2).write);
        let next = budget.admit(start + WINDOW);
        assert!(next.write);
        assert_eq!(next.left_out_before, 10_000 - u64::from(PER_WINDOW) + 1);
        assert_eq!(budget.admit(start + WINDOW).left_out_before, 0);
    }
}
