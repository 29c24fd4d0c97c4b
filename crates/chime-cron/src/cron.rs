//! [`CronExpr`]: a parsed Quartz expression and Quartz's search for the next fire time.
//!
//! The search is Quartz 2.3.2's `CronExpression.getTimeAfter`, step for step: it adjusts one
//! calendar field at a time (second, minute, hour, day, month, year), and whenever a field has
//! to move it resets the smaller ones and starts over. The calendar it works on is a lenient
//! `GregorianCalendar` ([`Cal`]), whose reads after writes are where Quartz's daylight-saving
//! behaviour comes from; the steps must stay in Quartz's order, including the reads that look
//! redundant, for the same answers to come out.

use crate::calendar::{month_len, Cal};
use crate::error::{CronField, ScheduleError};
use crate::parse::{self, Parsed, ALL_SPEC, NO_SPEC};
use crate::zone::{rules_for, ZoneRules};
use chrono_tz::Tz;
use std::fmt;
use std::sync::OnceLock;

/// Quartz's `CronExpression.MAX_YEAR`: the current year (when the class was loaded) plus 100.
/// Quartz gives up looking for a fire time past it.
pub fn max_year() -> i32 {
    static MAX_YEAR: OnceLock<i32> = OnceLock::new();
    *MAX_YEAR.get_or_init(|| {
        use chrono::Datelike;
        chrono::Local::now().year() + 100
    })
}

/// Bound on the steps of one search. Quartz has none; a search that ends in Quartz takes at
/// most a few tens of thousands of steps (one per day over a century), so this only turns a
/// search that Quartz would never finish into "no fire time" instead of a hung thread.
const MAX_STEPS: u32 = 2_000_000;

/// A sorted set of small values (0..=127) as a bit mask, with Quartz's `TreeSet` queries.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Bits(u128);

impl Bits {
    fn from_set(set: &std::collections::BTreeSet<i32>) -> Bits {
        Bits(set.iter().fold(0u128, |m, &v| {
            debug_assert!((0..128).contains(&v));
            m | 1u128 << v
        }))
    }

    /// `tailSet(v).first()`.
    #[inline]
    fn first_from(self, v: i32) -> Option<i32> {
        if !(0..128).contains(&v) {
            return None;
        }
        let m = self.0 >> v;
        (m != 0).then(|| v + m.trailing_zeros() as i32)
    }

    /// The first value at or after `v`, and whether there was none, so the set wrapped around
    /// to its first value and the next larger field goes up by one (Quartz's `tailSet(v)`,
    /// else `first()` with a carry).
    #[inline]
    fn at_or_after(self, v: i32) -> (i32, bool) {
        match self.first_from(v) {
            Some(x) => (x, false),
            None => (self.first(), true),
        }
    }

    /// `first()` (sets are checked non-empty at parse time).
    #[inline]
    fn first(self) -> i32 {
        self.0.trailing_zeros() as i32
    }
}

/// A parsed Quartz cron expression, evaluated exactly as Quartz 2.3.2 evaluates it.
///
/// ```
/// use chime_cron::CronExpr;
/// let expr = CronExpr::parse("0 0 12 LW * ?").unwrap();
/// // 2026-11-22T00:00:00Z -> Monday 30 November 2026, 12:00 UTC (the last weekday).
/// assert_eq!(expr.next_after(1_795_305_600_000, chrono_tz::UTC), Some(1_796_040_000_000));
/// ```
#[derive(Clone)]
pub struct CronExpr {
    source: String,
    seconds: Bits,
    minutes: Bits,
    hours: Bits,
    days_of_month: Bits,
    months: Bits,
    /// Sorted. Kept as plain values because Quartz does not range-check `n` in `n#k`.
    days_of_week: Vec<i32>,
    /// Sorted, including Quartz's `*` marker (99), which is a member of its set.
    years: Vec<i32>,
    /// Days are chosen by the day-of-month field (else by day-of-week).
    by_day_of_month: bool,
    lastday_of_month: bool,
    nearest_weekday: bool,
    lastday_offset: i32,
    lastday_of_week: bool,
    nthday_of_week: i32,
    max_year: i32,
}

impl CronExpr {
    /// Parses a Quartz cron expression: `second minute hour day-of-month month day-of-week
    /// [year]`. Accepts and rejects exactly what `new org.quartz.CronExpression(expr)` does in
    /// Quartz 2.3.2, except for the few expressions Quartz accepts but can never evaluate
    /// (for instance `L` in the seconds field, on which every `getTimeAfter` throws), which are
    /// rejected here.
    pub fn parse(expr: &str) -> Result<CronExpr, ScheduleError> {
        Self::parse_with_max_year(expr, max_year())
    }

