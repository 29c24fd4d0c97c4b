//! Backfills (`backfill`, `backfill_fire`): a job or a workflow run once for every fire time its
//! schedule had in a past range. The fire times are written when the backfill is created, one
//! row per `(target, fire time)` ever: a fire time another backfill took on is left out, so
//! none runs twice. A fire time gets its run (a workflow's: its instance) in the transaction
//! that makes it, and only while it has none, so two admins driving the same backfill for a
//! moment (a partition changing hands) start each fire time once.

use super::{rows, Store, StoreError, StoreResult};
use crate::api::{Backfill, BackfillState};
use crate::run::{NewRun, RunTicket};
use crate::store::NodeTickets;
use chime_protocol::TriggerType;
use sqlx::any::{Any, AnyRow};
use sqlx::Transaction;
use std::sync::LazyLock;

/// Fire times written per statement.
const FIRE_ROWS: usize = 400;

/// What a backfill runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackfillTarget {
    /// A job: one run per fire time.
    Job(i64),
    /// A workflow: one instance per fire time.
    Workflow(i64),
}

impl std::fmt::Display for BackfillTarget {
    /// `job 7`, `workflow 3`: as messages name it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.kind(), self.id())
    }
}

/// `target` of a job's backfill.
const JOB: &str = "job";
/// `target` of a workflow's backfill.
const WORKFLOW: &str = "workflow";

impl BackfillTarget {
    /// As stored in `target`.
    fn kind(self) -> &'static str {
        match self {
            BackfillTarget::Job(_) => JOB,
            BackfillTarget::Workflow(_) => WORKFLOW,
        }
    }

    /// The job's or workflow's id.
    pub fn id(self) -> i64 {
        match self {
            BackfillTarget::Job(id) | BackfillTarget::Workflow(id) => id,
        }
    }

    fn of(kind: &str, id: i64) -> BackfillTarget {
        match kind {
            WORKFLOW => BackfillTarget::Workflow(id),
            _ => BackfillTarget::Job(id),
        }
    }
}

/// A backfill to create.
#[derive(Debug, Clone)]
pub struct NewBackfill {
    /// The job or workflow.
    pub target: BackfillTarget,
    /// The range, epoch ms, both ends included.
    pub from: i64,
    /// See `from`.
    pub to: i64,
    /// At most this many runs under way at once.
    pub at_once: i64,
    /// Newest fire times first.
    pub newest_first: bool,
    /// Every fire time of the job's schedule in the range.
    pub fire_times: Vec<i64>,
    /// Who asks.
    pub created_by: String,
}

/// A running backfill as its driver needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveBackfill {
    /// Backfill id.
    pub id: i64,
    /// The job or workflow.
    pub target: BackfillTarget,
    /// Its partition: the admin holding it drives the backfill.
    pub partition: i64,
    /// At most this many runs under way at once.
    pub at_once: i64,
    /// Newest fire times first.
    pub newest_first: bool,
}

const BACKFILL_COLUMNS: &str =
    "b.id AS id, b.target AS target, b.target_id AS target_id, b.range_from AS range_from, b.range_to AS range_to, \
     b.at_once AS at_once, b.newest_first AS newest_first, b.state AS state, b.fires AS fires, b.already AS already, \
     b.created_by AS created_by, b.created_at AS created_at, b.ended_at AS ended_at";

/// What the runs (a job's) or instances (a workflow's) started for a backfill are counted by.
#[derive(Debug, Clone, Copy)]
enum Started {
    /// Not ended: a run pending, queued or running; an instance running or queued.
    UnderWay,
    /// Succeeded.
    Succeeded,
}

/// `SELECT COUNT(*)` of the runs or instances started for backfill `of` (`?`, or `b.id` in a
/// query of `backfill b`) of target `kind` that `started` counts: the one definition the
/// progress shown, the driver's room and the end of a backfill all read.
fn count_started(kind: &str, of: &str, started: Started) -> String {
    let (join, condition) = match (kind, started) {
        (WORKFLOW, Started::UnderWay) => ("workflow_instance i ON i.id", "i.state IN ('running', 'queued')"),
        (WORKFLOW, Started::Succeeded) => ("workflow_instance i ON i.id", "i.state = 'succeeded'"),
        (_, Started::UnderWay) => ("run r ON r.id", "r.handle_code = 0 AND r.trigger_code IN (0, 200)"),
        (_, Started::Succeeded) => ("run r ON r.id", "r.handle_code = 200"),
    };
    format!(
        "SELECT COUNT(*) FROM backfill_fire f JOIN {join} = f.started_id WHERE f.backfill_id = {of} AND {condition}"
    )
}

