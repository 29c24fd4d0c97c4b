//! A lenient `java.util.GregorianCalendar`, reduced to what Quartz's `getTimeAfter` uses.
//!
//! Quartz walks towards the next fire time by *setting* calendar fields (often to values out of
//! range, such as minute 60 or day 32, which the lenient calendar rolls over) and *reading* them
//! back. Reading after a set makes Java recompute the instant from the wall-clock fields and then
//! all fields from the instant. Those two steps are where the daylight-saving behaviour comes
//! from: a wall time in a gap moves forward, a wall time in an overlap becomes its second
//! occurrence, even when the field that was set kept its value. [`Cal`] recomputes at the same
//! moments Java does, so the same fire times come out.
//!
//! Resolution is one second: Quartz truncates milliseconds before it starts.

use crate::zone::ZoneRules;

/// Whether `year` is a leap year of the proleptic Gregorian calendar.
#[inline]
pub(crate) fn is_leap(year: i32) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

/// Days in month `month` (1-12) of `year`, as Quartz's `getLastDayOfMonth`.
#[inline]
pub(crate) fn month_len(month: i32, year: i32) -> i32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (month 1-12, day 1-31).
#[inline]
pub(crate) fn days_from_civil(year: i32, month: i32, day: i32) -> i64 {
    // Howard Hinnant's algorithm: years start in March so that the leap day is last.
    let y = i64::from(year) - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date (year, month 1-12, day) of a day count since 1970-01-01.
#[inline]
pub(crate) fn civil_from_days(days: i64) -> (i32, i32, i32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year as i32, month as i32, day as i32)
}

/// Java's `Calendar.DAY_OF_WEEK` (1 = Sunday … 7 = Saturday) of a day count since 1970-01-01.
#[inline]
pub(crate) fn day_of_week(days: i64) -> i32 {
    // 1970-01-01 was a Thursday (5).
    ((days + 4).rem_euclid(7) + 1) as i32
}

/// Seconds since 1970-01-01T00:00 (wall clock) of possibly out-of-range fields, rolled over the
/// way the lenient Gregorian calendar does it (month 12 is January of the next year, day 0 the
/// last day of the previous month, hour 24 midnight of the next day, ...).
#[inline]
fn lenient_wall(year: i32, month0: i32, day: i32, hour: i32, minute: i32, second: i32) -> i64 {
    let y = i64::from(year) + i64::from(month0).div_euclid(12);
    let m = i64::from(month0).rem_euclid(12) as i32 + 1;
    let days = days_from_civil(y as i32, m, 1) + i64::from(day) - 1;
    days * 86_400 + i64::from(hour) * 3600 + i64::from(minute) * 60 + i64::from(second)
}

/// The calendar: wall-clock fields plus the instant they stand for.
pub(crate) struct Cal<'z> {
    zone: &'z ZoneRules,
    /// Span of `zone` used last (makes almost every lookup O(1)).
    hint: usize,
    year: i32,
    /// 0-based, as `Calendar.MONTH`.
    month: i32,
    day: i32,
    hour: i32,
    minute: i32,
    second: i32,
    /// Local day count since 1970-01-01 of the fields (for the day of week).
    local_days: i64,
    /// The instant (UTC seconds); valid when `!dirty`.
    time: i64,
    /// A field was set since the last recomputation (Java: `isTimeSet == false`).
    dirty: bool,
}

