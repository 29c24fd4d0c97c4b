//! Claiming due fires, runs a crash left unsent, and skipped misfires.

use super::{ticket, TICKET_COLUMNS_OF_R, UPDATE_ROWS};
use crate::model::{Job, SKIPPED_CODE};
use crate::run::{Claimed, FirePlan, RunTicket};
use crate::store::bulk::{sized_query, Arg};
use crate::store::rows;
use crate::store::{Store, StoreResult, PARTITIONS};
use sqlx::AnyConnection;
use std::collections::HashMap;
use std::sync::Arc;

/// What a claim reads of each scheduled row due (a job's or a workflow's), in this order.
pub(in crate::store) const DUE_COLUMNS: [&str; 6] = [
    "id",
    "updated_at",
    "anchor_at",
    "next_fire_at",
    "last_fire_at",
    "paused_until",
];

/// Jobs kept in the claim loop's cache at most (a job is a few hundred bytes); the scheduler
/// clears the cache when it is full.
const JOB_CACHE_MAX: usize = 100_000;
/// Jobs whose script is longer than this are read again each round instead of cached.
const JOB_CACHE_GLUE_MAX: usize = 4096;

impl Store {
    /// Claims due fires: in one transaction, checks which of the partitions in `ready` (those
    /// this admin has recovered) it still leases, reads running jobs due before `horizon`, lets `plan` decide their fires, inserts
    /// the run rows and advances each job's `next_fire_at`. After the commit the fires are
    /// durable; the unique `(job_id, fire_key)` key makes a second claim of the same fire a no-op.
    ///
    /// `cache` keeps full job rows between rounds: the due query reads only
    /// `(id, updated_at, anchor_at, next_fire_at, last_fire_at)` and full rows are read for jobs
    /// not cached or changed since (every job edit moves `updated_at` forward, see
    /// `jobs::bump_updated_at`). Converting 26-column rows was most of a claim round's time.
    pub async fn claim_due_fires(
        &self,
        owner: &str,
        ready: &[i64],
        horizon: i64,
        limit: i64,
        cache: &mut HashMap<i64, Arc<Job>>,
        mut plan: impl FnMut(&Job) -> FirePlan,
    ) -> StoreResult<Claimed> {
        let mut tx = self.write.begin().await?;
        let held = self.leased_ready(&mut tx, owner, ready).await?;
        if held.is_empty() {
            return Ok(Claimed::default());
        }
        let due = self.due_fire_times(&mut tx, &held, horizon, limit).await?;
        let more = due.len() as i64 == limit;
        if due.is_empty() {
            return Ok(Claimed::default());
        }
        let jobs = self.due_jobs(&mut tx, &due, cache).await?;
        let mut all_runs = Vec::new();
        let mut updates = Vec::with_capacity(jobs.len());
        for job in &jobs {
            let p = plan(job);
            updates.push((job.id, p.next_fire_at, p.last_fire_at));
            all_runs.extend(p.runs);
        }
        let skipped = all_runs.iter().filter(|r| r.trigger_code == SKIPPED_CODE).count();
        let tickets = self.insert_fires_tx(&mut tx, &all_runs).await?;
        self.write_job_fire_times(&mut tx, &updates).await?;
        tx.commit().await?;
        let mut by_job: HashMap<i64, Vec<RunTicket>> = HashMap::new();
        for t in tickets {
            by_job.entry(t.job_id).or_default().push(t);
        }
        let jobs = jobs
            .into_iter()
            .filter_map(|j| by_job.remove(&j.id).map(|t| (j, t)))
            .collect();
        Ok(Claimed { jobs, more, skipped })
    }

