//! Backfills (`backfill`, `backfill_fire`): a job run once for every fire time its schedule had
//! in a past range. The fire times are written when the backfill is created, one row per
//! `(job, fire time)` ever: a fire time another backfill took on is left out, so none runs
//! twice. A fire time gets its run in the transaction that creates the run, and only while it
//! has none, so two admins driving the same backfill for a moment (a partition changing
//! hands) start each fire time once.

use super::{rows, Store, StoreError, StoreResult};
use crate::api::{Backfill, BackfillState};
use crate::run::{NewRun, RunTicket};
use sqlx::any::AnyRow;

/// Fire times written per statement.
const FIRE_ROWS: usize = 400;

/// A backfill to create.
#[derive(Debug, Clone)]
pub struct NewBackfill {
    /// The job.
    pub job_id: i64,
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
    /// The job.
    pub job_id: i64,
    /// The job's partition: the admin holding it drives the backfill.
    pub partition: i64,
    /// At most this many runs under way at once.
    pub at_once: i64,
    /// Newest fire times first.
    pub newest_first: bool,
}

const BACKFILL_COLUMNS: &str = "b.id AS id, b.job_id AS job_id, b.range_from AS range_from, b.range_to AS range_to, \
     b.at_once AS at_once, b.newest_first AS newest_first, b.state AS state, b.fires AS fires, b.already AS already, \
     b.created_by AS created_by, b.created_at AS created_at, b.ended_at AS ended_at";

/// Counts of a backfill `b`'s fire times by where they stand.
const PROGRESS: &str =
    "(SELECT COUNT(*) FROM backfill_fire f WHERE f.backfill_id = b.id AND f.run_id = 0) AS waiting, \
     (SELECT COUNT(*) FROM backfill_fire f JOIN run r ON r.id = f.run_id WHERE f.backfill_id = b.id \
        AND r.handle_code = 0 AND r.trigger_code IN (0, 200)) AS running_runs, \
     (SELECT COUNT(*) FROM backfill_fire f JOIN run r ON r.id = f.run_id WHERE f.backfill_id = b.id \
        AND r.handle_code = 200) AS succeeded, \
     (SELECT COUNT(*) FROM backfill_fire f WHERE f.backfill_id = b.id AND f.run_id <> 0) AS started";