impl<'z> Cal<'z> {
    /// `new GregorianCalendar(zone)` followed by `setTime(utc)` and `set(MILLISECOND, 0)`:
    /// the fields are those of the instant, and the next read recomputes the instant from them
    /// (which moves an instant in the first occurrence of an overlap to the second one).
    pub(crate) fn at(zone: &'z ZoneRules, utc: i64) -> Cal<'z> {
        let mut cal = Cal {
            zone,
            hint: 0,
            year: 0,
            month: 0,
            day: 1,
            hour: 0,
            minute: 0,
            second: 0,
            local_days: 0,
            time: utc,
            dirty: false,
        };
        cal.fields_from_time();
        cal.dirty = true;
        cal
    }

    /// A calendar whose fields were all set (Quartz's `tcal`), not yet recomputed.
    // One argument per calendar field mirrors the `set` calls it stands for.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn with_fields(
        zone: &'z ZoneRules,
        hint: usize,
        year: i32,
        month0: i32,
        day: i32,
        hour: i32,
        minute: i32,
        second: i32,
    ) -> Cal<'z> {
        Cal {
            zone,
            hint,
            year,
            month: month0,
            day,
            hour,
            minute,
            second,
            local_days: 0,
            time: 0,
            dirty: true,
        }
    }

    pub(crate) fn hint(&self) -> usize {
        self.hint
    }

    fn fields_from_time(&mut self) {
        let local = self.time + i64::from(self.zone.offset_at(self.time, &mut self.hint));
        let days = local.div_euclid(86_400);
        let secs = local.rem_euclid(86_400) as i32;
        let (y, m, d) = civil_from_days(days);
        self.year = y;
        self.month = m - 1;
        self.day = d;
        self.hour = secs / 3600;
        self.minute = secs / 60 % 60;
        self.second = secs % 60;
        self.local_days = days;
    }

    /// Java's `complete()`: instant from fields, then fields from instant.
    #[inline]
    fn complete(&mut self) {
        if self.dirty {
            let wall = lenient_wall(self.year, self.month, self.day, self.hour, self.minute, self.second);
            self.time = self.zone.resolve_wall(wall, &mut self.hint);
            self.fields_from_time();
            self.dirty = false;
        }
    }

    /// `getTime()`, in UTC seconds.
    #[inline]
    pub(crate) fn time(&mut self) -> i64 {
        self.complete();
        self.time
    }

    #[inline]
    pub(crate) fn year(&mut self) -> i32 {
        self.complete();
        self.year
    }

    /// 0-based month.
    #[inline]
    pub(crate) fn month0(&mut self) -> i32 {
        self.complete();
        self.month
    }

    #[inline]
    pub(crate) fn day(&mut self) -> i32 {
        self.complete();
        self.day
    }

    #[inline]
    pub(crate) fn hour(&mut self) -> i32 {
        self.complete();
        self.hour
    }

    #[inline]
    pub(crate) fn minute(&mut self) -> i32 {
        self.complete();
        self.minute
    }

    #[inline]
    pub(crate) fn second(&mut self) -> i32 {
        self.complete();
        self.second
    }

    /// 1 = Sunday … 7 = Saturday.
    #[inline]
    pub(crate) fn day_of_week(&mut self) -> i32 {
        self.complete();
        day_of_week(self.local_days)
    }

    // Setting a field to the value it already has, when the fields and the instant agree, is a
    // no-op: Java would mark the calendar dirty, but recomputing gives the same instant back
    // (after a recomputation the fields are a fixed point of it). Skipping it is the main saving
    // of the hot loop. `Cal::at` starts dirty, which keeps the one case where recomputing does
    // change the instant (an instant in the first half of an overlap).

    #[inline]
    pub(crate) fn set_year(&mut self, v: i32) {
        if self.dirty || self.year != v {
            self.year = v;
            self.dirty = true;
        }
    }

    #[inline]
    pub(crate) fn set_month0(&mut self, v: i32) {
        if self.dirty || self.month != v {
            self.month = v;
            self.dirty = true;
        }
    }

    #[inline]
    pub(crate) fn set_day(&mut self, v: i32) {
        if self.dirty || self.day != v {
            self.day = v;
            self.dirty = true;
        }
    }

    #[inline]
    pub(crate) fn set_hour(&mut self, v: i32) {
        if self.dirty || self.hour != v {
            self.hour = v;
            self.dirty = true;
        }
    }

    #[inline]
    pub(crate) fn set_minute(&mut self, v: i32) {
        if self.dirty || self.minute != v {
            self.minute = v;
            self.dirty = true;
        }
    }

    #[inline]
    pub(crate) fn set_second(&mut self, v: i32) {
        if self.dirty || self.second != v {
            self.second = v;
            self.dirty = true;
        }
    }

    /// `add(Calendar.YEAR, n)`: recompute, add to the year, then pin the day of month to the
    /// length of the month (29 February plus one year is 28 February).
    pub(crate) fn add_years(&mut self, n: i32) {
        self.complete();
        let year = self.year + n;
        self.set_year(year);
        let len = month_len(self.month + 1, year);
        if self.day > len {
            self.set_day(len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trip() {
        for days in -800_000..800_000 {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(day_of_week(days_from_civil(2026, 11, 22)), 1); // a Sunday
    }

    #[test]
    fn lenient_rollover() {
        // Month 12 of 2026 is January 2027; day 0 is the last day of the previous month.
        assert_eq!(lenient_wall(2026, 12, 1, 0, 0, 0), days_from_civil(2027, 1, 1) * 86_400);
        assert_eq!(lenient_wall(2028, 2, 0, 0, 0, 0), days_from_civil(2028, 2, 29) * 86_400);
        assert_eq!(
            lenient_wall(2026, 0, 31, 24, 60, 0),
            days_from_civil(2026, 2, 1) * 86_400 + 3600
        );
    }

    #[test]
    fn add_years_pins_the_day() {
        let zone = ZoneRules::fixed(0);
        let mut cal = Cal::at(&zone, days_from_civil(2028, 2, 29) * 86_400);
        cal.add_years(1);
        assert_eq!((cal.year(), cal.month0(), cal.day()), (2029, 1, 28));
    }
}
