//! A job's schedule as the scheduler uses it: the `chime-cron` engine behind one small type.

use crate::business_days::{BusinessDays, MAX_DAYS_WALKED};
use chime_cron as cron;
use chime_protocol::ScheduleType;
use std::sync::Arc;

/// When a job fires: a parsed cron, fixed-rate or fixed-delay schedule, or none; and the
/// job's further schedules (`more_schedules`), whose fires merge with the first one's.
#[derive(Debug, Clone)]
pub struct Calendar {
    schedule: Option<cron::Schedule>,
    /// Further cron or fixed-rate schedules, each in its own zone: the calendar fires at every
    /// fire time of any of them, once, however many meet on it.
    more: Vec<cron::Schedule>,
    /// `FIX_DELAY`'s delay, ms: the schedule is then only its first fire (the anchor plus the
    /// delay); each later one follows the end of the run before it (`schedule::fixed_delay`).
    fixed_delay_ms: Option<i64>,
    /// The business calendar the fires keep to: a fire on a day it does not count as a
    /// business day is left out (the schedule goes on with the next business day).
    business: Option<Arc<BusinessDays>>,
}

impl Calendar {
    /// Parses a job's schedule. `anchor_ms` starts the fixed-rate grid (the job's start time).
    /// The error text names the bad field and why (it is shown to the user as is).
    pub fn parse(kind: ScheduleType, expr: &str, zone: &str, anchor_ms: i64) -> Result<Calendar, String> {
        let (kind, fixed_delay) = match kind {
            ScheduleType::None => {
                return Ok(Calendar {
                    schedule: None,
                    more: Vec::new(),
                    fixed_delay_ms: None,
                    business: None,
                })
            }
            ScheduleType::Cron => (cron::ScheduleKind::Cron, false),
            ScheduleType::FixRate => (cron::ScheduleKind::FixedRate, false),
            // The delay is written as a fixed rate's interval is (`30`, `30s`, `1500ms`).
            ScheduleType::FixDelay => (cron::ScheduleKind::FixedRate, true),
        };
        let schedule = cron::Schedule::parse(kind, expr, zone).map_err(|e| e.to_string())?;
        let schedule = if kind == cron::ScheduleKind::FixedRate {
            schedule.with_anchor(anchor_ms)
        } else {
            schedule
        };
        let fixed_delay_ms = fixed_delay.then(|| cron::FixedRate::parse_interval(expr).unwrap_or_default());
        Ok(Calendar {
            schedule: Some(schedule),
            more: Vec::new(),
            fixed_delay_ms,
            business: None,
        })
    }

    /// This calendar with further schedules: `(type, expression, zone)` each, CRON or
    /// FIX_RATE (a fixed rate starts its grid at `anchor_ms`, as the first schedule's does).
    /// A fixed delay or no schedule takes none: their fires do not come from a grid.
    pub fn with_more<'a>(
        mut self,
        more: impl IntoIterator<Item = (ScheduleType, &'a str, &'a str)>,
        anchor_ms: i64,
    ) -> Result<Calendar, String> {
        for (kind, expr, zone) in more {
            let kind = match kind {
                ScheduleType::Cron => cron::ScheduleKind::Cron,
                ScheduleType::FixRate => cron::ScheduleKind::FixedRate,
                other => return Err(format!("a further schedule is CRON or FIX_RATE, not {other}")),
            };
            if self.schedule.is_none() || self.fixed_delay_ms.is_some() {
                return Err("further schedules need the first one to be CRON or FIX_RATE".to_owned());
            }
            let schedule = cron::Schedule::parse(kind, expr, zone).map_err(|e| e.to_string())?;
            self.more.push(if kind == cron::ScheduleKind::FixedRate {
                schedule.with_anchor(anchor_ms)
            } else {
                schedule
            });
        }
        Ok(self)
    }

    /// This calendar keeping to the business days of `business` (none: every day). Only a grid
    /// (CRON, FIX_RATE) keeps to one: a fixed delay follows its runs' ends.
    pub fn with_business_days(mut self, business: Option<Arc<BusinessDays>>) -> Result<Calendar, String> {
        if business.is_some() && self.fixed_delay_ms.is_some() {
            return Err("a business calendar applies to CRON and FIX_RATE schedules, not FIX_DELAY".to_owned());
        }
        self.business = business;
        Ok(self)
    }

    /// The business calendar the fires keep to, if any.
    pub fn business_days(&self) -> Option<&Arc<BusinessDays>> {
        self.business.as_ref()
    }

    /// `FIX_DELAY`'s delay in ms; `None` for other schedules.
    pub fn fixed_delay_ms(&self) -> Option<i64> {
        self.fixed_delay_ms
    }

    /// The first fire time strictly after `after_ms`, epoch ms; `None` when it never fires again
    /// (or its business calendar has no business day in the ten years after).
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        let Some(business) = &self.business else {
            return self.next_of_any(after_ms);
        };
        let mut after = after_ms;
        for _ in 0..MAX_DAYS_WALKED {
            let fire = self.next_of_any(after)?;
            if business.allows(fire) {
                return Some(fire);
            }
            // Not a business day: nothing else that day is either.
            after = end_of_day(business, fire)?;
        }
        None
    }

    /// The days between `after_ms` and `until_ms` (included) on which the business calendar
    /// leaves fires out, at most `limit`: each day's first left-out fire time and why (the
    /// holiday's name, or the weekday). What a preview shows as skipped.
    pub fn skipped_between(&self, after_ms: i64, until_ms: i64, limit: usize) -> Vec<(i64, String)> {
        let Some(business) = &self.business else {
            return Vec::new();
        };
        let mut skipped = Vec::new();
        let mut after = after_ms;
        for _ in 0..MAX_DAYS_WALKED {
            if skipped.len() >= limit {
                break;
            }
            let Some(fire) = self.next_of_any(after).filter(|f| *f <= until_ms) else {
                break;
            };
            if let Some(why) = business.date_of(fire).and_then(|d| business.why_not(d)) {
                skipped.push((fire, why));
            }
            // One entry a day, skipped or not: on to the next day.
            let Some(end) = end_of_day(business, fire) else { break };
            after = end;
        }
        skipped
    }

    /// The first fire time after `after_ms` of any of the schedules, business days aside.
    fn next_of_any(&self, after_ms: i64) -> Option<i64> {
        let first = self.schedule.as_ref()?.next_after(after_ms);
        self.more
            .iter()
            .filter_map(|s| s.next_after(after_ms))
            .chain(first)
            .min()
    }
}

