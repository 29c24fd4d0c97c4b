//! Slots of limits and the queue of runs waiting for one (`concurrency_slot`, `run_queue`).
//!
//! A run about to be sent takes a slot of each limit that applies to it, in one transaction
//! that locks those limits' rows and counts their slots ([`Store::take_slots`]); a limit that
//! is full puts the run in the queue instead, still pending. A slot belongs to its run: it is
//! given back once the run has ended, by whichever admin sweeps first
//! ([`Store::release_slots`]), so an admin killed between taking a slot and sending leaks
//! nothing — its run is pending, is sent by the admin that recovers it, and keeps its slot.

use super::{ticket, TICKET_COLUMNS_OF_R};
use crate::run::RunTicket;
use crate::store::bulk::Arg;
use crate::store::limits::StoredLimit;
use crate::store::{rows, Store, StoreResult};

/// How long a run may stay taken out of the queue (admitted) without being sent or queued
/// again before another round may admit it: the admitting admin died in between.
pub const ADMITTED_EXPIRY_MS: i64 = 60_000;

/// What [`Store::take_slots`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slots {
    /// The run holds a slot of every limit given: it may be sent.
    Taken,
    /// Limit `name` had no room (`why`): the run waits in the queue.
    Queued {
        /// The limit.
        name: String,
        /// What it lacked: `3 of 3 running`, `10 per second started`.
        why: String,
    },
}

/// A run waiting in the queue, as the queue's rounds read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedRun {
    /// The run.
    pub run_id: i64,
    /// Its job.
    pub job_id: i64,
    /// The limit it found full.
    pub waits_on: String,
    /// Its priority when it was queued: its job's, or its workflow node's own.
    pub priority: i64,
    /// When it was first queued, epoch ms.
    pub queued_at: i64,
    /// An operator sent it on regardless of its limits.
    pub skip_queue: bool,
    /// The run's scheduled time, epoch ms.
    pub scheduled_at: i64,
    /// How it was triggered (`CRON`, `API`, …).
    pub trigger_type: String,
    /// Its shard count.
    pub shard_total: i64,
    /// Its job's misfire strategy.
    pub misfire_strategy: String,
    /// Its job's scheduling partition: the admin holding it sends the run.
    pub partition: i64,
}

/// A queued run as the queue's API lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueEntry {
    /// The run, its job and its job's group.
    pub run: QueuedRun,
    /// The job's group.
    pub group_id: i64,
    /// The job's description.
    pub description: String,
    /// Taken out of the queue to be sent, epoch ms (0: waiting).
    pub admitted_at: i64,
}

/// The columns [`queued_run`] reads, of `run_queue q JOIN job j JOIN run r`.
const QUEUED_COLUMNS: &str = "q.run_id AS run_id, q.job_id AS job_id, q.waits_on AS waits_on, q.priority AS priority, \
     q.queued_at AS queued_at, q.skip_queue AS skip_queue, r.scheduled_at AS scheduled_at, \
     r.trigger_type AS trigger_type, r.shard_total AS shard_total, j.misfire_strategy AS misfire_strategy, \
     j.partition_no AS partition_no";

/// The queue's order: runs sent on by an operator first, then by priority, a run gaining one
/// point for each minute it has waited, then the oldest. The rounds and the listing share it,
/// so the listing shows the order runs leave in.
const QUEUE_ORDER: &str = "q.skip_queue DESC, q.priority * 60000 - q.queued_at DESC, q.run_id";

/// The tables [`QUEUED_COLUMNS`] come from.
const QUEUED_FROM: &str = "run_queue q JOIN job j ON j.id = q.job_id JOIN run r ON r.id = q.run_id";

/// How a limit's slots stand for one run.
enum SlotCount {
    /// The run holds one already (taken before a crash, or before a send that did not go out).
    Held,
    /// It holds none: `running` runs hold one, `waiting` runs wait in the queue for one.
    Free { running: i64, waiting: i64 },
}