/// Counts of a backfill `b`'s fire times by where they stand: waiting, started, and of those
/// started the runs (instances) under way and succeeded.
static PROGRESS: LazyLock<String> = LazyLock::new(|| {
    let by_target = |started, name: &str| {
        format!(
            "CASE WHEN b.target = '{JOB}' THEN ({}) ELSE ({}) END AS {name}",
            count_started(JOB, "b.id", started),
            count_started(WORKFLOW, "b.id", started)
        )
    };
    format!(
        "(SELECT COUNT(*) FROM backfill_fire f WHERE f.backfill_id = b.id AND f.started_id = 0) AS waiting, \
         (SELECT COUNT(*) FROM backfill_fire f WHERE f.backfill_id = b.id AND f.started_id <> 0) AS started, \
         {}, {}",
        by_target(Started::UnderWay, "running_now"),
        by_target(Started::Succeeded, "succeeded")
    )
});

/// One backfill with its progress, by id.
static BACKFILL_BY_ID: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {BACKFILL_COLUMNS}, {} FROM backfill b WHERE b.id = ?",
        *PROGRESS
    )
});

fn backfill(row: &AnyRow) -> Result<Backfill, sqlx::Error> {
    let running = rows::int(row, "running_now")?;
    let target = BackfillTarget::of(&rows::text(row, "target")?, rows::int(row, "target_id")?);
    let succeeded = rows::int(row, "succeeded")?;
    let started = rows::int(row, "started")?;
    let ended_at = rows::int(row, "ended_at")?;
    Ok(Backfill {
        id: rows::int(row, "id")?,
        job_id: matches!(target, BackfillTarget::Job(_)).then_some(target.id()),
        workflow_id: matches!(target, BackfillTarget::Workflow(_)).then_some(target.id()),
        from: rows::int(row, "range_from")?,
        to: rows::int(row, "range_to")?,
        at_once: rows::int(row, "at_once")?,
        newest_first: rows::int(row, "newest_first")? != 0,
        state: BackfillState::parse(&rows::text(row, "state")?),
        fires: rows::int(row, "fires")?,
        already: rows::int(row, "already")?,
        waiting: rows::int(row, "waiting")?,
        running,
        succeeded,
        failed: (started - running - succeeded).max(0),
        created_by: rows::text(row, "created_by")?,
        created_at: rows::int(row, "created_at")?,
        ended_at: (ended_at > 0).then_some(ended_at),
    })
}

impl Store {
    /// Creates a backfill at `now` with the fire times of `new` no backfill took on before;
    /// done at once when there are none. Answers it as stored.
    pub async fn insert_backfill(&self, new: &NewBackfill, now: i64) -> StoreResult<Backfill> {
        let mut tx = self.write.begin().await?;
        let q = self.sql(
            "INSERT INTO backfill (target, target_id, range_from, range_to, at_once, newest_first, state, fires, \
             already, created_by, created_at, ended_at) VALUES (?, ?, ?, ?, ?, ?, 'running', 0, 0, ?, ?, 0) RETURNING id",
        );
        let row = sqlx::query(&q)
            .bind(new.target.kind())
            .bind(new.target.id())
            .bind(new.from)
            .bind(new.to)
            .bind(new.at_once)
            .bind(i64::from(new.newest_first))
            .bind(crate::model::cut_chars(&new.created_by, 64))
            .bind(now)
            .fetch_one(&mut *tx)
            .await?;
        let id = rows::int(&row, 0)?;
        let (prefix, suffix) = self.backend.insert_ignore();
        let mut fires = 0u64;
        for chunk in new.fire_times.chunks(FIRE_ROWS) {
            let values = vec!["(?, ?, ?, ?, 0)"; chunk.len()].join(", ");
            let q = self.sql_text(format!(
                "{prefix} INTO backfill_fire (target, target_id, fire_at, backfill_id, started_id) VALUES {values}{suffix}"
            ));
            let mut query = sqlx::query(&q);
            for at in chunk {
                query = query.bind(new.target.kind()).bind(new.target.id()).bind(*at).bind(id);
            }
            fires += query.execute(&mut *tx).await?.rows_affected();
        }
        let fires = fires as i64;
        let already = new.fire_times.len() as i64 - fires;
        let (state, ended_at) = match fires {
            0 => (BackfillState::Done, now),
            _ => (BackfillState::Running, 0),
        };
        let q = self.sql("UPDATE backfill SET fires = ?, already = ?, state = ?, ended_at = ? WHERE id = ?");
        sqlx::query(&q)
            .bind(fires)
            .bind(already)
            .bind(state.as_str())
            .bind(ended_at)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        let mut conn = self.write.acquire().await?;
        let select = &*BACKFILL_BY_ID;
        self.row_by_id(&mut conn, select, id, "backfill", backfill).await
    }

