//! Runs: claiming due fires, recording trigger results and callbacks, and the follow-ups
//! (retries, child jobs) that those results cause — each in one transaction.

use super::rows::{self, JOB_COLUMNS, RUN_COLUMNS};
use super::{placeholders, Backend, Store, StoreError, StoreResult};
use crate::model::{now_ms, Job, Run, RunFilter, RunStatus, SKIPPED_CODE};
use chime_protocol::TriggerType;
use sqlx::any::{Any, AnyRow};
use sqlx::Transaction;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Jobs kept in the claim loop's cache at most (a job is a few hundred bytes); the scheduler
/// clears the cache when it is full.
const JOB_CACHE_MAX: usize = 100_000;
/// Jobs whose script is longer than this are read again each round instead of cached.
const JOB_CACHE_GLUE_MAX: usize = 4096;

/// XXL-JOB keeps at most this many characters of a run's result message.
const HANDLE_MSG_MAX: usize = 15_000;

/// A run an executor accepted and has not reported on yet (see [`Store::unfinished_runs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnfinishedRun {
    /// Run id.
    pub id: i64,
    /// Its job.
    pub job_id: i64,
    /// Its group.
    pub group_id: i64,
    /// The executor it was sent to.
    pub address: String,
    /// When it was sent, epoch ms.
    pub triggered_at: i64,
    /// The job's executor timeout in seconds (0 = none, or the job is gone).
    pub timeout_secs: i64,
}

/// A run row to create.
#[derive(Debug, Clone)]
pub struct NewRun {
    /// Job.
    pub job_id: i64,
    /// Group at fire time.
    pub group_id: i64,
    /// `Some(scheduled_at)` for fires made by the schedule: `(job_id, fire_key)` is unique, so
    /// the same scheduled fire can never be claimed twice. `None` for manual, retry, child and
    /// extra-shard runs.
    pub fire_key: Option<i64>,
    /// When it should run, epoch ms.
    pub scheduled_at: i64,
    /// Why.
    pub trigger_type: TriggerType,
    /// Handler to send.
    pub handler: String,
    /// Parameter to send.
    pub param: String,
    /// Shard index.
    pub shard_index: i64,
    /// Shard total.
    pub shard_total: i64,
    /// Retries allowed after this run.
    pub retry_count: i64,
    /// Parent chain (job ids).
    pub lineage: String,
    /// 0 (pending) or [`SKIPPED_CODE`].
    pub trigger_code: i64,
    /// Message (why it was skipped).
    pub trigger_msg: String,
}

impl NewRun {
    /// A pending run of `job` with the job's handler, param and retries.
    pub fn of_job(job: &Job, trigger_type: TriggerType, scheduled_at: i64, fire_key: Option<i64>) -> NewRun {
        NewRun {
            job_id: job.id,
            group_id: job.group_id,
            fire_key,
            scheduled_at,
            trigger_type,
            handler: job.handler.clone(),
            param: job.param.clone(),
            shard_index: 0,
            shard_total: 1,
            retry_count: job.retry_count,
            lineage: String::new(),
            trigger_code: 0,
            trigger_msg: String::new(),
        }
    }
}

/// What the dispatcher needs from a run row.
#[derive(Debug, Clone, PartialEq)]
pub struct RunTicket {
    /// Run id (`logId`).
    pub id: i64,
    /// Job id.
    pub job_id: i64,
    /// When to send it, epoch ms.
    pub scheduled_at: i64,
    /// Why.
    pub trigger_type: TriggerType,
    /// Handler.
    pub handler: String,
    /// Parameter.
    pub param: String,
    /// Shard index.
    pub shard_index: i64,
    /// Shard total.
    pub shard_total: i64,
    /// Retries left.
    pub retry_count: i64,
    /// Parent chain.
    pub lineage: String,
}

const TICKET_COLUMNS: &str =
    "id, job_id, scheduled_at, trigger_type, handler, param, shard_index, shard_total, retry_count, lineage, trigger_code";

/// Reads [`TICKET_COLUMNS`] by position (see `rows::int` on MariaDB's `RETURNING`).
fn ticket(row: &AnyRow) -> Result<(RunTicket, i64), sqlx::Error> {
    let tt = rows::text(row, 3)?;
    Ok((
        RunTicket {
            id: rows::int(row, 0)?,
            job_id: rows::int(row, 1)?,
            scheduled_at: rows::int(row, 2)?,
            trigger_type: tt.parse().unwrap_or(TriggerType::Cron),
            handler: rows::text(row, 4)?,
            param: rows::text(row, 5)?,
            shard_index: rows::int(row, 6)?,
            shard_total: rows::int(row, 7)?,
            retry_count: rows::int(row, 8)?,
            lineage: rows::text(row, 9)?,
        },
        rows::int(row, 10)?,
    ))
}

/// The result of sending a run to an executor.
#[derive(Debug, Clone)]
pub struct TriggerOutcome {
    /// Run.
    pub run_id: i64,
    /// The run's job.
    pub job_id: i64,
    /// When it was sent, epoch ms.
    pub triggered_at: i64,
    /// Where (empty when routing found no address).
    pub address: String,
    /// 200 accepted, otherwise failed.
    pub code: i64,
    /// What happened.
    pub msg: String,
    /// Shard total used (broadcast fans out at send time).
    pub shard_total: i64,
    /// Trigger type as sent (a late pending run recovered after a crash becomes MISFIRE).
    pub trigger_type: TriggerType,
}

