//! A job's schedule as the scheduler uses it: the `chime-cron` engine behind one small type.

use chime_cron as cron;
use chime_protocol::ScheduleType;

/// When a job fires: a parsed cron or fixed-rate schedule, or none.
#[derive(Debug, Clone)]
pub struct Calendar {
    schedule: Option<cron::Schedule>,
}

impl Calendar {
    /// Parses a job's schedule. `anchor_ms` starts the fixed-rate grid (the job's start time).
    /// The error text names the bad field and why (it is shown to the user as is).
    pub fn parse(kind: ScheduleType, expr: &str, zone: &str, anchor_ms: i64) -> Result<Calendar, String> {
        let kind = match kind {
            ScheduleType::None => return Ok(Calendar { schedule: None }),
            ScheduleType::Cron => cron::ScheduleKind::Cron,
            ScheduleType::FixRate => cron::ScheduleKind::FixedRate,
        };
        let schedule = cron::Schedule::parse(kind, expr, zone).map_err(|e| e.to_string())?;
        let schedule = if kind == cron::ScheduleKind::FixedRate {
            schedule.with_anchor(anchor_ms)
        } else {
            schedule
        };
        Ok(Calendar {
            schedule: Some(schedule),
        })
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
}
