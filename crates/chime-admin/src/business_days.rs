//! Business calendars as the scheduler reads them: which dates are workdays in a zone.
//!
//! A calendar names its usual workdays of the week (Monday to Friday unless it says otherwise),
//! the dates it excludes (holidays) and the dates it includes although they fall on a day off
//! (make-up workdays, as China moves working days around its holidays). A schedule that uses a
//! calendar fires only at instants whose date, in the calendar's zone, is a business day.

use chrono::{Datelike, Days, LocalResult, NaiveDate, NaiveTime, TimeZone, Weekday};
use chrono_tz::Tz;
use std::collections::BTreeMap;

/// How many days a search for the next business day walks before it gives up: ten years of a
/// calendar that excludes everything is not a calendar to wait on.
pub const MAX_DAYS_WALKED: u32 = 3_660;

/// The days of the week in the order `workdays` lists them, with their names.
pub const WEEKDAYS: [(Weekday, &str); 7] = [
    (Weekday::Mon, "MON"),
    (Weekday::Tue, "TUE"),
    (Weekday::Wed, "WED"),
    (Weekday::Thu, "THU"),
    (Weekday::Fri, "FRI"),
    (Weekday::Sat, "SAT"),
    (Weekday::Sun, "SUN"),
];

/// A checked business calendar: its zone, its weekly workdays and its dated exceptions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BusinessDays {
    zone: Tz,
    /// Indexed by `Weekday::num_days_from_monday`.
    workdays: [bool; 7],
    /// Days off that would be workdays, with their names (a holiday's).
    excluded: BTreeMap<NaiveDate, String>,
    /// Workdays that would be days off, with their names (a make-up workday's).
    included: BTreeMap<NaiveDate, String>,
}

impl BusinessDays {
    /// A calendar in `zone` whose weeks have `workdays` (true from Monday), with `excluded`
    /// and `included` dates. A date in both is included: the make-up rule is the more specific.
    pub fn new(
        zone: Tz,
        workdays: [bool; 7],
        excluded: BTreeMap<NaiveDate, String>,
        included: BTreeMap<NaiveDate, String>,
    ) -> BusinessDays {
        BusinessDays {
            zone,
            workdays,
            excluded,
            included,
        }
    }

    /// The zone its dates are read in.
    pub fn zone(&self) -> Tz {
        self.zone
    }

    /// Whether `day` is a business day.
    pub fn is_business_day(&self, day: NaiveDate) -> bool {
        if self.included.contains_key(&day) {
            return true;
        }
        if self.excluded.contains_key(&day) {
            return false;
        }
        self.workdays[day.weekday().num_days_from_monday() as usize]
    }

    /// The date of instant `at_ms` (epoch ms) in the calendar's zone.
    pub fn date_of(&self, at_ms: i64) -> Option<NaiveDate> {
        self.zone.timestamp_millis_opt(at_ms).single().map(|t| t.date_naive())
    }

    /// Whether a fire at `at_ms` falls on a business day.
    pub fn allows(&self, at_ms: i64) -> bool {
        self.date_of(at_ms).is_some_and(|d| self.is_business_day(d))
    }

    /// The first instant of the day after the one `at_ms` falls on, in the calendar's zone
    /// (local midnight; where a daylight-saving change skips midnight, the first instant that
    /// day has).
    pub fn start_of_next_day(&self, at_ms: i64) -> Option<i64> {
        let next = self.date_of(at_ms)?.checked_add_days(Days::new(1))?;
        Some(self.start_of(next)?.timestamp_millis())
    }

    fn start_of(&self, day: NaiveDate) -> Option<chrono::DateTime<Tz>> {
        let midnight = day.and_time(NaiveTime::MIN);
        match self.zone.from_local_datetime(&midnight) {
            LocalResult::Single(t) => Some(t),
            LocalResult::Ambiguous(earlier, _) => Some(earlier),
            // Midnight skipped (some zones change at 00:00): the day starts an hour later.
            LocalResult::None => self
                .zone
                .from_local_datetime(&(midnight + chrono::Duration::hours(1)))
                .earliest(),
        }
    }

    /// Why `day` is not a business day: the excluded date's name (or "holiday"), or its
    /// weekday ("SAT: not a workday"); `None` when it is one.
    pub fn why_not(&self, day: NaiveDate) -> Option<String> {
        if self.is_business_day(day) {
            return None;
        }
        Some(match self.excluded.get(&day) {
            Some(name) if !name.is_empty() => name.clone(),
            Some(_) => "holiday".to_owned(),
            None => format!("{}: not a workday", weekday_name(day.weekday())),
        })
    }