/// Why a run must wait for `limit` (`None`: it may take a slot now). `queued`: it waited in
/// the queue before.
fn why_wait(limit: &StoredLimit, running: i64, waiting: i64, queued: bool, now: i64) -> Option<String> {
    let max = limit.rule.max_running;
    if max > 0 && running >= max {
        Some(format!("{running} of {max} running"))
    } else if limit.rate_room(now) <= 0 {
        Some(format!("{} per {} started", limit.rule.rate_max, limit.rule.per()))
    } else if waiting > 0 && !queued {
        // A slot freed while runs wait is theirs, in the queue's order: a run new to the
        // limit goes behind them rather than taking it before the queue's round.
        Some(format!("{waiting} waiting before it"))
    } else {
        None
    }
}

fn queued_run(row: &sqlx::any::AnyRow) -> Result<QueuedRun, sqlx::Error> {
    Ok(QueuedRun {
        run_id: rows::int(row, "run_id")?,
        job_id: rows::int(row, "job_id")?,
        waits_on: rows::text(row, "waits_on")?,
        priority: rows::int(row, "priority")?,
        queued_at: rows::int(row, "queued_at")?,
        skip_queue: rows::int(row, "skip_queue")? != 0,
        scheduled_at: rows::int(row, "scheduled_at")?,
        trigger_type: rows::text(row, "trigger_type")?,
        shard_total: rows::int(row, "shard_total")?,
        misfire_strategy: rows::text(row, "misfire_strategy")?,
        partition: rows::int(row, "partition_no")?,
    })
}

/// A [`QUEUED_COLUMNS`] row with the job's group and description and the run's admission.
fn queue_entry(row: &sqlx::any::AnyRow) -> Result<QueueEntry, sqlx::Error> {
    Ok(QueueEntry {
        run: queued_run(row)?,
        group_id: rows::int(row, "group_id")?,
        description: rows::text(row, "description")?,
        admitted_at: rows::int(row, "admitted_at")?,
    })
}

