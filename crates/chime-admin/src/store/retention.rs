//! Run retention: finished runs older than the retention period are deleted in small batches.

use super::bulk::Arg;
use super::rows;
use super::{Store, StoreResult};

impl Store {
    /// Deletes finished runs (success, failure, skipped) created before `cutoff` (epoch ms),
    /// `batch` rows per transaction, and returns how many were deleted. Pending and running
    /// runs are kept whatever their age: the scheduler still owes them a result. Their stored
    /// logs (`run_log`) are deleted with them.
    ///
    /// Runs are walked in id order over the primary key (ids grow with creation time), so each
    /// batch is an index range read and a delete by ids, on every database, without an index
    /// on `created_at`. The walk stops at the first run younger than the cutoff.
    pub async fn delete_finished_runs_before(&self, cutoff: i64, batch: i64) -> StoreResult<u64> {
        let select = self
            .sql("SELECT id, created_at, trigger_code, handle_code FROM run WHERE id > ? ORDER BY id LIMIT ?")
            .into_owned();
        let mut after = 0_i64;
        let mut deleted = 0_u64;
        loop {
            let page = sqlx::query(&select)
                .bind(after)
                .bind(batch.max(1))
                .fetch_all(&self.read)
                .await?;
            let mut doomed = Vec::new();
            let mut reached_young = false;
            for r in &page {
                let id = rows::int(r, "id")?;
                after = id;
                if rows::int(r, "created_at")? >= cutoff {
                    reached_young = true;
                    break;
                }
                let (trigger, handle) = (rows::int(r, "trigger_code")?, rows::int(r, "handle_code")?);
                let open = handle == 0 && (trigger == 0 || trigger == 200);
                if !open {
                    doomed.push(id);
                }
            }
            if !doomed.is_empty() {
                // The state is checked again in the DELETE: a run may have changed since the read.
                deleted += self
                    .write_in(
                        "DELETE FROM run WHERE id IN ({in}) AND created_at < ? \
                         AND NOT (handle_code = 0 AND trigger_code IN (0, 200))",
                        &doomed,
                        &[Arg::Int(cutoff)],
                    )
                    .await?;
                // Their stored logs and alarm deliveries go with them (a run kept by the
                // re-check keeps both).
                for table in ["run_log", "alarm_delivery", "alarm_run_event"] {
                    let sql = format!(
                        "DELETE FROM {table} WHERE run_id IN ({{in}}) \
                         AND NOT EXISTS (SELECT 1 FROM run WHERE run.id = {table}.run_id)"
                    );
                    self.write_in(&sql, &doomed, &[]).await?;
                }
            }
            if reached_young || (page.len() as i64) < batch.max(1) {
                return Ok(deleted);
            }
            // Let the scheduler's writes through between batches.
            tokio::task::yield_now().await;
        }
    }

    /// Deletes the alarms no run raised (`alarm_event`) stored before `cutoff` (epoch ms), with
    /// their deliveries, and returns how many. Kept whatever their age: one with a delivery
    /// still pending (the outbox owes it), and the one a group's open outage points to (its
    /// `executor_back` follows it).
    pub async fn delete_alarm_events_before(&self, cutoff: i64) -> StoreResult<u64> {
        let mut tx = self.write.begin().await?;
        let q = self.sql(
            "DELETE FROM alarm_event WHERE created_at < ? \
             AND NOT EXISTS (SELECT 1 FROM alarm_delivery d WHERE d.event_id = alarm_event.id AND d.state = 0) \
             AND NOT EXISTS (SELECT 1 FROM alarm_group_incident i WHERE i.event_id = alarm_event.id)",
        );
        let deleted = sqlx::query(&q).bind(cutoff).execute(&mut *tx).await?.rows_affected();
        sqlx::query(
            "DELETE FROM alarm_delivery WHERE event_id > 0 \
             AND NOT EXISTS (SELECT 1 FROM alarm_event e WHERE e.id = alarm_delivery.event_id)",
        )
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(deleted)
    }
}
