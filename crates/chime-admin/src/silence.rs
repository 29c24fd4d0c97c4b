//! When a silence window of alarms is in force: the pure computation behind the claim of a
//! silenced alarm ([`crate::alarm`]) and the `active_now`, `active_until` and `next_start` of a
//! silence's answer ([`crate::api::alarm_silences`]), below both.
//!
//! A one-off window is in force from `starts_at` (included) to `ends_at` (excluded). A
//! recurring window starts at each fire time of its Quartz cron expression, evaluated in its
//! zone exactly as a job's schedule is ([`Calendar`], so the same daylight-saving rules apply:
//! a start inside the spring-forward gap does not happen that day), and lasts `duration` of
//! elapsed time, whatever the wall clock does meanwhile: a two-hour window from 01:00 on the
//! night the clocks go forward ends at 04:00 local time.

use crate::calendar::Calendar;
use chime_protocol::ScheduleType;

/// A silence window, ready to be asked whether it is in force.
#[derive(Debug, Clone)]
pub enum Window {
    /// From `starts_at` to `ends_at`, epoch ms.
    OneOff {
        /// First instant in force.
        starts_at: i64,
        /// First instant no longer in force.
        ends_at: i64,
    },
    /// From each fire time of `calendar`, for `duration_ms`.
    Recurring {
        /// The starts.
        calendar: Calendar,
        /// How long each window lasts, ms (positive).
        duration_ms: i64,
    },
}

impl Window {
    /// A recurring window: `cron` (Quartz, seconds first) in the IANA zone `zone`, each start
    /// lasting `duration_secs`. The error says what is wrong with the expression or the zone.
    pub fn recurring(cron: &str, zone: &str, duration_secs: i64) -> Result<Window, String> {
        Ok(Window::Recurring {
            calendar: Calendar::parse(ScheduleType::Cron, cron, zone, 0)?,
            duration_ms: duration_secs.saturating_mul(1000).max(1),
        })
    }

    /// When the window in force at `t` (epoch ms) ends, or `None` when none is. For a recurring
    /// window whose windows overlap, the end of a window that started at or before `t` and
    /// has not ended: the latest such start where the schedule allows finding it (see below).
    pub fn in_force(&self, t: i64) -> Option<i64> {
        match self {
            Window::OneOff { starts_at, ends_at } => (*starts_at <= t && t < *ends_at).then_some(*ends_at),
            Window::Recurring { calendar, duration_ms } => {
                let d = *duration_ms;
                // A window covers t when it started in (t - d, t]; the first start after t - d
                // says whether there is one.
                let first = calendar.next_after(t - d)?;
                if first > t {
                    return None;
                }
                // The latest start at or before t, by bisection on where the search begins:
                // next_after(lo) <= t < next_after(hi). About 30 searches for a week-long
                // window, however often it starts. Quartz's search can jump ahead an hour when
                // it begins inside the first pass of a repeated (fall-back) hour, so the answer
                // there may be an earlier start than the latest; it is still a start in
                // (t - d, t], so the window named is in force at t.
                let (mut lo, mut hi) = (t - d, t);
                while hi - lo > 1 {
                    let mid = lo + (hi - lo) / 2;
                    match calendar.next_after(mid) {
                        Some(s) if s <= t => lo = mid,
                        _ => hi = mid,
                    }
                }
                let latest = calendar.next_after(lo).filter(|s| *s <= t).unwrap_or(first);
                Some(latest + d)
            }
        }
    }

    /// The first start strictly after `t`, or `None` when the window never starts again.
    pub fn next_start(&self, t: i64) -> Option<i64> {
        match self {
            Window::OneOff { starts_at, .. } => (*starts_at > t).then_some(*starts_at),
            Window::Recurring { calendar, .. } => calendar.next_after(t),
        }
    }
}

