//! Backfills: a job or a workflow run once for every fire time its schedule had in a past
//! range, each run (instance) scheduled at its fire time (so its parameters' dates resolve to
//! it), at most `at_once` under way (see `schedule::backfill`).

use crate::api::{calendar_with_more, Backfill, MoreSchedule};
use crate::center::{Admin, OpError};
use crate::model::{now_ms, Invalid};
use crate::store::{BackfillTarget, NewBackfill, StoreError};
use chime_protocol::ScheduleType;

/// The longest range a backfill covers: a year and a day.
pub const MAX_BACKFILL_RANGE_MS: i64 = 366 * 24 * 3600 * 1000;
/// The most fire times one backfill takes on (a range with more is split by the caller).
pub const MAX_BACKFILL_FIRES: usize = 10_000;
/// The most runs of one backfill under way at once.
pub const MAX_BACKFILL_AT_ONCE: i64 = 100;

/// What a backfill is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackfillRequest {
    /// The range's first instant, epoch ms (included).
    pub from: i64,
    /// The range's last instant, epoch ms (included); not in the future.
    pub to: i64,
    /// At most this many runs under way at once.
    pub at_once: i64,
    /// Newest fire times first.
    pub newest_first: bool,
}

impl BackfillRequest {
    /// Refuses a range that is empty, reversed, in the future or longer than a year and a day,
    /// and a parallelism out of `1..=MAX_BACKFILL_AT_ONCE`.
    fn check(&self, now: i64) -> Result<(), Invalid> {
        if self.from < 0 {
            return Err(Invalid::new("from", "must be an instant (epoch ms) after 1970"));
        }
        if self.to <= self.from {
            return Err(Invalid::new("to", "must be after from"));
        }
        if self.to > now {
            return Err(Invalid::new(
                "to",
                format!("must not be in the future (now is {now}, epoch ms)"),
            ));
        }
        if self.to - self.from > MAX_BACKFILL_RANGE_MS {
            return Err(Invalid::new(
                "to",
                "the range must be at most 366 days; backfill a longer one in parts",
            ));
        }
        if !(1..=MAX_BACKFILL_AT_ONCE).contains(&self.at_once) {
            return Err(Invalid::new(
                "at_once",
                format!("must be between 1 and {MAX_BACKFILL_AT_ONCE}"),
            ));
        }
        Ok(())
    }
}

/// A schedule to walk over a past range: its type, expression, zone and further schedules.
#[derive(Debug, Clone, Copy)]
pub struct PastSchedule<'a> {
    /// `CRON` or `FIX_RATE` (the others are refused).
    pub kind: ScheduleType,
    /// Its expression.
    pub expr: &'a str,
    /// Its zone.
    pub zone: &'a str,
    /// Its further schedules (a job's).
    pub more: &'a [MoreSchedule],
}

/// Every fire time of `schedule` (`what`'s, for the messages) in `from..=to`; a fixed rate's
/// grid starts at `from`. Refused for a schedule without past fire times to replay
/// (FIX_DELAY, NONE), and for a range with more than [`MAX_BACKFILL_FIRES`].
pub fn backfill_fire_times(what: &str, schedule: PastSchedule<'_>, from: i64, to: i64) -> Result<Vec<i64>, Invalid> {
    if !matches!(schedule.kind, ScheduleType::Cron | ScheduleType::FixRate) {
        return Err(Invalid::new(
            "schedule_type",
            format!(
                "{what} has a {} schedule: only CRON and FIX_RATE schedules have fire times to backfill",
                schedule.kind
            ),
        ));
    }
    let calendar = calendar_with_more(schedule.kind, schedule.expr, schedule.zone, schedule.more, from)
        .map_err(|e| Invalid::new("schedule_expr", e))?;
    let mut times = Vec::new();
    let mut after = from - 1;
    while let Some(at) = calendar.next_after(after).filter(|at| *at <= to) {
        if times.len() == MAX_BACKFILL_FIRES {
            return Err(Invalid::new(
                "to",
                format!("the range holds more than {MAX_BACKFILL_FIRES} fire times; backfill it in parts"),
            ));
        }
        times.push(at);
        after = at;
    }
    Ok(times)
}