    /// Backfill `id` with its progress.
    pub async fn backfill(&self, id: i64) -> StoreResult<Backfill> {
        let select = &*BACKFILL_BY_ID;
        self.read_by_id(select, id, "backfill", backfill).await
    }

    /// The newest `limit` backfills of `target`, newest first, with their progress.
    pub async fn backfills_of(&self, target: BackfillTarget, limit: i64) -> StoreResult<Vec<Backfill>> {
        let q = self.sql_text(format!(
            "SELECT {BACKFILL_COLUMNS}, {} FROM backfill b WHERE b.target = ? AND b.target_id = ? \
             ORDER BY b.id DESC LIMIT ?",
            *PROGRESS
        ));
        let all = sqlx::query(&q)
            .bind(target.kind())
            .bind(target.id())
            .bind(limit)
            .fetch_all(&self.read)
            .await?;
        Ok(all.iter().map(backfill).collect::<Result<_, _>>()?)
    }

    /// Cancels backfill `id` at `now`: its waiting fire times are let go (a later backfill may
    /// take them on); its runs under way go on. Conflict when it is no longer running.
    pub async fn cancel_backfill(&self, id: i64, now: i64) -> StoreResult<()> {
        let mut tx = self.write.begin().await?;
        let q = self.sql("UPDATE backfill SET state = 'cancelled', ended_at = ? WHERE id = ? AND state = 'running'");
        if sqlx::query(&q)
            .bind(now)
            .bind(id)
            .execute(&mut *tx)
            .await?
            .rows_affected()
            == 0
        {
            return Err(StoreError::Conflict(format!("backfill {id} is not running")));
        }
        let q = self.sql("DELETE FROM backfill_fire WHERE backfill_id = ? AND started_id = 0");
        sqlx::query(&q).bind(id).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Every running backfill with its target's partition. Read on the reading pool: the
    /// driver asks twice a second whether or not there are any, and on SQLite the writing
    /// pool is the one connection every fire is written through; a backfill committed a moment
    /// ago is seen at the next round.
    pub async fn active_backfills(&self) -> StoreResult<Vec<ActiveBackfill>> {
        let q = "SELECT b.id AS id, b.target AS target, b.target_id AS target_id, \
                 COALESCE(j.partition_no, w.partition_no, 0) AS partition_no, b.at_once AS at_once, \
                 b.newest_first AS newest_first FROM backfill b \
                 LEFT JOIN job j ON b.target = 'job' AND j.id = b.target_id \
                 LEFT JOIN workflow w ON b.target = 'workflow' AND w.id = b.target_id \
                 WHERE b.state = 'running' ORDER BY b.id";
        let all = sqlx::query(q).fetch_all(&self.read).await?;
        let decode = |row: &AnyRow| -> Result<ActiveBackfill, sqlx::Error> {
            Ok(ActiveBackfill {
                id: rows::int(row, "id")?,
                target: BackfillTarget::of(&rows::text(row, "target")?, rows::int(row, "target_id")?),
                partition: rows::int(row, "partition_no")?,
                at_once: rows::int(row, "at_once")?,
                newest_first: rows::int(row, "newest_first")? != 0,
            })
        };
        Ok(all.iter().map(decode).collect::<Result<_, _>>()?)
    }

    /// Of backfill `b`: its runs (instances) under way, and up to `room` of its waiting fire
    /// times in the order it goes (oldest or newest first) — all of them when it has fewer.
    pub async fn backfill_next(&self, b: &ActiveBackfill, room: i64) -> StoreResult<(i64, Vec<i64>)> {
        let (id, newest_first) = (b.id, b.newest_first);
        let mut conn = self.write.acquire().await?;
        let q = self.sql_text(count_started(b.target.kind(), "?", Started::UnderWay));
        let running = rows::int(&sqlx::query(&q).bind(id).fetch_one(&mut *conn).await?, 0)?;
        let order = if newest_first { "DESC" } else { "ASC" };
        let q = self.sql_text(format!(
            "SELECT fire_at FROM backfill_fire WHERE backfill_id = ? AND started_id = 0 ORDER BY fire_at {order} LIMIT ?"
        ));
        let next = sqlx::query(&q)
            .bind(id)
            .bind(room.max(1))
            .fetch_all(&mut *conn)
            .await?
            .iter()
            .map(|r| rows::int(r, "fire_at"))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((running, next))
    }

    /// Creates the runs of job backfill `id` (one per fire time, each scheduled at its fire
    /// time) and ties each to its fire time, in one transaction; answers their tickets.
    /// Nothing is created when the backfill is no longer running or a fire time already has
    /// its run (another admin drove it a moment ago).
    pub async fn start_backfill_runs(&self, id: i64, runs: &[NewRun]) -> StoreResult<Vec<RunTicket>> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        let mut tx = self.write.begin().await?;
        if !self.backfill_running_tx(&mut tx, id).await? {
            return Ok(Vec::new());
        }
        let tickets = self.insert_runs_tx(&mut tx, runs).await?;
        for t in &tickets {
            let target = BackfillTarget::Job(t.job_id);
            if !self.tie_fire_tx(&mut tx, id, target, t.scheduled_at, t.id).await? {
                // Rolled back with the runs: the fire time was started by another driver.
                return Ok(Vec::new());
            }
        }
        tx.commit().await?;
        Ok(tickets)
    }