    /// The last business day before `day` (what `${bizdate}` prints for a job that uses this
    /// calendar); `None` when none is within [`MAX_DAYS_WALKED`].
    pub fn previous_business_day(&self, day: NaiveDate) -> Option<NaiveDate> {
        let mut d = day;
        for _ in 0..MAX_DAYS_WALKED {
            d = d.pred_opt()?;
            if self.is_business_day(d) {
                return Some(d);
            }
        }
        None
    }
}

/// `MON` … `SUN`.
pub fn weekday_name(day: Weekday) -> &'static str {
    WEEKDAYS[day.num_days_from_monday() as usize].1
}

/// The weekday called `name` (`MON` … `SUN`, any case).
pub fn weekday_named(name: &str) -> Option<Weekday> {
    WEEKDAYS
        .iter()
        .find(|(_, n)| n.eq_ignore_ascii_case(name.trim()))
        .map(|(d, _)| *d)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn date(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    /// China's National Day week of 2025: 1–8 October off, Sunday 28 September and Saturday
    /// 11 October worked instead.
    pub(crate) fn china_2025() -> BusinessDays {
        let excluded = (1..=8).map(|d| (NaiveDate::from_ymd_opt(2025, 10, d).unwrap(), "国庆节".to_owned()));
        let included = [("2025-09-28", "补班"), ("2025-10-11", "补班")].map(|(d, n)| (date(d), n.to_owned()));
        BusinessDays::new(
            chrono_tz::Asia::Shanghai,
            [true, true, true, true, true, false, false],
            excluded.collect(),
            included.into_iter().collect(),
        )
    }

    #[test]
    fn holidays_and_make_up_days_override_the_week() {
        let cn = china_2025();
        assert!(cn.is_business_day(date("2025-09-26")), "a Friday");
        assert!(!cn.is_business_day(date("2025-09-27")), "a Saturday");
        assert!(cn.is_business_day(date("2025-09-28")), "the make-up Sunday");
        assert!(!cn.is_business_day(date("2025-10-01")), "National Day");
        assert!(!cn.is_business_day(date("2025-10-08")), "a Wednesday of the holiday");
        assert!(cn.is_business_day(date("2025-10-09")));
        assert!(cn.is_business_day(date("2025-10-11")), "the make-up Saturday");
        assert!(!cn.is_business_day(date("2025-10-12")));
        assert_eq!(cn.why_not(date("2025-10-03")).as_deref(), Some("国庆节"));
        assert_eq!(cn.why_not(date("2025-10-12")).as_deref(), Some("SUN: not a workday"));
        assert_eq!(cn.why_not(date("2025-10-11")), None);
        // ${bizdate} on the first day back is the make-up Sunday before the holiday.
        assert_eq!(cn.previous_business_day(date("2025-10-09")), Some(date("2025-09-30")));
        assert_eq!(cn.previous_business_day(date("2025-09-29")), Some(date("2025-09-28")));
        assert_eq!(cn.previous_business_day(date("2025-10-13")), Some(date("2025-10-11")));
    }

    #[test]
    fn dates_are_read_in_the_calendars_zone() {
        let cn = china_2025();
        // 2025-09-30T16:30Z is 00:30 on 1 October in Shanghai: a holiday there.
        let late_utc = 1_759_249_800_000;
        assert_eq!(cn.date_of(late_utc), Some(date("2025-10-01")));
        assert!(!cn.allows(late_utc));
        assert!(cn.allows(late_utc - 3_600_000), "23:30 on the 30th");
        // The next day starts at 16:00Z (midnight in Shanghai).
        assert_eq!(cn.start_of_next_day(late_utc), Some(1_759_334_400_000));
    }

    #[test]
    fn a_day_shortened_by_daylight_saving_starts_at_its_midnight() {
        // New York moved to summer time at 02:00 on 8 March 2026: that day has 23 hours.
        let ny = BusinessDays::new(
            chrono_tz::America::New_York,
            [true; 7],
            BTreeMap::new(),
            BTreeMap::new(),
        );
        let mar_8_noon = 1_772_985_600_000; // 2026-03-08T16:00Z, 12:00 EDT
        assert_eq!(ny.date_of(mar_8_noon), Some(date("2026-03-08")));
        // 9 March starts at 04:00Z (EDT), 23 hours after 8 March did at 05:00Z (EST).
        assert_eq!(ny.start_of_next_day(mar_8_noon), Some(1_773_028_800_000));
        assert_eq!(
            ny.start_of_next_day(mar_8_noon - 12 * 3_600_000),
            Some(1_772_946_000_000)
        );
        assert_eq!(weekday_named(" sat "), Some(Weekday::Sat));
        assert_eq!(weekday_named("Saturday"), None);
    }
}