/// A run's result: from a callback, a kill, or the lost-run sweep.
#[derive(Debug, Clone)]
pub struct HandleOutcome {
    /// Run.
    pub run_id: i64,
    /// 200 success, otherwise failure.
    pub code: i64,
    /// Message.
    pub msg: Option<String>,
    /// Whether a failure may be retried (false for a run killed by a user).
    pub retry: bool,
}

/// What the scheduler decided for one due job.
#[derive(Debug, Clone)]
pub struct FirePlan {
    /// Run rows to claim (scheduled fires carry a `fire_key`).
    pub runs: Vec<NewRun>,
    /// The job's new `next_fire_at` (0 = never again).
    pub next_fire_at: i64,
    /// The job's new `last_fire_at`.
    pub last_fire_at: i64,
}

/// One claim round's result: what was claimed, per job.
#[derive(Debug, Default)]
pub struct Claimed {
    /// Jobs that had due fires, with the runs claimed for them (skipped misfires are not listed).
    pub jobs: Vec<(Arc<Job>, Vec<RunTicket>)>,
    /// True when the row limit was reached: call again right away.
    pub more: bool,
    /// Runs recorded as skipped misfires.
    pub skipped: usize,
}

fn truncate(mut s: String) -> String {
    if s.chars().count() > HANDLE_MSG_MAX {
        s = s.chars().take(HANDLE_MSG_MAX).collect();
    }
    s
}

/// Rows per multi-row `UPDATE` (at most 7 values each: well under every engine's limit on bound
/// parameters).
const UPDATE_ROWS: usize = 500;

impl Store {
    /// Inserts run rows in one statement per chunk; rows whose `(job_id, fire_key)` already
    /// exists are skipped. Returns the tickets of the rows actually inserted (pending only).
    async fn insert_runs_tx(&self, tx: &mut Transaction<'static, Any>, runs: &[NewRun]) -> StoreResult<Vec<RunTicket>> {
        let now = now_ms();
        let (prefix, suffix) = self.backend.insert_ignore();
        let mut out = Vec::with_capacity(runs.len());
        for chunk in runs.chunks(400) {
            let mut sql = format!(
                "{prefix} INTO run (job_id, group_id, fire_key, scheduled_at, trigger_type, handler, param, shard_index, \
                 shard_total, retry_count, lineage, trigger_code, trigger_msg, executor_address, handle_msg, created_at) VALUES "
            );
            for i in 0..chunk.len() {
                if i > 0 {
                    sql.push(',');
                }
                sql.push_str("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', '', ?)");
            }
            sql.push_str(suffix);
            sql.push_str(" RETURNING ");
            sql.push_str(TICKET_COLUMNS);
            let q = self.sql(&sql).into_owned();
            let mut query = sqlx::query(&q);
            for r in chunk {
                query = query
                    .bind(r.job_id)
                    .bind(r.group_id)
                    .bind(r.fire_key)
                    .bind(r.scheduled_at)
                    .bind(r.trigger_type.as_str())
                    .bind(&r.handler)
                    .bind(&r.param)
                    .bind(r.shard_index)
                    .bind(r.shard_total)
                    .bind(r.retry_count)
                    .bind(&r.lineage)
                    .bind(r.trigger_code)
                    .bind(&r.trigger_msg)
                    .bind(now);
            }
            for row in query.fetch_all(&mut **tx).await? {
                let (t, code) = ticket(&row)?;
                if code == 0 {
                    out.push(t);
                }
            }
        }
        Ok(out)
    }

    /// Inserts the runs of scheduled fires (every one has a `fire_key`) and returns the
    /// tickets of the pending ones actually inserted. Only `(id, job_id, fire_key)` comes back
    /// from the database; the rest of each ticket is already known. A fire claimed before
    /// (same `(job_id, fire_key)`) is skipped by the unique key and returns no row.
    async fn insert_fires_tx(
        &self,
        tx: &mut Transaction<'static, Any>,
        runs: &[NewRun],
    ) -> StoreResult<Vec<RunTicket>> {
        let now = now_ms();
        let (prefix, suffix) = self.backend.insert_ignore();
        let mut by_key: HashMap<(i64, i64), &NewRun> = HashMap::with_capacity(runs.len());
        for r in runs {
            if let Some(k) = r.fire_key {
                by_key.insert((r.job_id, k), r);
            }
        }
        let mut out = Vec::with_capacity(runs.len());
        // 1,000 rows × 14 values stays under every engine's bound-parameter limit (SQLite 32,766).
        for chunk in runs.chunks(1000) {
            let mut sql = format!(
                "{prefix} INTO run (job_id, group_id, fire_key, scheduled_at, trigger_type, handler, param, shard_index, \
                 shard_total, retry_count, lineage, trigger_code, trigger_msg, executor_address, handle_msg, created_at) VALUES "
            );
            sql.reserve(chunk.len() * 52);
            for i in 0..chunk.len() {
                if i > 0 {
                    sql.push(',');
                }
                sql.push_str("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', '', ?)");
            }
            sql.push_str(suffix);
            // SQLite: no RETURNING (see `inserted_ids_sqlite`).
            let returning = self.backend != Backend::Sqlite;
            if returning {
                sql.push_str(" RETURNING id, job_id, fire_key");
            }
            let q = self.sql(&sql).into_owned();
            let mut query = sqlx::query(&q);
            for r in chunk {
                query = query
                    .bind(r.job_id)
                    .bind(r.group_id)
                    .bind(r.fire_key)
                    .bind(r.scheduled_at)
                    .bind(r.trigger_type.as_str())
                    .bind(&r.handler)
                    .bind(&r.param)
                    .bind(r.shard_index)
                    .bind(r.shard_total)
                    .bind(r.retry_count)
                    .bind(&r.lineage)
                    .bind(r.trigger_code)
                    .bind(&r.trigger_msg)
                    .bind(now);
            }
            let inserted: Vec<(i64, i64, i64)> = if returning {
                let mut ids = Vec::with_capacity(chunk.len());
                for row in query.fetch_all(&mut **tx).await? {
                    // By position: MariaDB's RETURNING rows carry no column names through sqlx.
                    ids.push((rows::int(&row, 0)?, rows::int(&row, 1)?, rows::int(&row, 2)?));
                }
                ids
            } else {
                let before = sqlx::query("SELECT COALESCE(MAX(id), 0) FROM run")
                    .fetch_one(&mut **tx)
                    .await?;
                let before = rows::int(&before, 0)?;
                let done = query.execute(&mut **tx).await?;
                self.inserted_ids_sqlite(tx, chunk, before, done.rows_affected())
                    .await?
            };
            for (id, job_id, key) in inserted {
                let Some(r) = by_key.get(&(job_id, key)) else { continue };
                if r.trigger_code != 0 {
                    continue;
                }
                out.push(RunTicket {
                    id,
                    job_id,
                    scheduled_at: r.scheduled_at,
                    trigger_type: r.trigger_type,
                    handler: r.handler.clone(),
                    param: r.param.clone(),
                    shard_index: r.shard_index,
                    shard_total: r.shard_total,
                    retry_count: r.retry_count,
                    lineage: r.lineage.clone(),
                });
            }
        }
        Ok(out)
    }