    pub(crate) fn parse_with_max_year(expr: &str, max_year: i32) -> Result<CronExpr, ScheduleError> {
        let Parsed {
            sets,
            lastday_of_week,
            nthday_of_week,
            lastday_of_month,
            nearest_weekday,
            lastday_offset,
        } = parse::parse(expr, max_year)?;
        let by_day_of_month = !sets[3].contains(&NO_SPEC);

        // Sets Quartz would call first() on although they are empty: it throws on every
        // evaluation, so the expression is useless; say so now.
        let never = |field: CronField| {
            ScheduleError::field_err(
                field,
                "no value (Quartz accepts this field but fails on every evaluation)",
            )
        };
        for (i, field) in [
            (0, CronField::Second),
            (1, CronField::Minute),
            (2, CronField::Hour),
            (4, CronField::Month),
        ] {
            if sets[i].is_empty() {
                return Err(never(field));
            }
        }
        if by_day_of_month && !lastday_of_month && sets[3].is_empty() {
            return Err(never(CronField::DayOfMonth));
        }
        if !by_day_of_month && sets[5].is_empty() {
            return Err(never(CronField::DayOfWeek));
        }
        // `0W` (day 0, nearest weekday): Quartz accepts it, but its search then stops moving
        // (it keeps landing on the last day of the same month) and never returns.
        if by_day_of_month && nearest_weekday && !lastday_of_month && sets[3].first() == Some(&0) {
            return Err(ScheduleError::field_err(
                CronField::DayOfMonth,
                "'0W': there is no day 0 (Quartz accepts this but its search never ends)",
            ));
        }
        // Values of the mask-backed fields are 0..=99 by construction (range checks and markers).
        debug_assert!(sets[..5].iter().flatten().all(|&v| (0..=ALL_SPEC).contains(&v)));

        Ok(CronExpr {
            source: expr.to_string(),
            seconds: Bits::from_set(&sets[0]),
            minutes: Bits::from_set(&sets[1]),
            hours: Bits::from_set(&sets[2]),
            days_of_month: Bits::from_set(&sets[3]),
            months: Bits::from_set(&sets[4]),
            days_of_week: sets[5].iter().copied().collect(),
            years: sets[6].iter().copied().collect(),
            by_day_of_month,
            lastday_of_month,
            nearest_weekday,
            lastday_offset,
            lastday_of_week,
            nthday_of_week,
            max_year,
        })
    }

    /// The expression as given.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The first fire time strictly after `after_ms` (epoch milliseconds, UTC) in zone `tz`,
    /// in epoch milliseconds; `None` when there is none before Quartz's year limit.
    ///
    /// This is `getTimeAfter(new Date(after_ms))` of a Quartz `CronExpression` with
    /// `setTimeZone(tz)`: the search starts at `after_ms + 1 s` with the milliseconds cut off,
    /// so results are whole seconds.
    pub fn next_after(&self, after_ms: i64, tz: Tz) -> Option<i64> {
        self.next_after_in(after_ms, &rules_for(tz))
    }

