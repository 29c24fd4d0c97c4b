//! Fixed-rate schedules: every `interval` milliseconds on a grid anchored at a given instant.

use crate::error::ScheduleError;

/// A fixed-rate schedule: fires at `anchor + k * interval` for every `k >= 0`.
///
/// The grid is anchored rather than counted from "now" so that a restarted scheduler computes
/// the same fire times as before the restart and the schedule never drifts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FixedRate {
    interval_ms: i64,
    anchor_ms: i64,
}

impl FixedRate {
    /// A schedule firing every `interval_ms` (must be positive) from `anchor_ms` on.
    pub fn new(interval_ms: i64, anchor_ms: i64) -> Result<FixedRate, ScheduleError> {
        if interval_ms <= 0 {
            return Err(ScheduleError::FixedRate(format!(
                "the interval must be positive, got {interval_ms} ms"
            )));
        }
        Ok(FixedRate { interval_ms, anchor_ms })
    }

    /// Parses an interval: an integer number of seconds (`"30"`, `"30s"`) or of milliseconds
    /// (`"1500ms"`), surrounding blanks allowed, positive. Seconds without a unit is what
    /// XXL-JOB stores for `FIX_RATE` jobs.
    pub fn parse_interval(text: &str) -> Result<i64, ScheduleError> {
        let t = text.trim();
        let (digits, factor) = if let Some(d) = t.strip_suffix("ms") {
            (d, 1)
        } else if let Some(d) = t.strip_suffix('s') {
            (d, 1000)
        } else {
            (t, 1000)
        };
        let bad = || {
            ScheduleError::FixedRate(format!(
                "'{text}' is not an interval (expected seconds like '30' or '30s', or \
                 milliseconds like '1500ms')"
            ))
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let n: i64 = digits.parse().map_err(|_| bad())?;
        let ms = n.checked_mul(factor).ok_or_else(bad)?;
        if ms <= 0 {
            return Err(ScheduleError::FixedRate(format!(
                "the interval must be positive, got '{text}'"
            )));
        }
        Ok(ms)
    }

    /// The interval in milliseconds.
    pub fn interval_ms(&self) -> i64 {
        self.interval_ms
    }

    /// The anchor (first fire time) in epoch milliseconds.
    pub fn anchor_ms(&self) -> i64 {
        self.anchor_ms
    }

    /// The same interval on a grid anchored at `anchor_ms`.
    pub fn with_anchor(self, anchor_ms: i64) -> FixedRate {
        FixedRate { anchor_ms, ..self }
    }

    /// The smallest `anchor + k * interval` (`k >= 0`) strictly after `after_ms`; `None` on
    /// overflow of the millisecond range.
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        if after_ms < self.anchor_ms {
            return Some(self.anchor_ms);
        }
        // Computed in i128: after - anchor can exceed i64 when the two are far apart.
        let elapsed = i128::from(after_ms) - i128::from(self.anchor_ms);
        let k = elapsed / i128::from(self.interval_ms) + 1;
        let next = i128::from(self.anchor_ms) + k * i128::from(self.interval_ms);
        i64::try_from(next).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_syntax() {
        assert_eq!(FixedRate::parse_interval("30"), Ok(30_000));
        assert_eq!(FixedRate::parse_interval(" 30s "), Ok(30_000));
        assert_eq!(FixedRate::parse_interval("1500ms"), Ok(1_500));
        for bad in ["", "0", "0ms", "-5", "1.5", "5m", "ms", "s", "99999999999999999999"] {
            assert!(FixedRate::parse_interval(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn anchored_grid() {
        let r = FixedRate::new(1_500, 10_000).unwrap();
        assert_eq!(r.next_after(0), Some(10_000));
        assert_eq!(r.next_after(9_999), Some(10_000));
        assert_eq!(r.next_after(10_000), Some(11_500));
        assert_eq!(r.next_after(11_499), Some(11_500));
        assert_eq!(r.next_after(11_500), Some(13_000));
        // A restart that asks from any point lands on the same grid.
        assert_eq!(r.next_after(1_000_000_123), Some(1_000_001_500));
        assert_eq!(FixedRate::new(1, 0).unwrap().next_after(i64::MAX), None);
        assert!(FixedRate::new(0, 0).is_err());
    }
}