    /// `(id, job_id, fire_key)` of the rows a multi-row `INSERT … ON CONFLICT DO NOTHING` of
    /// `chunk` just added on SQLite, given the largest id before it (`before`) and the
    /// statement's row count.
    ///
    /// Inside the write transaction this connection is SQLite's only writer, and `AUTOINCREMENT`
    /// gives each row a larger id than any before, in `VALUES` order. When no row was skipped,
    /// the ids are therefore `before + 1 ..= before + n`, `chunk` in order. Only when some were
    /// skipped (a fire claimed twice; a skipped row may still use up an id) are the new rows
    /// read back. `RETURNING` would send every row through the driver's channel one by one,
    /// which at twenty thousand fires a second was a measurable part of a claim.
    async fn inserted_ids_sqlite(
        &self,
        tx: &mut Transaction<'static, Any>,
        chunk: &[NewRun],
        before: i64,
        inserted: u64,
    ) -> StoreResult<Vec<(i64, i64, i64)>> {
        if inserted == 0 {
            return Ok(Vec::new());
        }
        if inserted as usize == chunk.len() {
            return Ok(chunk
                .iter()
                .zip(before + 1..)
                .map(|(r, id)| (id, r.job_id, r.fire_key.unwrap_or_default()))
                .collect());
        }
        let found = sqlx::query("SELECT id, job_id, fire_key FROM run WHERE id > ?")
            .bind(before)
            .fetch_all(&mut **tx)
            .await?;
        found
            .iter()
            .map(|row| Ok((rows::int(row, 0)?, rows::int(row, 1)?, rows::int(row, 2)?)))
            .collect()
    }