    /// Successive fire times after `after_ms` in zone `tz`.
    pub fn iter_after(&self, after_ms: i64, tz: Tz) -> impl Iterator<Item = i64> + '_ {
        let rules = rules_for(tz);
        let mut t = after_ms;
        std::iter::from_fn(move || {
            t = self.next_after_in(t, &rules)?;
            Some(t)
        })
    }

    #[inline]
    fn dow_first_from(&self, v: i32) -> Option<i32> {
        self.days_of_week.iter().copied().find(|&d| d >= v)
    }

    #[inline]
    fn year_first_from(&self, v: i32) -> Option<i32> {
        let i = self.years.partition_point(|&y| y < v);
        self.years.get(i).copied()
    }

    pub(crate) fn next_after_in(&self, after_ms: i64, zone: &ZoneRules) -> Option<i64> {
        // Quartz: afterTime = after + 1 s (milliseconds kept), calendar at afterTime with the
        // milliseconds set to 0.
        let after_time = after_ms.checked_add(1000)?;
        let after_sec = after_time.div_euclid(1000);
        let mut cl = Cal::at(zone, after_sec);

        for _ in 0..MAX_STEPS {
            if cl.year() > 2999 {
                return None;
            }

            // Second.
            let (sec, wrapped) = self.seconds.at_or_after(cl.second());
            if wrapped {
                let next_minute = cl.minute() + 1;
                cl.set_minute(next_minute);
            }
            cl.set_second(sec);

            // Minute: a different one starts again from its first second.
            let (min, wrapped) = self.minutes.at_or_after(cl.minute());
            if wrapped || min != cl.minute() {
                let hr = cl.hour() + i32::from(wrapped);
                cl.set_second(0);
                cl.set_minute(min);
                set_calendar_hour(&mut cl, hr);
                continue;
            }

            // Hour: a different one starts again from its first minute.
            let (hr, wrapped) = self.hours.at_or_after(cl.hour());
            if wrapped || hr != cl.hour() {
                let day = cl.day() + i32::from(wrapped);
                cl.set_second(0);
                cl.set_minute(0);
                cl.set_day(day);
                set_calendar_hour(&mut cl, hr);
                continue;
            }

            // Day.
            let mut day = cl.day();
            let mut mon = cl.month0() + 1;
            let mut t = -1;
            let mut tmon = mon;
            if self.by_day_of_month {
                let from_day = self.days_of_month.first_from(day);
                if self.lastday_of_month {
                    if !self.nearest_weekday {
                        t = day;
                        day = month_len(mon, cl.year()) - self.lastday_offset;
                        if t > day {
                            mon += 1;
                            if mon > 12 {
                                mon = 1;
                                tmon = 3333; // forces the "day changed" branch below
                                cl.add_years(1);
                            }
                            day = 1;
                        }
                    } else {
                        t = day;
                        day = month_len(mon, cl.year()) - self.lastday_offset;
                        day =
                            nearest_weekday_of(&mut cl, zone, day, mon, sec, min, hr, after_sec).unwrap_or_else(|| {
                                mon += 1;
                                1
                            });
                    }
                } else if self.nearest_weekday {
                    t = day;
                    day = self.days_of_month.first();
                    let first = day;
                    day = nearest_weekday_of(&mut cl, zone, day, mon, sec, min, hr, after_sec).unwrap_or_else(|| {
                        mon += 1;
                        first
                    });
                } else if let Some(d) = from_day {
                    t = day;
                    day = d;
                    // Don't run past the end of a short month.
                    if day > month_len(mon, cl.year()) {
                        day = self.days_of_month.first();
                        mon += 1;
                    }
                } else {
                    day = self.days_of_month.first();
                    mon += 1;
                }
                if day != t || mon != tmon {
                    cl.set_second(0);
                    cl.set_minute(0);
                    cl.set_hour(0);
                    cl.set_day(day);
                    cl.set_month0(mon - 1);
                    continue;
                }
            } else if self.lastday_of_week {
                // The last given weekday of the month.
                let mut days_to_add = days_until(cl.day_of_week(), self.days_of_week[0]);
                let l_day = month_len(mon, cl.year());
                if day + days_to_add > l_day {
                    // Already past the last one: first day of the next month.
                    reset_to_day(&mut cl, 1, mon);
                    continue;
                }
                while day + days_to_add + 7 <= l_day {
                    days_to_add += 7;
                }
                day += days_to_add;
                if days_to_add > 0 {
                    reset_to_day(&mut cl, day, mon - 1);
                    continue;
                }
            } else if self.nthday_of_week != 0 {
                // The nth given weekday of the month.
                let mut days_to_add = days_until(cl.day_of_week(), self.days_of_week[0]);
                let day_shifted = days_to_add > 0;
                day += days_to_add;
                let mut week_of_month = day / 7;
                if day % 7 > 0 {
                    week_of_month += 1;
                }
                days_to_add = (self.nthday_of_week - week_of_month) * 7;
                day += days_to_add;
                if days_to_add < 0 || day > month_len(mon, cl.year()) {
                    reset_to_day(&mut cl, 1, mon);
                    continue;
                } else if days_to_add > 0 || day_shifted {
                    reset_to_day(&mut cl, day, mon - 1);
                    continue;
                }
            } else {
                let c_dow = cl.day_of_week();
                let dow = self.dow_first_from(c_dow).unwrap_or(self.days_of_week[0]);
                let days_to_add = days_until(c_dow, dow);
                let l_day = month_len(mon, cl.year());
                if day + days_to_add > l_day {
                    reset_to_day(&mut cl, 1, mon);
                    continue;
                } else if days_to_add > 0 {
                    reset_to_day(&mut cl, day + days_to_add, mon - 1);
                    continue;
                }
            }
            cl.set_day(day);

            // Month.
            mon = cl.month0() + 1;
            let mut year = cl.year();
            t = -1;
            if year > self.max_year {
                return None;
            }
            match self.months.first_from(mon) {
                Some(m) => {
                    t = mon;
                    mon = m;
                }
                None => {
                    mon = self.months.first();
                    year += 1;
                }
            }
            if mon != t {
                cl.set_second(0);
                cl.set_minute(0);
                cl.set_hour(0);
                cl.set_day(1);
                cl.set_month0(mon - 1);
                cl.set_year(year);
                continue;
            }
            cl.set_month0(mon - 1);

            // Year.
            year = cl.year();
            match self.year_first_from(year) {
                Some(y) => {
                    t = year;
                    year = y;
                }
                None => return None,
            }
            if year != t {
                cl.set_second(0);
                cl.set_minute(0);
                cl.set_hour(0);
                cl.set_day(1);
                cl.set_month0(0);
                cl.set_year(year);
                continue;
            }
            cl.set_year(year);

            return Some(cl.time() * 1000);
        }
        // Not reached by any expression known to end in Quartz (see MAX_STEPS).
        None
    }
}