    /// The partitions among `ready` that `owner` still leases, judged by the database's clock,
    /// as the leases are stamped (`Store::lease_table`).
    async fn leased_ready(&self, tx: &mut AnyConnection, owner: &str, ready: &[i64]) -> StoreResult<Vec<i64>> {
        let q = self.sql_text(format!(
            "SELECT partition_no FROM partition_lease WHERE owner = ? AND expires_at > {}",
            self.backend.now_ms_sql()
        ));
        Ok(sqlx::query(&q)
            .bind(owner)
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|r| rows::int(r, "partition_no"))
            .collect::<Result<Vec<i64>, _>>()?
            .into_iter()
            .filter(|p| ready.contains(p))
            .collect())
    }

    /// The query of `table`'s (jobs' or workflows') started rows due by a horizon and not paused
    /// past it, their [`DUE_COLUMNS`] in order of fire time, locked for the claim: `filter`
    /// (SQL from ` AND`) narrows it, `limit` is the `LIMIT`'s value or placeholder. It binds the
    /// horizon twice (fire time, pause's end), then what `filter` and `limit` name.
    pub(in crate::store) fn due_rows_sql(&self, table: &str, filter: &str, limit: &str) -> String {
        self.sql_text(format!(
            "SELECT {} FROM {table} WHERE running = 1 AND next_fire_at <= ? AND paused_until <= ?{filter} \
             ORDER BY next_fire_at LIMIT {limit}{}",
            DUE_COLUMNS.join(", "),
            self.backend.for_update()
        ))
    }

    /// The fire times of the running jobs of partitions `held` due before `horizon` and not
    /// paused past it, at most `limit`, their rows locked: `id, updated_at, anchor_at,
    /// next_fire_at, last_fire_at, paused_until`.
    async fn due_fire_times(
        &self,
        tx: &mut AnyConnection,
        held: &[i64],
        horizon: i64,
        limit: i64,
    ) -> StoreResult<Vec<[i64; 6]>> {
        let partition_filter = if held.len() as i64 == PARTITIONS {
            String::new()
        } else {
            format!(
                " AND partition_no IN ({})",
                held.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",")
            )
        };
        let q = self.due_rows_sql("job", &partition_filter, "?");
        self.int_rows(tx, &q, DUE_COLUMNS, &[horizon, horizon, limit]).await
    }

    /// The jobs of the fire times `due`, with those times: from `cache` while their
    /// `updated_at` and `anchor_at` hold, read (and cached, unless large) when not.
    async fn due_jobs(
        &self,
        tx: &mut AnyConnection,
        due: &[[i64; 6]],
        cache: &mut HashMap<i64, Arc<Job>>,
    ) -> StoreResult<Vec<Arc<Job>>> {
        let stale: Vec<i64> = due
            .iter()
            .filter(|[id, updated, anchor, ..]| {
                cache
                    .get(id)
                    .is_none_or(|j| j.updated_at != *updated || j.anchor_at != *anchor)
            })
            .map(|d| d[0])
            .collect();
        let fresh = self.jobs_tx(tx, &stale).await?;
        let mut uncached: HashMap<i64, Arc<Job>> = HashMap::new();
        for (id, job) in fresh {
            let job = Arc::new(job);
            // Jobs with a long script stay out of the cache: they would make it large.
            if job.glue_source.len() <= JOB_CACHE_GLUE_MAX && cache.len() < JOB_CACHE_MAX {
                cache.insert(id, job);
            } else {
                cache.remove(&id);
                uncached.insert(id, job);
            }
        }
        let mut jobs: Vec<Arc<Job>> = Vec::with_capacity(due.len());
        for [id, _, _, next, last, paused_until] in due {
            // A job deleted since the due query cannot be, the row is locked (or, on SQLite,
            // this is the only writer); skip defensively rather than fail the round.
            let Some(base) = uncached.get(id).or_else(|| cache.get(id)) else {
                continue;
            };
            let mut job = Job::clone(base);
            job.next_fire_at = *next;
            job.last_fire_at = *last;
            job.paused_until = *paused_until;
            jobs.push(Arc::new(job));
        }
        Ok(jobs)
    }

    /// Writes the jobs' next and last fire times (`id, next_fire_at, last_fire_at`); a
    /// schedule that never fires again stops its job, as XXL-JOB does.
    async fn write_job_fire_times(&self, tx: &mut AnyConnection, updates: &[(i64, i64, i64)]) -> StoreResult<()> {
        for chunk in updates.chunks(UPDATE_ROWS) {
            let q = self
                .backend
                .update_by_id("job", &["next_fire_at", "last_fire_at"], chunk.len(), "");
            let mut query = sized_query(&q, chunk.len() * 3);
            for (id, next, last) in self.backend.padded(chunk) {
                query = query.bind(*id).bind(*next).bind(*last);
            }
            query.execute(&mut *tx).await?;
        }
        let ended: Vec<i64> = updates
            .iter()
            .filter(|(_, next, _)| *next == 0)
            .map(|(id, _, _)| *id)
            .collect();
        self.execute_in(tx, "UPDATE job SET running = 0 WHERE id IN ({in})", &ended, &[])
            .await?;
        Ok(())
    }

    /// Runs not yet sent (`trigger_code = 0`) of jobs in `partitions`: what a crash left behind.
    /// Runs an admin marked as being sent (`Store::mark_sending`) are not among them: they were
    /// possibly sent, and sending them again could run them twice; they are settled with their
    /// executor first (`Store::marked_runs`).
    pub async fn pending_runs(&self, partitions: &[i64]) -> StoreResult<Vec<RunTicket>> {
        if partitions.is_empty() {
            return Ok(Vec::new());
        }
        // A workflow node's run belongs to its job's partition and, while the node runs, to
        // its workflow's too: the admin that moved the instance on made it, and when that admin
        // dies, whoever takes the workflow over sends it even if the job's partition never
        // changed hands. Marking before a send (`mark_sending`) keeps two senders to one send.
        let list = partitions.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",");
        let q = format!(
            "SELECT {TICKET_COLUMNS_OF_R} FROM run r JOIN job j ON j.id = r.job_id \
             WHERE r.trigger_code = 0 AND r.handle_code = 0 AND r.send_token = 0 AND (j.partition_no IN ({list}) \
             OR r.id IN (SELECT n.run_id FROM workflow_node_run n \
             JOIN workflow_instance i ON i.id = n.instance_id JOIN workflow w ON w.id = i.workflow_id \
             WHERE n.state = 'running' AND w.partition_no IN ({list}))) ORDER BY r.scheduled_at"
        );
        let all = sqlx::query(&q).fetch_all(&self.read).await?;
        Ok(all
            .iter()
            .map(|r| ticket(r).map(|(t, _)| t))
            .collect::<Result<_, _>>()?)
    }

    /// Records missed fires that the misfire policy does not run.
    pub async fn mark_skipped(&self, run_ids: &[i64], msg: &str) -> StoreResult<()> {
        self.write_in(
            "UPDATE run SET trigger_code = ?, trigger_msg = ? WHERE trigger_code = 0 AND id IN ({in})",
            run_ids,
            &[Arg::Int(SKIPPED_CODE), Arg::Text(msg)],
        )
        .await?;
        Ok(())
    }
}