impl Store {
    /// Takes a slot of each limit in `names` for run `run_id` of job `job_id` (priority
    /// `priority`), or queues the run when one of them is full — or, for a run not queued
    /// before, when runs already wait on one of them (a freed slot is theirs, in the queue's
    /// order, not the first newcomer's). A slot the run holds already
    /// (taken before a crash, or before a send that did not go out) counts as taken; a name
    /// with no limit (deleted meanwhile) is passed; a run an operator sent on (`skip_queue`)
    /// takes its slots whatever the counts.
    pub async fn take_slots(
        &self,
        run_id: i64,
        job_id: i64,
        priority: i64,
        names: &[&str],
        now: i64,
    ) -> StoreResult<Slots> {
        let mut tx = self.write.begin().await?;
        let lock = self.backend.for_update();
        let q = self.sql_text(format!("SELECT skip_queue FROM run_queue WHERE run_id = ?{lock}"));
        let queued = sqlx::query(&q).bind(run_id).fetch_optional(&mut *tx).await?;
        let skip = match &queued {
            Some(row) => rows::int(row, "skip_queue")? != 0,
            None => false,
        };
        let limits = self.lock_limits(&mut tx, names).await?;
        let mut to_take = Vec::new();
        for limit in &limits {
            let wait = match self.slot_count(&mut tx, run_id, &limit.name).await? {
                SlotCount::Held => continue,
                SlotCount::Free { running, waiting } => why_wait(limit, running, waiting, queued.is_some(), now),
            };
            if let Some(why) = wait.filter(|_| !skip) {
                self.queue_run(&mut tx, run_id, job_id, priority, &limit.name, queued.is_some(), now)
                    .await?;
                tx.commit().await?;
                return Ok(Slots::Queued {
                    name: limit.name.clone(),
                    why,
                });
            }
            to_take.push(limit);
        }
        self.hold_slots(&mut tx, run_id, &to_take, now).await?;
        if queued.is_some() {
            let q = self.sql("DELETE FROM run_queue WHERE run_id = ?");
            sqlx::query(&q).bind(run_id).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(Slots::Taken)
    }

    /// The rows of the limits `names`, locked in the order of their names (two takers of the
    /// same two limits cannot wait on each other), so their slots are counted one taker at a
    /// time. A name with no limit has no row.
    async fn lock_limits(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        names: &[&str],
    ) -> StoreResult<Vec<StoredLimit>> {
        let mut names: Vec<&str> = names.to_vec();
        names.sort_unstable();
        names.dedup();
        let q = self.locked_limits_sql(names.len());
        let mut query = sqlx::query(&q);
        for n in &names {
            query = query.bind(*n);
        }
        let mut limits = Vec::new();
        for row in query.fetch_all(&mut **tx).await? {
            limits.push(crate::store::limits::limit_row(&row)?);
        }
        Ok(limits)
    }

    /// How the slots of limit `name` stand for run `run_id`.
    async fn slot_count(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        run_id: i64,
        name: &str,
    ) -> StoreResult<SlotCount> {
        let q = self.sql(
            "SELECT COUNT(*) AS n, COUNT(CASE WHEN run_id = ? THEN 1 END) AS mine, \
             (SELECT COUNT(*) FROM run_queue WHERE waits_on = ?) AS waiting \
             FROM concurrency_slot WHERE name = ?",
        );
        let row = sqlx::query(&q)
            .bind(run_id)
            .bind(name)
            .bind(name)
            .fetch_one(&mut **tx)
            .await?;
        if rows::int(&row, "mine")? > 0 {
            return Ok(SlotCount::Held);
        }
        Ok(SlotCount::Free {
            running: rows::int(&row, "n")?,
            waiting: rows::int(&row, "waiting")?,
        })
    }

    /// Gives run `run_id` a slot of each limit in `limits`, and counts it in the current
    /// window of each that has a rate.
    async fn hold_slots(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        run_id: i64,
        limits: &[&StoredLimit],
        now: i64,
    ) -> StoreResult<()> {
        for limit in limits.iter().filter(|l| l.rule.rate_max > 0) {
            let (window, count) = (limit.window_at(now), limit.started_at(now) + 1);
            let q = self.sql("UPDATE concurrency_limit SET window_start = ?, window_count = ? WHERE name = ?");
            sqlx::query(&q)
                .bind(window)
                .bind(count)
                .bind(limit.name.as_str())
                .execute(&mut **tx)
                .await?;
        }
        let (prefix, suffix) = self.backend.insert_ignore();
        let q = self.sql_text(format!(
            "{prefix} INTO concurrency_slot (run_id, name, taken_at) VALUES (?, ?, ?){suffix}"
        ));
        for limit in limits {
            sqlx::query(&q)
                .bind(run_id)
                .bind(limit.name.as_str())
                .bind(now)
                .execute(&mut **tx)
                .await?;
        }
        Ok(())
    }

    /// Puts run `run_id` in the queue waiting on `name`, or back in it (`again`: it was
    /// queued before, and keeps its place: its first `queued_at` and priority).
    #[allow(clippy::too_many_arguments)]
    async fn queue_run(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::any::Any>,
        run_id: i64,
        job_id: i64,
        priority: i64,
        name: &str,
        again: bool,
        now: i64,
    ) -> StoreResult<()> {
        if again {
            let q = self.sql("UPDATE run_queue SET waits_on = ?, admitted_at = 0 WHERE run_id = ?");
            sqlx::query(&q).bind(name).bind(run_id).execute(&mut **tx).await?;
        } else {
            let q = self.sql(
                "INSERT INTO run_queue (run_id, job_id, waits_on, priority, queued_at, admitted_at, skip_queue) \
                 VALUES (?, ?, ?, ?, ?, 0, 0)",
            );
            sqlx::query(&q)
                .bind(run_id)
                .bind(job_id)
                .bind(name)
                .bind(priority)
                .bind(now)
                .execute(&mut **tx)
                .await?;
        }
        Ok(())
    }

    /// Runs waiting in the queue of jobs in `partitions` (`None`: all), not taken out by an
    /// admin in the last [`ADMITTED_EXPIRY_MS`]: those sent on by an operator first, then by
    /// priority, a run gaining one point for each minute it has waited, then the oldest.
    pub async fn queued_runs(&self, partitions: Option<&[i64]>, now: i64, most: i64) -> StoreResult<Vec<QueuedRun>> {
        let Some(only) = id_filter(" AND j.partition_no", partitions) else {
            return Ok(Vec::new());
        };
        let q = self.sql_text(format!(
            "SELECT {QUEUED_COLUMNS} FROM {QUEUED_FROM} \
             WHERE q.admitted_at < ?{only} \
             ORDER BY {QUEUE_ORDER} LIMIT {most}"
        ));
        let all = sqlx::query(&q)
            .bind(now - ADMITTED_EXPIRY_MS)
            .fetch_all(&self.read)
            .await?;
        all.iter().map(|r| Ok(queued_run(r)?)).collect()
    }

    /// Takes run `run_id` out of the queue to send it, unless another admin did since it was
    /// read; true when this caller has it. It stays in the table, marked, until its slots are
    /// taken (or it is queued again).
    pub async fn admit_queued(&self, run_id: i64, now: i64) -> StoreResult<bool> {
        let q = self.sql("UPDATE run_queue SET admitted_at = ? WHERE run_id = ? AND admitted_at < ?");
        let done = sqlx::query(&q)
            .bind(now)
            .bind(run_id)
            .bind(now - ADMITTED_EXPIRY_MS)
            .execute(&self.write)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// The tickets of runs `ids` that are still pending.
    pub async fn pending_tickets(&self, ids: &[i64]) -> StoreResult<Vec<RunTicket>> {
        let sql = format!(
            "SELECT {TICKET_COLUMNS_OF_R} FROM run r WHERE r.trigger_code = 0 AND r.handle_code = 0 AND r.id IN ({{in}})"
        );
        let mut conn = self.read.acquire().await?;
        let found = self.fetch_in(&mut conn, &sql, ids, &[] as &[Arg]).await?;
        Ok(found
            .iter()
            .map(|r| ticket(r).map(|(t, _)| t))
            .collect::<Result<_, _>>()?)
    }

    /// Gives back the slots of runs that have ended (or are gone) and drops from the queue
    /// the runs that ended while waiting (cancelled, or failed otherwise); returns how many
    /// slots were given back.
    pub async fn release_slots(&self) -> StoreResult<u64> {
        let ended = "r.id IS NULL OR r.handle_code <> 0 OR r.trigger_code NOT IN (0, 200)";
        let q = format!(
            "SELECT s.run_id AS run_id FROM concurrency_slot s LEFT JOIN run r ON r.id = s.run_id WHERE {ended}"
        );
        let mut ids: Vec<i64> = Vec::new();
        for row in sqlx::query(&q).fetch_all(&self.read).await? {
            ids.push(rows::int(&row, "run_id")?);
        }
        ids.sort_unstable();
        ids.dedup();
        let released = self
            .write_in("DELETE FROM concurrency_slot WHERE run_id IN ({in})", &ids, &[])
            .await?;
        // A queued run is pending; one that is not any more ended in the queue.
        let q = "SELECT q.run_id AS run_id FROM run_queue q LEFT JOIN run r ON r.id = q.run_id \
                 WHERE r.id IS NULL OR r.handle_code <> 0 OR r.trigger_code <> 0";
        let mut gone: Vec<i64> = Vec::new();
        for row in sqlx::query(q).fetch_all(&self.read).await? {
            gone.push(rows::int(&row, "run_id")?);
        }
        self.write_in("DELETE FROM run_queue WHERE run_id IN ({in})", &gone, &[])
            .await?;
        Ok(released)
    }

    /// How many runs hold a slot of each limit, and how many were taken out of the queue
    /// and not yet sent, waiting on it (both count against its free slots).
    pub async fn slots_in_use(&self) -> StoreResult<Vec<(String, i64)>> {
        let q = "SELECT name, COUNT(*) AS n FROM concurrency_slot GROUP BY name \
                 UNION ALL SELECT waits_on AS name, COUNT(*) AS n FROM run_queue WHERE admitted_at > 0 GROUP BY waits_on";
        let all = sqlx::query(q).fetch_all(&self.read).await?;
        all.iter()
            .map(|r| Ok((rows::text(r, "name")?, rows::int(r, "n")?)))
            .collect()
    }

    /// Whether any run waits in the queue.
    pub async fn queue_is_empty(&self) -> StoreResult<bool> {
        let row = sqlx::query("SELECT COUNT(*) AS n FROM run_queue")
            .fetch_one(&self.read)
            .await?;
        Ok(rows::int(&row, "n")? == 0)
    }

    /// The queue as listed: runs of jobs in `groups` (`None`: all), in the order they will
    /// go, at most `most`.
    pub async fn queue_entries(&self, groups: Option<&[i64]>, most: i64) -> StoreResult<Vec<QueueEntry>> {
        let Some(only) = id_filter(" WHERE j.group_id", groups) else {
            return Ok(Vec::new());
        };
        let q = format!(
            "SELECT {QUEUED_COLUMNS}, q.admitted_at AS admitted_at, j.group_id AS group_id, j.description AS description \
             FROM {QUEUED_FROM}{only} \
             ORDER BY {QUEUE_ORDER} LIMIT {most}"
        );
        let all = sqlx::query(&q).fetch_all(&self.read).await?;
        Ok(all.iter().map(queue_entry).collect::<Result<_, _>>()?)
    }

    /// Marks queued run `run_id` to be sent regardless of its limits at the queue's next
    /// round; false when it is not in the queue.
    pub async fn skip_queue(&self, run_id: i64) -> StoreResult<bool> {
        let q = self.sql("UPDATE run_queue SET skip_queue = 1, admitted_at = 0 WHERE run_id = ?");
        let done = sqlx::query(&q).bind(run_id).execute(&self.write).await?;
        Ok(done.rows_affected() > 0)
    }

    /// Ends queued run `run_id` without sending it: failed, as killed by `by`, with `msg`.
    /// False when it is not waiting in the queue (or is being taken out of it to be sent).
    pub async fn cancel_queued(&self, run_id: i64, by: &str, msg: &str, now: i64) -> StoreResult<bool> {
        let by: String = by.chars().take(super::outcomes::KILLED_BY_CHARS).collect();
        let mut tx = self.write.begin().await?;
        let q = self.sql("DELETE FROM run_queue WHERE run_id = ? AND admitted_at = 0");
        if sqlx::query(&q).bind(run_id).execute(&mut *tx).await?.rows_affected() == 0 {
            return Ok(false);
        }
        let q = self.sql(
            "UPDATE run SET trigger_code = 500, trigger_msg = ?, handle_code = 500, handle_msg = ?, handled_at = ?, \
             killed_by = ? WHERE id = ? AND trigger_code = 0 AND handle_code = 0",
        );
        let done = sqlx::query(&q)
            .bind(msg)
            .bind(msg)
            .bind(now)
            .bind(by.as_str())
            .bind(run_id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        tx.commit().await?;
        Ok(true)
    }
}

/// The SQL that keeps a query to `ids` of `column` (`column` being its clause too, such as
/// `" AND j.partition_no"`): `"{column} IN (…)"`, or `""` for `None` (no filter); `None` for an
/// empty list, which keeps nothing, so the query need not be made.
fn id_filter(column: &str, ids: Option<&[i64]>) -> Option<String> {
    match ids {
        Some([]) => None,
        Some(ids) => Some(format!("{column} IN ({})", rows::join_ids(ids))),
        None => Some(String::new()),
    }
}