fn backfill(row: &AnyRow) -> Result<Backfill, sqlx::Error> {
    let running = rows::int(row, "running_runs")?;
    let succeeded = rows::int(row, "succeeded")?;
    let started = rows::int(row, "started")?;
    let ended_at = rows::int(row, "ended_at")?;
    Ok(Backfill {
        id: rows::int(row, "id")?,
        job_id: rows::int(row, "job_id")?,
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
            "INSERT INTO backfill (job_id, range_from, range_to, at_once, newest_first, state, fires, already, \
             created_by, created_at, ended_at) VALUES (?, ?, ?, ?, ?, 'running', 0, 0, ?, ?, 0) RETURNING id",
        );
        let row = sqlx::query(&q)
            .bind(new.job_id)
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
            let values = vec!["(?, ?, ?, 0)"; chunk.len()].join(", ");
            let q = self.sql_text(format!(
                "{prefix} INTO backfill_fire (job_id, fire_at, backfill_id, run_id) VALUES {values}{suffix}"
            ));
            let mut query = sqlx::query(&q);
            for at in chunk {
                query = query.bind(new.job_id).bind(*at).bind(id);
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
        let select = format!("SELECT {BACKFILL_COLUMNS}, {PROGRESS} FROM backfill b WHERE b.id = ?");
        self.row_by_id(&mut conn, &select, id, "backfill", backfill).await
    }

    /// Backfill `id` with its progress.
    pub async fn backfill(&self, id: i64) -> StoreResult<Backfill> {
        let select = format!("SELECT {BACKFILL_COLUMNS}, {PROGRESS} FROM backfill b WHERE b.id = ?");
        self.read_by_id(&select, id, "backfill", backfill).await
    }

    /// The newest `limit` backfills of job `job_id`, newest first, with their progress.
    pub async fn job_backfills(&self, job_id: i64, limit: i64) -> StoreResult<Vec<Backfill>> {
        let q = self.sql_text(format!(
            "SELECT {BACKFILL_COLUMNS}, {PROGRESS} FROM backfill b WHERE b.job_id = ? ORDER BY b.id DESC LIMIT ?"
        ));
        let all = sqlx::query(&q).bind(job_id).bind(limit).fetch_all(&self.read).await?;
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
        let q = self.sql("DELETE FROM backfill_fire WHERE backfill_id = ? AND run_id = 0");
        sqlx::query(&q).bind(id).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Every running backfill with its job's partition, on the writing pool (a backfill
    /// created or cancelled a moment ago counts).
    pub async fn active_backfills(&self) -> StoreResult<Vec<ActiveBackfill>> {
        let q = "SELECT b.id AS id, b.job_id AS job_id, j.partition_no AS partition_no, b.at_once AS at_once, \
                 b.newest_first AS newest_first FROM backfill b JOIN job j ON j.id = b.job_id \
                 WHERE b.state = 'running' ORDER BY b.id";
        let all = sqlx::query(q).fetch_all(&self.write).await?;
        let decode = |row: &AnyRow| -> Result<ActiveBackfill, sqlx::Error> {
            Ok(ActiveBackfill {
                id: rows::int(row, "id")?,
                job_id: rows::int(row, "job_id")?,
                partition: rows::int(row, "partition_no")?,
                at_once: rows::int(row, "at_once")?,
                newest_first: rows::int(row, "newest_first")? != 0,
            })
        };
        Ok(all.iter().map(decode).collect::<Result<_, _>>()?)
    }

    /// Of backfill `id`: its runs under way, and up to `room` of its waiting fire times in the
    /// order it goes (oldest or newest first) — all of them when it has fewer.
    pub async fn backfill_next(&self, id: i64, newest_first: bool, room: i64) -> StoreResult<(i64, Vec<i64>)> {
        let mut conn = self.write.acquire().await?;
        let q = self.sql(
            "SELECT COUNT(*) AS n FROM backfill_fire f JOIN run r ON r.id = f.run_id \
             WHERE f.backfill_id = ? AND r.handle_code = 0 AND r.trigger_code IN (0, 200)",
        );
        let running = rows::int(&sqlx::query(&q).bind(id).fetch_one(&mut *conn).await?, "n")?;
        let order = if newest_first { "DESC" } else { "ASC" };
        let q = self.sql_text(format!(
            "SELECT fire_at FROM backfill_fire WHERE backfill_id = ? AND run_id = 0 ORDER BY fire_at {order} LIMIT ?"
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

    /// Creates the runs of backfill `id` (one per fire time, each scheduled at its fire time)
    /// and ties each to its fire time, in one transaction; answers their tickets. Nothing is
    /// created when the backfill is no longer running or a fire time already has its run
    /// (another admin drove it a moment ago).
    pub async fn start_backfill_runs(&self, id: i64, runs: &[NewRun]) -> StoreResult<Vec<RunTicket>> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        let mut tx = self.write.begin().await?;
        let q = self.sql_text(format!(
            "SELECT state FROM backfill WHERE id = ?{}",
            self.backend.for_update()
        ));
        let state = sqlx::query(&q).bind(id).fetch_optional(&mut *tx).await?;
        let running = state
            .map(|r| rows::text(&r, "state"))
            .transpose()?
            .is_some_and(|s| s == BackfillState::Running.as_str());
        if !running {
            return Ok(Vec::new());
        }
        let tickets = self.insert_runs_tx(&mut tx, runs).await?;
        let q = self.sql(
            "UPDATE backfill_fire SET run_id = ? WHERE job_id = ? AND fire_at = ? AND backfill_id = ? AND run_id = 0",
        );
        for t in &tickets {
            let done = sqlx::query(&q)
                .bind(t.id)
                .bind(t.job_id)
                .bind(t.scheduled_at)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            if done.rows_affected() != 1 {
                // Rolled back with the runs: the fire time was started by another driver.
                return Ok(Vec::new());
            }
        }
        tx.commit().await?;
        Ok(tickets)
    }

    /// Marks backfill `id` done at `now` when it is running, has no waiting fire time and no
    /// run under way; answers whether it did.
    pub async fn finish_backfill_if_done(&self, id: i64, now: i64) -> StoreResult<bool> {
        let q = self.sql(
            "UPDATE backfill SET state = 'done', ended_at = ? WHERE id = ? AND state = 'running' \
             AND NOT EXISTS (SELECT 1 FROM backfill_fire f WHERE f.backfill_id = ? AND f.run_id = 0) \
             AND NOT EXISTS (SELECT 1 FROM backfill_fire f JOIN run r ON r.id = f.run_id \
                 WHERE f.backfill_id = ? AND r.handle_code = 0 AND r.trigger_code IN (0, 200))",
        );
        let done = sqlx::query(&q)
            .bind(now)
            .bind(id)
            .bind(id)
            .bind(id)
            .execute(&self.write)
            .await?;
        Ok(done.rows_affected() == 1)
    }
}