/// The last instant (epoch ms) of the day `at_ms` falls on in `business`'s zone: a search for
/// fires from it starts with the next day.
fn end_of_day(business: &BusinessDays, at_ms: i64) -> Option<i64> {
    Some(business.start_of_next_day(at_ms)?.max(at_ms + 1) - 1)
}

/// The admin machine's IANA zone name (the default zone of new jobs).
pub fn local_zone_name() -> String {
    cron::local_zone_name()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_second_cron_and_fixed_rate() {
        let c = Calendar::parse(ScheduleType::Cron, "* * * * * ?", "UTC", 0).unwrap();
        assert_eq!(c.next_after(1_000_500), Some(1_001_000));
        let f = Calendar::parse(ScheduleType::FixRate, "2", "UTC", 1_000).unwrap();
        assert_eq!(f.next_after(1_000), Some(3_000));
        assert_eq!(f.next_after(2_999), Some(3_000));
        assert!(Calendar::parse(ScheduleType::Cron, "61 * * * * ?", "UTC", 0).is_err());
        assert_eq!(
            Calendar::parse(ScheduleType::None, "", "UTC", 0).unwrap().next_after(0),
            None
        );
    }

    #[test]
    fn further_schedules_merge_and_meet_once() {
        // 09:00 in Shanghai (01:00 UTC) and 18:00 in Berlin (17:00 UTC in winter), and every
        // day at 01:00 UTC again: it meets the first, and fires once.
        let day = 86_400_000;
        let jan_1 = 1_767_225_600_000; // 2026-01-01T00:00:00Z
        let cal = Calendar::parse(ScheduleType::Cron, "0 0 9 * * ?", "Asia/Shanghai", 0)
            .unwrap()
            .with_more(
                [
                    (ScheduleType::Cron, "0 0 18 * * ?", "Europe/Berlin"),
                    (ScheduleType::Cron, "0 0 1 * * ?", "UTC"),
                ],
                0,
            )
            .unwrap();
        let mut fires = Vec::new();
        let mut t = jan_1;
        for _ in 0..4 {
            t = cal.next_after(t).unwrap();
            fires.push(t - jan_1);
        }
        let h = 3_600_000;
        assert_eq!(fires, vec![h, 17 * h, day + h, day + 17 * h]);
        // A fixed rate among them starts its grid at the anchor.
        let rate = Calendar::parse(ScheduleType::Cron, "0 0 0 1 1 ? 2099", "UTC", 0)
            .unwrap()
            .with_more([(ScheduleType::FixRate, "10", "UTC")], 5_000)
            .unwrap();
        assert_eq!(rate.next_after(6_000), Some(15_000));
        // Only a grid takes further schedules, and only grids are added.
        let delay = Calendar::parse(ScheduleType::FixDelay, "30", "UTC", 0).unwrap();
        assert!(delay
            .with_more([(ScheduleType::Cron, "* * * * * ?", "UTC")], 0)
            .is_err());
        let cron = Calendar::parse(ScheduleType::Cron, "* * * * * ?", "UTC", 0).unwrap();
        assert!(cron
            .clone()
            .with_more([(ScheduleType::FixDelay, "30", "UTC")], 0)
            .is_err());
        assert!(cron
            .with_more([(ScheduleType::Cron, "* * * * * ?", "Mars/Olympus")], 0)
            .is_err());
    }

    /// A daily 09:00 in Shanghai on the business days of China's National Day week of 2025:
    /// 1–8 October off, Sunday 28 September and Saturday 11 October worked.
    #[test]
    fn a_business_calendar_skips_holidays_and_fires_on_make_up_days() {
        let cn = Arc::new(crate::business_days::tests::china_2025());
        let cal = Calendar::parse(ScheduleType::Cron, "0 0 9 * * ?", "Asia/Shanghai", 0)
            .unwrap()
            .with_business_days(Some(cn))
            .unwrap();
        let sep_26 = 1_758_848_400_000; // 2025-09-26T01:00Z, Friday 09:00 in Shanghai
        let mut fires = vec![sep_26];
        while fires.len() < 6 {
            fires.push(cal.next_after(*fires.last().unwrap()).unwrap());
        }
        let day = 86_400_000;
        let days_after: Vec<i64> = fires.iter().map(|f| (f - sep_26) / day).collect();
        // Fri 26, Sun 28 (make-up), Mon 29, Tue 30, Thu 9 Oct, Fri 10 Oct.
        assert_eq!(days_after, [0, 2, 3, 4, 13, 14]);
        assert_eq!(
            cal.next_after(fires[5]),
            Some(sep_26 + 15 * day),
            "Sat 11 Oct, the make-up day"
        );
        assert!(fires.iter().all(|f| (f - sep_26) % day == 0), "all at 09:00");
        let skipped = cal.skipped_between(sep_26, sep_26 + 16 * day, 20);
        let skipped_days: Vec<i64> = skipped.iter().map(|(f, _)| (f - sep_26) / day).collect();
        // Sat 27, 1–8 Oct, Sun 12.
        assert_eq!(skipped_days, [1, 5, 6, 7, 8, 9, 10, 11, 12, 16]);
        assert_eq!(skipped[1].1, "国庆节");
        assert_eq!(skipped[0].1, "SAT: not a workday");
        // A fixed delay takes no calendar.
        let delay = Calendar::parse(ScheduleType::FixDelay, "30", "UTC", 0).unwrap();
        assert!(delay
            .with_business_days(Some(Arc::new(crate::business_days::tests::china_2025())))
            .is_err());
    }

    /// Hourly in New York with 8 March 2026 excluded, the 23-hour day summer time begins: the
    /// last fire before is 23:00 EST on the 7th, the next 00:00 EDT on the 9th, 25 hours on.
    #[test]
    fn a_skipped_day_across_a_daylight_saving_change() {
        use chrono::NaiveDate;
        let excluded = [(NaiveDate::from_ymd_opt(2026, 3, 8).unwrap(), "closed".to_owned())];
        let ny = crate::business_days::BusinessDays::new(
            chrono_tz::America::New_York,
            [true; 7],
            excluded.into_iter().collect(),
            Default::default(),
        );
        let cal = Calendar::parse(ScheduleType::Cron, "0 0 * * * ?", "America/New_York", 0)
            .unwrap()
            .with_business_days(Some(Arc::new(ny)))
            .unwrap();
        let mar_7_23h = 1_772_942_400_000; // 2026-03-08T04:00Z
        let h = 3_600_000;
        assert_eq!(cal.next_after(mar_7_23h - h), Some(mar_7_23h));
        assert_eq!(cal.next_after(mar_7_23h), Some(mar_7_23h + 24 * h), "2026-03-09T04:00Z");
        assert_eq!(cal.next_after(mar_7_23h + 24 * h), Some(mar_7_23h + 25 * h));
        let skipped = cal.skipped_between(mar_7_23h, mar_7_23h + 48 * h, 5);
        assert_eq!(skipped, [(mar_7_23h + h, "closed".to_owned())]);
    }

    #[test]
    fn a_fixed_delay_is_its_first_fire_and_its_delay() {
        let d = Calendar::parse(ScheduleType::FixDelay, "1500ms", "UTC", 10_000).unwrap();
        assert_eq!(d.fixed_delay_ms(), Some(1_500));
        // Started at 10 s: the first fire a delay later.
        assert_eq!(d.next_after(10_000), Some(11_500));
        assert_eq!(
            Calendar::parse(ScheduleType::FixRate, "2", "UTC", 0)
                .unwrap()
                .fixed_delay_ms(),
            None
        );
        assert!(Calendar::parse(ScheduleType::FixDelay, "0", "UTC", 0).is_err());
    }
}