    /// Creates runs (manual triggers, broadcast shards) and returns their tickets.
    pub async fn insert_runs(&self, runs: &[NewRun]) -> StoreResult<Vec<RunTicket>> {
        let mut tx = self.write.begin().await?;
        let out = self.insert_runs_tx(&mut tx, runs).await?;
        tx.commit().await?;
        Ok(out)
    }

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
        let now = now_ms();
        let mut tx = self.write.begin().await?;
        let q = self.sql("SELECT partition_no FROM partition_lease WHERE owner = ? AND expires_at > ?");
        let held: Vec<i64> = sqlx::query(&q)
            .bind(owner)
            .bind(now)
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|r| rows::int(r, "partition_no"))
            .collect::<Result<Vec<i64>, _>>()?
            .into_iter()
            .filter(|p| ready.contains(p))
            .collect();
        if held.is_empty() {
            return Ok(Claimed::default());
        }
        let partition_filter = if held.len() as i64 == super::PARTITIONS {
            String::new()
        } else {
            format!(
                " AND partition_no IN ({})",
                held.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",")
            )
        };
        let q = self
            .sql(&format!(
                "SELECT id, updated_at, anchor_at, next_fire_at, last_fire_at FROM job \
                 WHERE running = 1 AND next_fire_at <= ?{partition_filter} ORDER BY next_fire_at LIMIT ?{}",
                self.backend.for_update()
            ))
            .into_owned();
        let due: Vec<[i64; 5]> = self
            .int_rows(
                &mut tx,
                &q,
                ["id", "updated_at", "anchor_at", "next_fire_at", "last_fire_at"],
                &[horizon, limit],
            )
            .await?;
        let more = due.len() as i64 == limit;
        if due.is_empty() {
            return Ok(Claimed::default());
        }
        let stale: Vec<i64> = due
            .iter()
            .filter(|[id, updated, anchor, _, _]| {
                cache
                    .get(id)
                    .is_none_or(|j| j.updated_at != *updated || j.anchor_at != *anchor)
            })
            .map(|d| d[0])
            .collect();
        let fresh = self.jobs_tx(&mut tx, &stale).await?;
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
        for [id, _, _, next, last] in &due {
            // A job deleted since the due query cannot be, the row is locked (or, on SQLite,
            // this is the only writer); skip defensively rather than fail the round.
            let Some(base) = uncached.get(id).or_else(|| cache.get(id)) else {
                continue;
            };
            let mut job = Job::clone(base);
            job.next_fire_at = *next;
            job.last_fire_at = *last;
            jobs.push(Arc::new(job));
        }
        let mut all_runs = Vec::new();
        let mut updates = Vec::with_capacity(jobs.len());
        for job in &jobs {
            let p = plan(job);
            updates.push((job.id, p.next_fire_at, p.last_fire_at));
            all_runs.extend(p.runs);
        }
        let skipped = all_runs.iter().filter(|r| r.trigger_code == SKIPPED_CODE).count();
        let tickets = self.insert_fires_tx(&mut tx, &all_runs).await?;
        for chunk in updates.chunks(UPDATE_ROWS) {
            let q = self
                .backend
                .update_by_id("job", &["next_fire_at", "last_fire_at"], chunk.len(), "");
            let mut query = sqlx::query(&q);
            for (id, next, last) in chunk {
                query = query.bind(*id).bind(*next).bind(*last);
            }
            query.execute(&mut *tx).await?;
        }
        // A schedule that never fires again stops its job, as XXL-JOB does.
        let ended: Vec<i64> = updates
            .iter()
            .filter(|(_, next, _)| *next == 0)
            .map(|(id, _, _)| *id)
            .collect();
        if !ended.is_empty() {
            let q = self
                .sql(&format!(
                    "UPDATE job SET running = 0 WHERE id IN ({})",
                    placeholders(ended.len())
                ))
                .into_owned();
            let mut query = sqlx::query(&q);
            for id in &ended {
                query = query.bind(*id);
            }
            query.execute(&mut *tx).await?;
        }
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

    /// Runs not yet sent (`trigger_code = 0`) of jobs in `partitions`: what a crash left behind.
    pub async fn pending_runs(&self, partitions: &[i64]) -> StoreResult<Vec<RunTicket>> {
        if partitions.is_empty() {
            return Ok(Vec::new());
        }
        let q = format!(
            "SELECT r.id AS id, r.job_id AS job_id, r.scheduled_at AS scheduled_at, r.trigger_type AS trigger_type, \
             r.handler AS handler, r.param AS param, r.shard_index AS shard_index, r.shard_total AS shard_total, \
             r.retry_count AS retry_count, r.lineage AS lineage, r.trigger_code AS trigger_code \
             FROM run r JOIN job j ON j.id = r.job_id \
             WHERE r.trigger_code = 0 AND r.handle_code = 0 AND j.partition_no IN ({}) ORDER BY r.scheduled_at",
            partitions.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",")
        );
        let all = sqlx::query(&q).fetch_all(&self.read).await?;
        Ok(all
            .iter()
            .map(|r| ticket(r).map(|(t, _)| t))
            .collect::<Result<_, _>>()?)
    }

    /// Records missed fires that the misfire policy does not run.
    pub async fn mark_skipped(&self, run_ids: &[i64], msg: &str) -> StoreResult<()> {
        for chunk in run_ids.chunks(500) {
            let q = self
                .sql(&format!(
                    "UPDATE run SET trigger_code = ?, trigger_msg = ? WHERE trigger_code = 0 AND id IN ({})",
                    placeholders(chunk.len())
                ))
                .into_owned();
            let mut query = sqlx::query(&q).bind(SKIPPED_CODE).bind(msg);
            for id in chunk {
                query = query.bind(*id);
            }
            query.execute(&self.write).await?;
        }
        Ok(())
    }

    /// Records trigger results and run results in one transaction, and creates the runs they
    /// cause: a retry for a failure while retries remain (same shard, one retry fewer), child
    /// jobs for a success. A result for a run that already has one changes nothing (the update
    /// is guarded by `handle_code = 0`), and follow-ups are guarded by `alarm_status`, so a
    /// repeated callback never retries or fires children twice.
    pub async fn record_outcomes(
        &self,
        triggers: &[TriggerOutcome],
        handles: &[HandleOutcome],
    ) -> StoreResult<Vec<RunTicket>> {
        if triggers.is_empty() && handles.is_empty() {
            return Ok(Vec::new());
        }
        let now = now_ms();
        let mut tx = self.write.begin().await?;
        // A run sent and already reported on when the writer gets to it, successfully, by a job
        // without children, needs nothing read and nothing followed up: its trigger result and
        // its result go into the row in one write. The busier the writer, the longer results
        // wait for it and the more runs take this way.
        let (merged, triggers, handles) = self.merge_simple_successes(&mut tx, triggers, handles).await?;
        for chunk in merged.chunks(UPDATE_ROWS) {
            let q = self.backend.update_by_id(
                "run",
                &[TRIGGER_RESULT_COLUMNS, &["handled_at", "handle_code", "handle_msg"]].concat(),
                chunk.len(),
                "run.handle_code = 0",
            );
            let mut query = sqlx::query(&q);
            for (t, h) in chunk {
                query = bind_trigger_result(query, t)
                    .bind(now)
                    .bind(h.code)
                    .bind(truncate(h.msg.clone().unwrap_or_default()));
            }
            let done = query.execute(&mut *tx).await?;
            if done.rows_affected() < chunk.len() as u64 {
                // Some run had a result already (a kill recorded first): the guard skipped its
                // whole row, but the trigger result must still be written. Writing the chunk's
                // trigger results again is the same values for the others.
                let only: Vec<&TriggerOutcome> = chunk.iter().map(|(t, _)| *t).collect();
                self.write_trigger_results(&mut tx, &only).await?;
            }
        }
        self.write_trigger_results(&mut tx, &triggers).await?;
        // What recording a result needs of each run (job, current result), for every run with
        // a result in this batch. Most are successes of jobs without children, which need
        // nothing more; full rows are read below only for the others.
        let mut handle_ids: Vec<i64> = handles.iter().map(|h| h.run_id).collect();
        handle_ids.sort_unstable();
        handle_ids.dedup();
        // (No `handle_msg`: a run's message is written only together with its result, so a run
        // still without one has none to append to. The exception is a callback reporting code 0,
        // which no XXL-JOB executor sends: the next result replaces its message.)
        let mut brief: HashMap<i64, (i64, i64)> = HashMap::with_capacity(handle_ids.len());
        for chunk in handle_ids.chunks(500) {
            let q = self
                .sql(&format!(
                    "SELECT id, job_id, handle_code FROM run WHERE id IN ({}){}",
                    placeholders(chunk.len()),
                    self.backend.for_update()
                ))
                .into_owned();
            for [id, job_id, handle_code] in self
                .int_rows(&mut tx, &q, ["id", "job_id", "handle_code"], chunk)
                .await?
            {
                brief.insert(id, (job_id, handle_code));
            }
        }
        // Children of jobs whose runs succeeded now.
        let success_jobs: HashSet<i64> = handles
            .iter()
            .filter(|h| h.code == 200)
            .filter_map(|h| brief.get(&h.run_id))
            .map(|b| b.0)
            .collect();
        // Only jobs that have children matter here; reading just those keeps the common case
        // (no children) to one cheap query.
        let parents: HashMap<i64, Job> = self
            .jobs_with_children_tx(&mut tx, &success_jobs.into_iter().collect::<Vec<_>>())
            .await?;
        let child_ids: Vec<i64> = parents.values().flat_map(|j| j.child_job_ids.iter().copied()).collect();
        let children: HashMap<i64, Job> = self.jobs_tx(&mut tx, &child_ids).await?;
        // Full rows: failed sends and failed runs (retries), successes with children.
        let mut ids: Vec<i64> = triggers.iter().filter(|t| t.code != 200).map(|t| t.run_id).collect();
        ids.extend(handles.iter().filter_map(|h| {
            let job_id = brief.get(&h.run_id)?.0;
            (h.code != 200 || parents.contains_key(&job_id)).then_some(h.run_id)
        }));
        ids.sort_unstable();
        ids.dedup();
        let mut runs: HashMap<i64, Run> = HashMap::new();
        for chunk in ids.chunks(500) {
            let q = self
                .sql(&format!(
                    "SELECT {} FROM run WHERE id IN ({}){}",
                    // The trigger report is long and not needed to record a result.
                    RUN_COLUMNS.replace("trigger_msg", "'' AS trigger_msg"),
                    placeholders(chunk.len()),
                    self.backend.for_update()
                ))
                .into_owned();
            let mut query = sqlx::query(&q);
            for id in chunk {
                query = query.bind(*id);
            }
            for r in query.fetch_all(&mut *tx).await? {
                let run = rows::run(&r)?;
                runs.insert(run.id, run);
            }
        }
        let mut failed: Vec<i64> = triggers
            .iter()
            .filter(|t| t.code != 200 && runs.contains_key(&t.run_id))
            .map(|t| t.run_id)
            .collect();
        let mut succeeded: Vec<i64> = Vec::new();
        let mut follow_ups: Vec<NewRun> = Vec::new();
        let mut child_plans: HashMap<i64, Vec<NewRun>> = HashMap::new();
        let q =
            self.sql("UPDATE run SET handled_at = ?, handle_code = ?, handle_msg = ? WHERE id = ? AND handle_code = 0");
        let mut seen = HashSet::new();
        // Successes without children need no follow-up: written together, several per statement.
        let mut simple: Vec<(i64, i64, String)> = Vec::new();
        for h in handles {
            let Some((job_id, handle_code)) = brief.get(&h.run_id) else {
                continue;
            };
            if *handle_code != 0 || !seen.insert(h.run_id) {
                continue;
            }
            let mut msg = h.msg.clone().unwrap_or_default();
            let has_children = parents.get(job_id).is_some_and(|p| !p.child_job_ids.is_empty());
            if h.code == 200 && !has_children {
                simple.push((h.run_id, h.code, truncate(msg)));
                continue;
            }
            let Some(run) = runs.get(&h.run_id) else { continue };
            if h.code == 200 {
                if let Some(parent) = parents.get(job_id) {
                    let (lines, plans) = child_runs(run, parent, &children);
                    if !msg.is_empty() {
                        msg.push_str("<br>");
                    }
                    msg.push_str(&lines);
                    child_plans.insert(run.id, plans);
                }
            }
            let done = sqlx::query(&q)
                .bind(now)
                .bind(h.code)
                .bind(truncate(msg))
                .bind(h.run_id)
                .execute(&mut *tx)
                .await?;
            if done.rows_affected() == 1 {
                if h.code == 200 {
                    succeeded.push(h.run_id);
                } else if h.retry {
                    failed.push(h.run_id);
                }
            }
        }
        for chunk in simple.chunks(UPDATE_ROWS) {
            let q = self.backend.update_by_id(
                "run",
                &["handled_at", "handle_code", "handle_msg"],
                chunk.len(),
                "run.handle_code = 0",
            );
            let mut query = sqlx::query(&q);
            for (id, code, msg) in chunk {
                query = query.bind(*id).bind(now).bind(*code).bind(msg);
            }
            query.execute(&mut *tx).await?;
        }
        // Follow-ups, at most once per run.
        let guard = self.sql("UPDATE run SET alarm_status = 1 WHERE id = ? AND alarm_status = 0");
        for id in failed {
            let run = &runs[&id];
            if run.retry_count <= 0 {
                continue;
            }
            if sqlx::query(&guard).bind(id).execute(&mut *tx).await?.rows_affected() == 1 {
                follow_ups.push(NewRun {
                    job_id: run.job_id,
                    group_id: run.group_id,
                    fire_key: None,
                    scheduled_at: now,
                    trigger_type: TriggerType::Retry,
                    handler: run.handler.clone(),
                    param: run.param.clone(),
                    shard_index: run.shard_index,
                    shard_total: run.shard_total,
                    retry_count: run.retry_count - 1,
                    lineage: run.lineage.clone(),
                    trigger_code: 0,
                    trigger_msg: String::new(),
                });
            }
        }
        for id in succeeded {
            let Some(plans) = child_plans.remove(&id) else { continue };
            if plans.is_empty() {
                continue;
            }
            if sqlx::query(&guard).bind(id).execute(&mut *tx).await?.rows_affected() == 1 {
                follow_ups.extend(plans);
            }
        }
        let tickets = self.insert_runs_tx(&mut tx, &follow_ups).await?;
        tx.commit().await?;
        Ok(tickets)
    }

    /// Runs `sql`, a query of the integer columns `cols` (in that order) with integer `binds`,
    /// and returns its rows.
    ///
    /// On SQLite the rows come back packed into one text value (`group_concat`) and are split
    /// here: the driver hands each result row from its worker thread to the async side on its
    /// own, which for the twenty thousand rows of a busy claim cost more than the query itself
    /// (65 ms against 25 ms per round).
    async fn int_rows<const N: usize>(
        &self,
        conn: &mut sqlx::AnyConnection,
        sql: &str,
        cols: [&str; N],
        binds: &[i64],
    ) -> StoreResult<Vec<[i64; N]>> {
        if self.backend != Backend::Sqlite {
            let mut query = sqlx::query(sql);
            for b in binds {
                query = query.bind(*b);
            }
            let mut out = Vec::new();
            for r in query.fetch_all(&mut *conn).await? {
                let mut row = [0i64; N];
                for (i, v) in row.iter_mut().enumerate() {
                    *v = rows::int(&r, i)?;
                }
                out.push(row);
            }
            return Ok(out);
        }
        let packed = format!(
            "SELECT group_concat({}, ';') FROM ({sql})",
            cols.map(|c| format!("IFNULL({c}, 0)")).join(" || ',' || ")
        );
        let mut query = sqlx::query(&packed);
        for b in binds {
            query = query.bind(*b);
        }
        let row = query.fetch_one(&mut *conn).await?;
        let text = rows::text(&row, 0)?;
        unpack_int_rows(&text).map_err(|e| StoreError::from(sqlx::Error::Protocol(e)))
    }

    /// Writes trigger results, one multi-row UPDATE per chunk: per-row statements made the
    /// writer the bottleneck at ten thousand fires per second.
    async fn write_trigger_results(
        &self,
        tx: &mut Transaction<'static, Any>,
        triggers: &[&TriggerOutcome],
    ) -> StoreResult<()> {
        for chunk in triggers.chunks(UPDATE_ROWS) {
            let q = self
                .backend
                .update_by_id("run", TRIGGER_RESULT_COLUMNS, chunk.len(), "");
            let mut query = sqlx::query(&q);
            for t in chunk {
                query = bind_trigger_result(query, t);
            }
            query.execute(&mut **tx).await?;
        }
        Ok(())
    }

    /// Splits a batch into the runs whose trigger result (code 200) and successful result
    /// are both in it, for jobs without children, and the outcomes left. A run reported on
    /// twice in the batch stays with the rest, which records only the first result.
    async fn merge_simple_successes<'a>(
        &self,
        tx: &mut Transaction<'static, Any>,
        triggers: &'a [TriggerOutcome],
        handles: &'a [HandleOutcome],
    ) -> StoreResult<(
        Vec<(&'a TriggerOutcome, &'a HandleOutcome)>,
        Vec<&'a TriggerOutcome>,
        Vec<&'a HandleOutcome>,
    )> {
        let sent: HashMap<i64, &TriggerOutcome> = triggers
            .iter()
            .filter(|t| t.code == 200)
            .map(|t| (t.run_id, t))
            .collect();
        let mut reports: HashMap<i64, usize> = HashMap::new();
        for h in handles {
            *reports.entry(h.run_id).or_default() += 1;
        }
        let candidates: Vec<(&TriggerOutcome, &HandleOutcome)> = handles
            .iter()
            .filter(|h| h.code == 200 && reports[&h.run_id] == 1)
            .filter_map(|h| sent.get(&h.run_id).map(|t| (*t, h)))
            .collect();
        if candidates.is_empty() {
            return Ok((Vec::new(), triggers.iter().collect(), handles.iter().collect()));
        }
        let job_ids: Vec<i64> = candidates
            .iter()
            .map(|(t, _)| t.job_id)
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        let parents = self.jobs_with_children_tx(tx, &job_ids).await?;
        let merged: Vec<(&TriggerOutcome, &HandleOutcome)> = candidates
            .into_iter()
            .filter(|(t, _)| !parents.contains_key(&t.job_id))
            .collect();
        let taken: HashSet<i64> = merged.iter().map(|(t, _)| t.run_id).collect();
        let triggers = triggers.iter().filter(|t| !taken.contains(&t.run_id)).collect();
        let handles = handles.iter().filter(|h| !taken.contains(&h.run_id)).collect();
        Ok((merged, triggers, handles))
    }

    async fn jobs_with_children_tx(
        &self,
        tx: &mut Transaction<'static, Any>,
        ids: &[i64],
    ) -> StoreResult<HashMap<i64, Job>> {
        let mut with_children = Vec::new();
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        for chunk in ids.chunks(500) {
            let q = self
                .sql(&format!(
                    "SELECT id FROM job WHERE child_job_ids <> '' AND id IN ({})",
                    placeholders(chunk.len())
                ))
                .into_owned();
            let mut query = sqlx::query(&q);
            for id in chunk {
                query = query.bind(*id);
            }
            for r in query.fetch_all(&mut **tx).await? {
                with_children.push(rows::int(&r, "id")?);
            }
        }
        self.jobs_tx(tx, &with_children).await
    }

    async fn jobs_tx(&self, tx: &mut Transaction<'static, Any>, ids: &[i64]) -> StoreResult<HashMap<i64, Job>> {
        let mut out = HashMap::new();
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        for chunk in ids.chunks(500) {
            let q = self
                .sql(&format!(
                    "SELECT {JOB_COLUMNS} FROM job WHERE id IN ({})",
                    placeholders(chunk.len())
                ))
                .into_owned();
            let mut query = sqlx::query(&q);
            for id in chunk {
                query = query.bind(*id);
            }
            for r in query.fetch_all(&mut **tx).await? {
                let j = rows::job(&r)?;
                out.insert(j.id, j);
            }
        }
        Ok(out)
    }

    /// One run.
    pub async fn run(&self, id: i64) -> StoreResult<Run> {
        let q = self
            .sql(&format!("SELECT {RUN_COLUMNS} FROM run WHERE id = ?"))
            .into_owned();
        match sqlx::query(&q).bind(id).fetch_optional(&self.read).await? {
            Some(r) => Ok(rows::run(&r)?),
            None => Err(StoreError::NotFound(format!("run {id}"))),
        }
    }

    /// Runs matching `f`, newest (highest id) first. The time range is on `scheduled_at`, which
    /// every run has (`triggered_at` is 0 until a run is sent). The group scope is applied here,
    /// not after the query, so `limit` and `before_id` count only rows the caller may see.
    pub async fn list_runs(&self, f: &RunFilter) -> StoreResult<Vec<Run>> {
        let mut sql = format!("SELECT {RUN_COLUMNS} FROM run WHERE 1 = 1");
        if f.job_id.is_some() {
            sql.push_str(" AND job_id = ?");
        }
        if f.group_id.is_some() {
            sql.push_str(" AND group_id = ?");
        }
        if let Some(ids) = &f.group_ids {
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            sql.push_str(&format!(" AND group_id IN ({})", placeholders(ids.len())));
        }
        if f.from.is_some() {
            sql.push_str(" AND scheduled_at >= ?");
        }
        if f.to.is_some() {
            sql.push_str(" AND scheduled_at < ?");
        }
        if f.before_id.is_some() {
            sql.push_str(" AND id < ?");
        }
        if let Some(s) = f.status {
            sql.push_str(match s {
                RunStatus::Pending => " AND trigger_code = 0 AND handle_code = 0",
                RunStatus::Running => " AND trigger_code = 200 AND handle_code = 0",
                RunStatus::Success => " AND handle_code = 200",
                RunStatus::Failed => {
                    " AND handle_code <> 200 AND (handle_code <> 0 OR trigger_code NOT IN (0, 200, -1))"
                }
                RunStatus::Skipped => " AND trigger_code = -1 AND handle_code <> 200",
            });
        }
        sql.push_str(" ORDER BY id DESC LIMIT ?");
        let q = self.sql(&sql).into_owned();
        let mut query = sqlx::query(&q);
        for v in [f.job_id, f.group_id].into_iter().flatten() {
            query = query.bind(v);
        }
        for id in f.group_ids.iter().flatten() {
            query = query.bind(*id);
        }
        for v in [f.from, f.to, f.before_id].into_iter().flatten() {
            query = query.bind(v);
        }
        let all = query.bind(f.limit).fetch_all(&self.read).await?;
        Ok(all.iter().map(rows::run).collect::<Result<_, _>>()?)
    }

    /// Runs accepted by an executor before `triggered_before` that still have no result, with
    /// an id above `after_id`, oldest first, at most `limit`: one page of candidates for the
    /// lost-run sweep, which pages through all of them by id.
    pub async fn unfinished_runs(
        &self,
        triggered_before: i64,
        after_id: i64,
        limit: i64,
    ) -> StoreResult<Vec<UnfinishedRun>> {
        let q = self.sql(
            "SELECT r.id, r.job_id, r.group_id, r.executor_address, r.triggered_at, \
             j.timeout_secs FROM run r LEFT JOIN job j ON j.id = r.job_id \
             WHERE r.trigger_code = 200 AND r.handle_code = 0 AND r.triggered_at < ? AND r.id > ? \
             ORDER BY r.id LIMIT ?",
        );
        let all = sqlx::query(&q)
            .bind(triggered_before)
            .bind(after_id)
            .bind(limit)
            .fetch_all(&self.read)
            .await?;
        all.iter()
            .map(|r| {
                Ok(UnfinishedRun {
                    id: rows::int(r, "id")?,
                    job_id: rows::int(r, "job_id")?,
                    group_id: rows::int(r, "group_id")?,
                    address: rows::text(r, "executor_address")?,
                    triggered_at: rows::int(r, "triggered_at")?,
                    timeout_secs: rows::int(r, "timeout_secs")?,
                })
            })
            .collect()
    }

    /// Counts runs by state (for `/metrics`): `(pending, running)`.
    pub async fn count_open_runs(&self) -> StoreResult<(i64, i64)> {
        let p = sqlx::query("SELECT COUNT(*) AS n FROM run WHERE trigger_code = 0 AND handle_code = 0")
            .fetch_one(&self.read)
            .await?;
        let r = sqlx::query("SELECT COUNT(*) AS n FROM run WHERE trigger_code = 200 AND handle_code = 0")
            .fetch_one(&self.read)
            .await?;
        Ok((rows::int(&p, "n")?, rows::int(&r, "n")?))
    }
}

