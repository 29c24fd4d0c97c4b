//! A job's schedule as the scheduler uses it: the `chime-cron` engine behind one small type.

use chime_cron as cron;
use chime_protocol::ScheduleType;

/// When a job fires: a parsed cron, fixed-rate or fixed-delay schedule, or none.
#[derive(Debug, Clone)]
pub struct Calendar {
    schedule: Option<cron::Schedule>,
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
            fixed_delay_ms,
        })
    }

    /// `FIX_DELAY`'s delay in ms; `None` for other schedules.
    pub fn fixed_delay_ms(&self) -> Option<i64> {
        self.fixed_delay_ms
    }

    /// The first fire time strictly after `after_ms`, epoch ms; `None` when it never fires again.
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        self.schedule.as_ref()?.next_after(after_ms)
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