impl fmt::Debug for CronExpr {
    // The expression text says it all; the expanded sets (157 years for `*`) would drown logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CronExpr").field(&self.source).finish()
    }
}

impl fmt::Display for CronExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl std::str::FromStr for CronExpr {
    type Err = ScheduleError;
    fn from_str(s: &str) -> Result<CronExpr, ScheduleError> {
        CronExpr::parse(s)
    }
}

/// Quartz's `setCalendarHour`: set the hour, and if the calendar reads back another hour (the
/// wall time fell into a daylight-saving gap), set the next hour instead.
#[inline]
fn set_calendar_hour(cl: &mut Cal<'_>, hour: i32) {
    cl.set_hour(hour);
    if cl.hour() != hour && hour != 24 {
        cl.set_hour(hour + 1);
    }
}

/// Days from weekday `from` to the next weekday `to` (both 1–7), 0 when they are the same.
#[inline]
fn days_until(from: i32, to: i32) -> i32 {
    if from <= to {
        to - from
    } else {
        to + (7 - from)
    }
}

/// Moves to 00:00:00 of `day` in 0-based month `month0` (Quartz's "promote" steps).
#[inline]
fn reset_to_day(cl: &mut Cal<'_>, day: i32, month0: i32) {
    cl.set_second(0);
    cl.set_minute(0);
    cl.set_hour(0);
    cl.set_day(day);
    cl.set_month0(month0);
}

