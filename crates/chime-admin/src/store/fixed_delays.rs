//! `FIX_DELAY`: a job's next fire is the end of its last run plus its delay. From the claim of
//! a fire until that run has ended the job waits (`next_fire_at` = [`WAITING_FOR_RUN_END`]);
//! each claim round of the admin holding its partition looks at its runs, and once none is
//! pending or running sets the next fire from the database alone: after a restart or a
//! failover the next holder computes the same time.

use super::{rows, Store, StoreResult};
use crate::model::{RunStatus, WAITING_FOR_RUN_END};
use chime_cron::FixedRate;

/// How many of a waiting job's newest runs are looked at. Its unfinished runs are among them:
/// the fire's run, its retries, a manual run beside it; an older run still open is left to the
/// lost-run sweep.
const RECENT_RUNS: i64 = 20;

impl Store {
    /// Gives each running `FIX_DELAY` job of `partitions` that waits for its run, and whose
    /// newest runs have all ended, its next fire: the last end plus its delay. A run that never
    /// reached an executor ends when it was triggered; one skipped ends `now`. Returns how many
    /// jobs got one.
    pub async fn schedule_fixed_delays(&self, partitions: &[i64], now: i64) -> StoreResult<usize> {
        if partitions.is_empty() {
            return Ok(0);
        }
        let list = rows::join_ids(partitions);
        // `job_due (running, next_fire_at)` finds them: nearly always none.
        let q = format!(
            "SELECT id, schedule_expr FROM job WHERE running = 1 AND next_fire_at = {WAITING_FOR_RUN_END} \
             AND partition_no IN ({list})"
        );
        let waiting = sqlx::query(&q).fetch_all(&self.read).await?;
        let mut scheduled = 0;
        for row in waiting {
            let id = rows::int(&row, "id")?;
            let Ok(delay) = FixedRate::parse_interval(&rows::text(&row, "schedule_expr")?) else {
                continue;
            };
            let q = self.sql_text(format!(
                "SELECT trigger_code, handle_code, triggered_at, handled_at FROM run WHERE job_id = ? \
                 ORDER BY id DESC LIMIT {RECENT_RUNS}"
            ));
            let recent = sqlx::query(&q).bind(id).fetch_all(&self.read).await?;
            let mut ended = 0;
            let mut open = false;
            for r in &recent {
                let end = match RunStatus::of(rows::int(r, "trigger_code")?, rows::int(r, "handle_code")?) {
                    RunStatus::Pending | RunStatus::Running => {
                        open = true;
                        break;
                    }
                    RunStatus::Skipped => now,
                    _ => rows::int(r, "handled_at")?.max(rows::int(r, "triggered_at")?),
                };
                ended = ended.max(end);
            }
            if open {
                continue;
            }
            let next = if ended > 0 { ended } else { now } + delay;
            let q = self.sql("UPDATE job SET next_fire_at = ? WHERE id = ? AND running = 1 AND next_fire_at = ?");
            let done = sqlx::query(&q)
                .bind(next)
                .bind(id)
                .bind(WAITING_FOR_RUN_END)
                .execute(&self.write)
                .await?;
            scheduled += done.rows_affected() as usize;
        }
        Ok(scheduled)
    }
}