/// The columns a trigger result sets, in the order `bind_trigger_result` binds them (after the
/// run id that `update_by_id` keys on).
const TRIGGER_RESULT_COLUMNS: &[&str] = &[
    "triggered_at",
    "executor_address",
    "trigger_code",
    "trigger_msg",
    "shard_total",
    "trigger_type",
];

/// Binds one run's id and trigger result for an `update_by_id` over `TRIGGER_RESULT_COLUMNS`.
fn bind_trigger_result<'q>(
    query: sqlx::query::Query<'q, Any, sqlx::any::AnyArguments<'q>>,
    t: &'q TriggerOutcome,
) -> sqlx::query::Query<'q, Any, sqlx::any::AnyArguments<'q>> {
    query
        .bind(t.run_id)
        .bind(t.triggered_at)
        .bind(&t.address)
        .bind(t.code)
        .bind(&t.msg)
        .bind(t.shard_total)
        .bind(t.trigger_type.as_str())
}

/// Splits `group_concat` output of `N` integer columns (`1,2,3;4,5,6`) into rows.
fn unpack_int_rows<const N: usize>(text: &str) -> Result<Vec<[i64; N]>, String> {
    text.split(';')
        .filter(|r| !r.is_empty())
        .map(|r| {
            let mut row = [0i64; N];
            let mut fields = r.split(',');
            for v in row.iter_mut() {
                let f = fields
                    .next()
                    .ok_or_else(|| format!("packed row {r:?} has fewer than {N} values"))?;
                *v = f.parse().map_err(|e| format!("packed row {r:?}: {e}"))?;
            }
            if fields.next().is_some() {
                return Err(format!("packed row {r:?} has more than {N} values"));
            }
            Ok(row)
        })
        .collect()
}