/// The `W` step shared by `nW` and `LW`/`L-nW`: the weekday nearest to `day` of month `mon`
/// (never crossing into another month), or `None` when that candidate, at the time of day
/// found so far, is before the search start (Quartz then moves on to the next month).
///
/// Quartz does this on a second calendar (`tcal`) created with `Calendar.getInstance`, whose
/// milliseconds come from the wall clock; the comparison with the search start is therefore
/// made at second resolution here (see docs/cron.md).
#[allow(clippy::too_many_arguments)]
fn nearest_weekday_of(
    cl: &mut Cal<'_>,
    zone: &ZoneRules,
    mut day: i32,
    mon: i32,
    sec: i32,
    min: i32,
    hr: i32,
    after_sec: i64,
) -> Option<i32> {
    let year = cl.year();
    let mut tcal = Cal::with_fields(zone, cl.hint(), year, mon - 1, day, 0, 0, 0);
    let ldom = month_len(mon, cl.year());
    let dow = tcal.day_of_week();
    const SATURDAY: i32 = 7;
    const SUNDAY: i32 = 1;
    if dow == SATURDAY && day == 1 {
        day += 2;
    } else if dow == SATURDAY {
        day -= 1;
    } else if dow == SUNDAY && day == ldom {
        day -= 2;
    } else if dow == SUNDAY {
        day += 1;
    }
    tcal.set_second(sec);
    tcal.set_minute(min);
    tcal.set_hour(hr);
    tcal.set_day(day);
    tcal.set_month0(mon - 1);
    if tcal.time() < after_sec {
        None
    } else {
        Some(day)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{NaiveDate, TimeZone};

    fn ms(tz: Tz, y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> i64 {
        tz.from_local_datetime(
            &NaiveDate::from_ymd_opt(y, mo, d)
                .unwrap()
                .and_hms_opt(h, mi, s)
                .unwrap(),
        )
        .earliest()
        .unwrap()
        .timestamp_millis()
    }

    fn next(expr: &str, tz: Tz, after: i64) -> Option<i64> {
        CronExpr::parse(expr).unwrap().next_after(after, tz)
    }

    #[test]
    fn every_five_minutes() {
        let tz = chrono_tz::UTC;
        let after = ms(tz, 2026, 11, 22, 10, 7, 13);
        assert_eq!(next("0 */5 * * * ?", tz, after), Some(ms(tz, 2026, 11, 22, 10, 10, 0)));
    }

    #[test]
    fn special_days() {
        let tz = chrono_tz::UTC;
        let after = ms(tz, 2026, 11, 22, 0, 0, 0);
        // Last weekday of November 2026: Monday the 30th.
        assert_eq!(next("0 0 12 LW * ?", tz, after), Some(ms(tz, 2026, 11, 30, 12, 0, 0)));
        // Third-to-last day: the 27th.
        assert_eq!(next("0 0 12 L-3 * ?", tz, after), Some(ms(tz, 2026, 11, 27, 12, 0, 0)));
        // 1W in May 2027: the 1st is a Saturday, so Monday the 3rd (no jump back into April).
        let may = ms(tz, 2027, 4, 30, 0, 0, 0);
        assert_eq!(next("0 0 12 1W * ?", tz, may), Some(ms(tz, 2027, 5, 3, 12, 0, 0)));
        // Third Friday of December 2026: the 18th.
        assert_eq!(next("0 0 9 ? * 6#3", tz, after), Some(ms(tz, 2026, 12, 18, 9, 0, 0)));
        // Last Friday of November 2026: the 27th.
        assert_eq!(next("0 0 9 ? * 6L", tz, after), Some(ms(tz, 2026, 11, 27, 9, 0, 0)));
        // 29 February: 2028.
        assert_eq!(next("0 0 0 29 2 ?", tz, after), Some(ms(tz, 2028, 2, 29, 0, 0, 0)));
        // 30 February never happens.
        assert_eq!(next("0 0 0 30 2 ?", tz, after), None);
    }

    #[test]
    fn dst_like_quartz() {
        let ny = chrono_tz::America::New_York;
        // 02:30 does not exist on 2027-03-14: Quartz skips that day.
        let before = ms(ny, 2027, 3, 13, 12, 0, 0);
        assert_eq!(next("0 30 2 * * ?", ny, before), Some(ms(ny, 2027, 3, 15, 2, 30, 0)));
        // 01:30 happens twice on 2026-11-01: Quartz fires at the second one (EST, 06:30Z).
        let before = ms(ny, 2026, 10, 31, 12, 0, 0);
        assert_eq!(next("0 30 1 * * ?", ny, before), Some(1_793_514_600_000));
    }

    #[test]
    fn years_and_limits() {
        let tz = chrono_tz::UTC;
        let after = ms(tz, 2026, 11, 22, 0, 0, 0);
        let expr = CronExpr::parse("0 0 0 1 1 ? 2027-2030").unwrap();
        let all: Vec<i64> = expr.iter_after(after, tz).collect();
        assert_eq!(all.len(), 4);
        assert_eq!(all[0], ms(tz, 2027, 1, 1, 0, 0, 0));
        assert_eq!(next("0 0 0 * * ? 1999", tz, after), None);
    }

    #[test]
    fn extreme_instants_do_not_panic() {
        for expr in ["0 */5 * * * ?", "0 0 12 LW * ?", "0 0 9 ? * 6#3", "0 0 0 ? * 1L"] {
            let e = CronExpr::parse(expr).unwrap();
            for tz in [chrono_tz::UTC, chrono_tz::America::New_York] {
                assert_eq!(e.next_after(i64::MAX, tz), None);
                assert_eq!(e.next_after(i64::MAX - 1000, tz), None);
                assert_eq!(e.next_after(253_402_300_800_000, tz), None); // year 10000
                                                                         // Quartz's `*` marker 99 is a member of its year set, so the year 99 comes
                                                                         // first from so far back; what matters here is an answer without a panic.
                assert!(e.next_after(i64::MIN, tz).is_some(), "{expr} {tz}");
            }
        }
    }

    #[test]
    fn unevaluable_expressions_are_rejected() {
        for (expr, field) in [
            ("L 0 0 * * ?", CronField::Second),
            ("0 , 0 * * ?", CronField::Minute),
            ("0 0 L-2 * * ?", CronField::Hour),
            ("0 0 0 * LW ?", CronField::Month),
            ("0 0 0 ? * ,", CronField::DayOfWeek),
        ] {
            assert_eq!(CronExpr::parse(expr).unwrap_err().field(), Some(field), "{expr}");
        }
    }
}