    /// Fires workflow backfill `id`'s instances of workflow `workflow_id`, one per fire time
    /// in `fire_times`, each scheduled at its fire time (its nodes' date parameters resolve to
    /// it), subject to the workflow's own limit on running instances; ties each to its fire
    /// time and starts the first nodes, in one transaction. Answers the node runs to send;
    /// nothing when the backfill is no longer running or a fire time already has its instance.
    pub async fn start_backfill_instances(
        &self,
        id: i64,
        workflow_id: i64,
        fire_times: &[i64],
        now: i64,
    ) -> StoreResult<NodeTickets> {
        let mut tx = self.write.begin().await?;
        if fire_times.is_empty() || !self.backfill_running_tx(&mut tx, id).await? {
            return Ok(Vec::new());
        }
        let w = self.workflow_tx(&mut tx, workflow_id).await?;
        let mut tickets = Vec::new();
        for at in fire_times {
            let made = self
                .create_instance(&mut tx, &w, None, *at, TriggerType::Backfill, now)
                .await?;
            if !self
                .tie_fire_tx(&mut tx, id, BackfillTarget::Workflow(workflow_id), *at, made.id)
                .await?
            {
                return Ok(Vec::new());
            }
            if made.started {
                tickets.extend(self.progress(&mut tx, made.id, now, now).await?.tickets);
            }
        }
        tx.commit().await?;
        Ok(tickets)
    }

    /// Whether backfill `id` is running, its row locked in `tx` until the end of it.
    async fn backfill_running_tx(&self, tx: &mut Transaction<'static, Any>, id: i64) -> StoreResult<bool> {
        let q = self.sql_text(format!(
            "SELECT state FROM backfill WHERE id = ?{}",
            self.backend.for_update()
        ));
        let state = sqlx::query(&q).bind(id).fetch_optional(&mut **tx).await?;
        Ok(state
            .map(|r| rows::text(&r, "state"))
            .transpose()?
            .is_some_and(|s| s == BackfillState::Running.as_str()))
    }

    /// Ties the fire time `at` of backfill `id` to what was started for it (`started`: a run
    /// or an instance) in `tx`; false when it had been started already.
    async fn tie_fire_tx(
        &self,
        tx: &mut Transaction<'static, Any>,
        id: i64,
        target: BackfillTarget,
        at: i64,
        started: i64,
    ) -> StoreResult<bool> {
        let q = self.sql(
            "UPDATE backfill_fire SET started_id = ? WHERE target = ? AND target_id = ? AND fire_at = ? \
             AND backfill_id = ? AND started_id = 0",
        );
        let done = sqlx::query(&q)
            .bind(started)
            .bind(target.kind())
            .bind(target.id())
            .bind(at)
            .bind(id)
            .execute(&mut **tx)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Marks backfill `b` done at `now` when it is running, has no waiting fire time and
    /// nothing under way; answers whether it did.
    pub async fn finish_backfill_if_done(&self, b: &ActiveBackfill, now: i64) -> StoreResult<bool> {
        let q = self.sql_text(format!(
            "UPDATE backfill SET state = 'done', ended_at = ? WHERE id = ? AND state = 'running' \
             AND NOT EXISTS (SELECT 1 FROM backfill_fire f WHERE f.backfill_id = ? AND f.started_id = 0) \
             AND ({}) = 0",
            count_started(b.target.kind(), "?", Started::UnderWay)
        ));
        let done = sqlx::query(&q)
            .bind(now)
            .bind(b.id)
            .bind(b.id)
            .bind(b.id)
            .execute(&self.write)
            .await?;
        Ok(done.rows_affected() == 1)
    }
}