/// The child runs a successful run of `parent` causes, and the lines XXL-JOB appends to the
/// parent's result message. A child already in the parent chain is not fired (cycle guard at
/// fire time; cycles are also refused when jobs are saved).
fn child_runs(run: &Run, parent: &Job, children: &HashMap<i64, Job>) -> (String, Vec<NewRun>) {
    let lineage_ids: HashSet<i64> = rows::id_list(&run.lineage).into_iter().chain([run.job_id]).collect();
    let lineage = if run.lineage.is_empty() {
        run.job_id.to_string()
    } else {
        format!("{},{}", run.lineage, run.job_id)
    };
    let total = parent.child_job_ids.len();
    let mut lines = String::from(">>>>>>>>>>>Trigger child job<<<<<<<<<<<<br>");
    let mut plans = Vec::new();
    for (i, cid) in parent.child_job_ids.iter().enumerate() {
        let n = i + 1;
        match children.get(cid) {
            Some(_) if lineage_ids.contains(cid) || lineage.len() > 240 => {
                lines.push_str(&format!(
                    "{n}/{total} [Job ID={cid}], Trigger Fail, Trigger msg: child job cycle <br>"
                ));
            }
            Some(child) => {
                let mut nr = NewRun::of_job(child, TriggerType::Parent, now_ms(), None);
                nr.lineage = lineage.clone();
                plans.push(nr);
                lines.push_str(&format!(
                    "{n}/{total} [Job ID={cid}], Trigger success, Trigger msg: null <br>"
                ));
            }
            None => {
                lines.push_str(&format!(
                    "{n}/{total} [Job ID={cid}], Trigger Fail, Trigger msg: Job ID is illegal <br>"
                ));
            }
        }
    }
    (lines, plans)
}

#[cfg(test)]
mod tests {
    #[test]
    fn packed_rows_unpack() {
        assert_eq!(super::unpack_int_rows::<3>("").unwrap(), Vec::<[i64; 3]>::new());
        assert_eq!(
            super::unpack_int_rows::<3>("1,2,3;-4,5,0").unwrap(),
            vec![[1, 2, 3], [-4, 5, 0]]
        );
        assert!(super::unpack_int_rows::<3>("1,2").is_err());
        assert!(super::unpack_int_rows::<3>("1,2,3,4").is_err());
        assert!(super::unpack_int_rows::<3>("1,x,3").is_err());
    }
}
