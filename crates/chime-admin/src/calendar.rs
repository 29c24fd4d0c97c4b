//! A job's schedule as the scheduler uses it: the `chime-cron` engine behind one small type.

use chime_cron as cron;
use chime_protocol::ScheduleType;

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

    /// `FIX_DELAY`'s delay in ms; `None` for other schedules.
    pub fn fixed_delay_ms(&self) -> Option<i64> {
        self.fixed_delay_ms
    }

    /// The first fire time strictly after `after_ms`, epoch ms; `None` when it never fires again.
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        let first = self.schedule.as_ref()?.next_after(after_ms);
        self.more
            .iter()
            .filter_map(|s| s.next_after(after_ms))
            .chain(first)
            .min()
    }
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