impl Admin {
    /// Starts a backfill of `target` asked for by `by`; answers it (done at once when the
    /// range holds no fire time that was not backfilled before).
    pub async fn create_backfill(
        &self,
        target: BackfillTarget,
        req: BackfillRequest,
        by: &str,
    ) -> Result<Backfill, OpError> {
        let now = now_ms();
        req.check(now)?;
        let fire_times = match target {
            BackfillTarget::Job(id) => {
                let job = self.store.job(id).await?;
                let schedule = PastSchedule {
                    kind: job.schedule_type,
                    expr: &job.schedule_expr,
                    zone: &job.time_zone,
                    more: &job.more_schedules,
                };
                backfill_fire_times(&target.to_string(), schedule, req.from, req.to)?
            }
            BackfillTarget::Workflow(id) => {
                let w = self.store.workflow(id).await?;
                let schedule = PastSchedule {
                    kind: w.schedule_type,
                    expr: &w.schedule_expr,
                    zone: &w.time_zone,
                    more: &[],
                };
                backfill_fire_times(&target.to_string(), schedule, req.from, req.to)?
            }
        };
        let new = NewBackfill {
            target,
            from: req.from,
            to: req.to,
            at_once: req.at_once,
            newest_first: req.newest_first,
            fire_times,
            created_by: by.to_owned(),
        };
        Ok(self.store.insert_backfill(&new, now).await?)
    }

    /// Backfill `id` of `target` (404 when it is another's).
    pub async fn backfill_of(&self, target: BackfillTarget, id: i64) -> Result<Backfill, OpError> {
        let backfill = self.store.backfill(id).await?;
        let of = match target {
            BackfillTarget::Job(job) => backfill.job_id == Some(job),
            BackfillTarget::Workflow(workflow) => backfill.workflow_id == Some(workflow),
        };
        if !of {
            return Err(StoreError::NotFound(format!("backfill {id} of {target}")).into());
        }
        Ok(backfill)
    }

    /// Cancels backfill `id` of `target`: its waiting fire times are let go, what is under
    /// way goes on. Answers it.
    pub async fn cancel_backfill(&self, target: BackfillTarget, id: i64) -> Result<Backfill, OpError> {
        self.backfill_of(target, id).await?;
        self.store.cancel_backfill(id, now_ms()).await?;
        self.backfill_of(target, id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 24 * 3600 * 1000;

    fn daily(kind: ScheduleType, expr: &str) -> PastSchedule<'_> {
        PastSchedule {
            kind,
            expr,
            zone: "UTC",
            more: &[],
        }
    }

    #[test]
    fn a_daily_schedule_has_one_fire_time_per_day_of_the_range_ends_included() {
        // 2026-01-01T02:00Z .. 2026-01-31T02:00Z: both ends are fire times.
        let from = 1_767_232_800_000;
        let times =
            backfill_fire_times("job 1", daily(ScheduleType::Cron, "0 0 2 * * ?"), from, from + 30 * DAY).unwrap();
        assert_eq!(times.len(), 31);
        assert_eq!(times[0], from);
        assert!(times.windows(2).all(|w| w[1] - w[0] == DAY));
    }

    #[test]
    fn schedules_without_past_fire_times_and_huge_ranges_are_refused() {
        let err = backfill_fire_times("job 1", daily(ScheduleType::None, ""), 0, DAY).unwrap_err();
        assert_eq!(err.field, "schedule_type");
        assert!(err.message.starts_with("job 1 has a NONE schedule"), "{}", err.message);
        let every_second = daily(ScheduleType::Cron, "* * * * * ?");
        let err = backfill_fire_times("job 1", every_second, 0, DAY).unwrap_err();
        assert!(err.message.contains("10000 fire times"), "{}", err.message);
    }

    #[test]
    fn requests_are_checked() {
        let now = 100 * DAY;
        let ok = BackfillRequest {
            from: DAY,
            to: 2 * DAY,
            at_once: 3,
            newest_first: false,
        };
        assert!(ok.check(now).is_ok());
        let field = |r: BackfillRequest| r.check(now).unwrap_err().field;
        assert_eq!(field(BackfillRequest { to: DAY, ..ok }), "to");
        assert_eq!(field(BackfillRequest { to: now + 1, ..ok }), "to");
        assert_eq!(field(BackfillRequest { from: -5, ..ok }), "from");
        assert_eq!(field(BackfillRequest { at_once: 0, ..ok }), "at_once");
        assert_eq!(
            field(BackfillRequest {
                at_once: MAX_BACKFILL_AT_ONCE + 1,
                ..ok
            }),
            "at_once"
        );
        assert_eq!(
            field(BackfillRequest {
                from: 0,
                to: MAX_BACKFILL_RANGE_MS + 1,
                ..ok
            }),
            "to"
        );
    }
}
