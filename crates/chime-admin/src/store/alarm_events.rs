//! The alarms a run raises while it waits or runs, by its job's policy (`late_after`,
//! `longer_than`): found by a look over the recent runs of the few jobs whose policy watches
//! timing, and claimed once per run and event (`alarm_run_event`'s key) with the event's
//! deliveries, in one transaction, however many admins look.

use super::alarm_deliveries::{DeliveryOf, NewDelivery};
use super::bulk::Arg;
use super::rows;
use super::{Store, StoreResult};
use crate::model::{now_ms, AlarmEvent};

/// Most runs of one job alarmed per look, per event.
const PER_LOOK: i64 = 100;

impl Store {
    /// Jobs whose alarm policy watches their runs' timing, with the policy's text.
    pub async fn timed_alarm_policies(&self) -> StoreResult<Vec<(i64, String)>> {
        let q = "SELECT id, alarm_policy FROM job \
                 WHERE alarm_policy LIKE '%late_after=%' OR alarm_policy LIKE '%longer_than=%'";
        let all = sqlx::query(q).fetch_all(&self.read).await?;
        all.iter()
            .map(|r| Ok((rows::int(r, "id")?, rows::text(r, "alarm_policy")?)))
            .collect()
    }

    /// The lowest id of the runs scheduled at or after `since` (`None`: there are none): the
    /// looks for late and slow runs start there, over the job's index, instead of reading a
    /// job's whole history.
    pub async fn first_run_scheduled_since(&self, since: i64) -> StoreResult<Option<i64>> {
        let q = self.sql("SELECT MIN(id) AS id FROM run WHERE scheduled_at >= ?");
        let row = sqlx::query(&q).bind(since).fetch_one(&self.read).await?;
        let id = rows::int(&row, "id")?;
        Ok((id > 0).then_some(id))
    }

    /// Job `job_id`'s runs from id `from_id` on that `event` concerns at `now` and that have
    /// not raised it yet: late (not sent `wait_ms` after their scheduled time, or sent later
    /// than that) or slow (running `wait_ms` after they were sent).
    pub async fn runs_raising(
        &self,
        event: AlarmEvent,
        job_id: i64,
        from_id: i64,
        now: i64,
        wait_ms: i64,
    ) -> StoreResult<Vec<i64>> {
        let (condition, first, second) = match event {
            AlarmEvent::Late => (
                "((r.trigger_code = 0 AND r.scheduled_at < ?) OR (r.triggered_at > 0 AND r.triggered_at > r.scheduled_at + ?))",
                now - wait_ms,
                wait_ms,
            ),
            _ => (
                "(r.trigger_code = 200 AND r.handle_code = 0 AND r.triggered_at > 0 AND r.triggered_at < ? AND ? > 0)",
                now - wait_ms,
                1,
            ),
        };
        let q = self.sql_text(format!(
            "SELECT r.id AS id FROM run r WHERE r.job_id = ? AND r.id >= ? AND {condition} \
                 AND NOT EXISTS (SELECT 1 FROM alarm_run_event e WHERE e.run_id = r.id AND e.event = ?) \
                 ORDER BY r.id LIMIT ?"
        ));
        let found = sqlx::query(&q)
            .bind(job_id)
            .bind(from_id)
            .bind(first)
            .bind(second)
            .bind(event.as_str())
            .bind(PER_LOOK)
            .fetch_all(&self.read)
            .await?;
        Ok(found.iter().map(|r| rows::int(r, "id")).collect::<Result<_, _>>()?)
    }

    /// Claims `event` for run `run_id` and stores its `deliveries`, in one transaction; false
    /// when it was claimed before (by this admin or another).
    pub async fn claim_run_event(
        &self,
        run_id: i64,
        event: AlarmEvent,
        deliveries: &[NewDelivery],
    ) -> StoreResult<bool> {
        let now = now_ms();
        let mut tx = self.write.begin().await?;
        let won = self
            .claim_row(
                &mut tx,
                "alarm_run_event (run_id, event, at)",
                &[Arg::Int(run_id), Arg::Text(event.as_str()), Arg::Int(now)],
            )
            .await?;
        if !won {
            return Ok(false);
        }
        self.insert_deliveries(&mut tx, DeliveryOf::Run(run_id), deliveries, event, now)
            .await?;
        tx.commit().await?;
        Ok(true)
    }
}