/// `ms` (epoch ms) as wall-clock time in zone `zone` with the zone's abbreviation
/// (`2026-11-29 10:00:00 UTC`, `2026-03-29 04:00:00 CEST`); in UTC when the zone is unknown.
pub fn wall_time(ms: i64, zone: &str) -> String {
    let Some(at) = chrono::DateTime::from_timestamp_millis(ms) else {
        return format!("{ms} ms");
    };
    let tz = zone.parse::<chrono_tz::Tz>().unwrap_or(chrono_tz::UTC);
    at.with_timezone(&tz).format("%Y-%m-%d %H:%M:%S %Z").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    /// Epoch ms of a UTC wall time.
    fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> i64 {
        chrono::Utc
            .with_ymd_and_hms(y, mo, d, h, mi, s)
            .single()
            .expect("a valid UTC time")
            .timestamp_millis()
    }

    const MIN: i64 = 60_000;
    const HOUR: i64 = 3_600_000;

    #[test]
    fn one_off_is_in_force_from_its_start_to_before_its_end() {
        let w = Window::OneOff {
            starts_at: 1_000,
            ends_at: 5_000,
        };
        assert_eq!(w.in_force(999), None);
        assert_eq!(w.in_force(1_000), Some(5_000));
        assert_eq!(w.in_force(4_999), Some(5_000));
        assert_eq!(w.in_force(5_000), None);
        assert_eq!(w.next_start(999), Some(1_000));
        assert_eq!(w.next_start(1_000), None, "started already");
    }

    #[test]
    fn daily_window_in_utc() {
        // Every day 22:00 UTC for 4 hours: in force across midnight.
        let w = Window::recurring("0 0 22 * * ?", "UTC", 4 * 3600).unwrap();
        let start = utc(2026, 5, 10, 22, 0, 0);
        assert_eq!(w.in_force(start - 1), None, "a moment before the start");
        assert_eq!(w.in_force(start), Some(start + 4 * HOUR), "the start itself");
        assert_eq!(w.in_force(utc(2026, 5, 11, 1, 59, 59)), Some(start + 4 * HOUR));
        assert_eq!(w.in_force(start + 4 * HOUR), None, "the end is not in force");
        assert_eq!(w.next_start(start + HOUR), Some(start + 24 * HOUR));
        assert_eq!(w.next_start(start - 1), Some(start));
    }

    #[test]
    fn overlapping_windows_name_the_latest_start() {
        // A window every minute lasting 2 minutes: always in force, until 2 minutes after the
        // last whole minute.
        let w = Window::recurring("0 * * * * ?", "UTC", 120).unwrap();
        let t = utc(2026, 5, 10, 12, 34, 56);
        assert_eq!(w.in_force(t), Some(utc(2026, 5, 10, 12, 36, 0)));
        // Every second for a week: found by bisection, not by walking 600,000 starts.
        let w = Window::recurring("* * * * * ?", "UTC", 7 * 24 * 3600).unwrap();
        assert_eq!(w.in_force(t), Some(t + 7 * 24 * HOUR));
        // Once a year, for a minute: not in force, and the next start is months away.
        let w = Window::recurring("0 0 3 1 1 ?", "UTC", 60).unwrap();
        assert_eq!(w.in_force(t), None);
        assert_eq!(w.next_start(t), Some(utc(2027, 1, 1, 3, 0, 0)));
    }

    /// 29 March 2026 in Berlin: at 02:00 CET the clocks go to 03:00 CEST (01:00 UTC).
    #[test]
    fn a_start_inside_the_spring_forward_gap_does_not_happen_that_day() {
        // 02:30 does not exist that night. As for a job with this schedule (Quartz's rule),
        // the window does not start that day at all: not at 03:30 CEST, not at 01:30 CET.
        let w = Window::recurring("0 30 2 * * ?", "Europe/Berlin", 3600).unwrap();
        let day_start = utc(2026, 3, 28, 23, 0, 0); // 00:00 CET on the 29th
        for minutes in (0..24 * 60).step_by(15) {
            let t = day_start + minutes * MIN;
            assert_eq!(w.in_force(t), None, "{}", wall_time(t, "Europe/Berlin"));
        }
        // The day before (CET) and the day after (CEST) it starts at 02:30 local.
        assert_eq!(
            w.in_force(utc(2026, 3, 28, 1, 45, 0)),
            Some(utc(2026, 3, 28, 2, 30, 0)),
            "28 March 02:30 CET is 01:30 UTC"
        );
        assert_eq!(
            w.next_start(day_start),
            Some(utc(2026, 3, 30, 0, 30, 0)),
            "30 March 02:30 CEST is 00:30 UTC"
        );
    }

    #[test]
    fn a_window_across_the_spring_forward_lasts_its_duration_of_elapsed_time() {
        // 01:00 CET (00:00 UTC) for two hours: until 02:00 UTC, which is 04:00 CEST. The
        // window lasts two real hours, not until 03:00 on the wall clock.
        let w = Window::recurring("0 0 1 * * ?", "Europe/Berlin", 2 * 3600).unwrap();
        let start = utc(2026, 3, 29, 0, 0, 0);
        let end = utc(2026, 3, 29, 2, 0, 0);
        assert_eq!(w.in_force(start - 1), None);
        assert_eq!(w.in_force(start), Some(end));
        // 03:30 CEST (01:30 UTC): past 03:00 on the wall clock, still in force.
        assert_eq!(w.in_force(utc(2026, 3, 29, 1, 30, 0)), Some(end));
        assert_eq!(w.in_force(end - 1), Some(end));
        assert_eq!(w.in_force(end), None);
        assert_eq!(wall_time(end, "Europe/Berlin"), "2026-03-29 04:00:00 CEST");
        assert_eq!(wall_time(start, "Europe/Berlin"), "2026-03-29 01:00:00 CET");
    }

    #[test]
    fn a_window_across_the_fall_back_lasts_its_duration_of_elapsed_time() {
        // 25 October 2026: at 03:00 CEST the clocks go back to 02:00 CET (01:00 UTC). A window
        // from 01:00 CEST (23:00 UTC the day before) for two hours ends at 01:00 UTC, the
        // first 02:00 CET; the repeated hour 02:00-03:00 CET is outside it.
        let w = Window::recurring("0 0 1 * * ?", "Europe/Berlin", 2 * 3600).unwrap();
        let start = utc(2026, 10, 24, 23, 0, 0);
        let end = utc(2026, 10, 25, 1, 0, 0);
        assert_eq!(w.in_force(utc(2026, 10, 25, 0, 30, 0)), Some(end), "02:30 CEST");
        assert_eq!(w.in_force(utc(2026, 10, 25, 1, 30, 0)), None, "02:30 CET");
        assert_eq!(w.in_force(start), Some(end));
        assert_eq!(wall_time(end, "Europe/Berlin"), "2026-10-25 02:00:00 CET");
    }

    #[test]
    fn bad_expressions_and_zones_are_refused() {
        assert!(Window::recurring("0 0 25 * * ?", "UTC", 60).is_err());
        assert!(Window::recurring("0 0 * * *", "UTC", 60).is_err());
        assert!(Window::recurring("0 0 1 * * ?", "Mars/Olympus", 60).is_err());
    }
}
