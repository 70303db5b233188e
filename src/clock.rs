//! Wall-clock time: timestamps as RFC 3339 (UTC), for records people read, and the seconds
//! approval deadlines are judged by.

use std::time::{SystemTime, UNIX_EPOCH};

/// Nanoseconds since the Unix epoch: ids unique enough for one machine are made from it.
#[must_use]
pub fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// Seconds since the Unix epoch, as approval deadlines are set and judged.
///
/// Builds with the `test-support` feature (only the tests enable it) add the seconds in
/// [`TEST_CLOCK_OFFSET_ENV`]: a test restarts the service with its clock moved on, so "a
/// deadline passed while it was down" needs no wall-clock wait. Other builds read the real
/// clock only.
#[must_use]
pub fn now_secs() -> u64 {
    let real = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    real.saturating_add(test_offset_secs())
}

/// The variable a `test-support` build reads, once, at its first [`now_secs`]: seconds to
/// add to the real clock.
#[cfg(feature = "test-support")]
pub const TEST_CLOCK_OFFSET_ENV: &str = "TOLLGATE_TEST_CLOCK_OFFSET_SECS";

/// Read once: tests set it when they start the process, and the benchmarks (which build
/// with `test-support`) would otherwise time an environment lookup at every clock read.
#[cfg(feature = "test-support")]
fn test_offset_secs() -> u64 {
    static OFFSET: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *OFFSET.get_or_init(|| {
        std::env::var(TEST_CLOCK_OFFSET_ENV)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    })
}

#[cfg(not(feature = "test-support"))]
const fn test_offset_secs() -> u64 {
    0
}

/// Now as RFC 3339 in UTC with milliseconds, for event records (sortable as text).
#[must_use]
pub fn now_rfc3339_millis() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(now.as_secs(), Some(now.subsec_millis()))
}

/// Now as RFC 3339 in UTC (no date crate needed for one timestamp format).
#[must_use]
pub fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(secs, None)
}

/// `secs` as `YYYY-MM-DDThh:mm:ss[.mmm]Z`. Written digit by digit rather than through
/// `format!`: every audit event takes one, and `format!` was most of an event's cost past its
/// store write in the Telegram benchmark's profile.
fn rfc3339(secs: u64, millis: Option<u32>) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(i64::try_from(days).unwrap_or(i64::MAX));
    let mut out = String::with_capacity(24);
    push_padded(&mut out, u64::try_from(y).unwrap_or(0), 4);
    out.push('-');
    push_padded(&mut out, u64::from(m), 2);
    out.push('-');
    push_padded(&mut out, u64::from(d), 2);
    out.push('T');
    push_padded(&mut out, rem / 3600, 2);
    out.push(':');
    push_padded(&mut out, (rem % 3600) / 60, 2);
    out.push(':');
    push_padded(&mut out, rem % 60, 2);
    if let Some(millis) = millis {
        out.push('.');
        push_padded(&mut out, u64::from(millis), 3);
    }
    out.push('Z');
    out
}

/// `value` in decimal, zero-padded to `width` digits (more when it needs them).
fn push_padded(out: &mut String, value: u64, width: usize) {
    let mut digits = [b'0'; 20];
    let mut at = digits.len();
    let mut rest = value;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let start = at.min(digits.len().saturating_sub(width));
    out.extend(digits[start..].iter().map(|&b| char::from(b)));
}

/// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    #[test]
    fn civil_dates() {
        assert_eq!(super::civil_from_days(0), (1970, 1, 1));
        assert_eq!(super::civil_from_days(20_786), (2026, 11, 29));
    }

    #[test]
    fn timestamps_are_padded_rfc3339() {
        assert_eq!(super::rfc3339(0, None), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(0, Some(7)), "1970-01-01T00:00:00.007Z");
        // 2026-12-03 09:05:04.120 UTC.
        assert_eq!(
            super::rfc3339(1_796_288_704, Some(120)),
            "2026-12-03T09:05:04.120Z"
        );
        assert_eq!(
            super::rfc3339(1_796_342_399, Some(999)),
            "2026-12-03T23:59:59.999Z"
        );
        // Past year 9999 the year simply grows.
        assert_eq!(
            super::rfc3339(253_402_300_800, None),
            "10000-01-01T00:00:00Z"
        );
    }
}
