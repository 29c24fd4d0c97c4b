//! Reading runs: one run, listings, runs still waiting for a result, counts.

use crate::model::{Run, RunFilter, RunStatus};
use crate::run::UnfinishedRun;
use crate::store::placeholders;
use crate::store::rows::{self, RUN_COLUMNS};
use crate::store::{Store, StoreError, StoreResult};

impl Store {
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
                // A killed run is a failure with `killed_by` set; each is listed under its own state.
                RunStatus::Failed => {
                    " AND handle_code <> 200 AND (handle_code <> 0 OR trigger_code NOT IN (0, 200, -1)) AND killed_by = ''"
                }
                RunStatus::Killed => {
                    " AND handle_code <> 200 AND (handle_code <> 0 OR trigger_code NOT IN (0, 200, -1)) AND killed_by <> ''"
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
    /// lost-run sweep, which pages through all of them by id. Runs marked as being sent whose
    /// admin never recorded the executor's reply (it stopped in between) count as sent then,
    /// to the executor of the mark: whether that executor has them is the sweep's question.
    pub async fn unfinished_runs(
        &self,
        triggered_before: i64,
        after_id: i64,
        limit: i64,
    ) -> StoreResult<Vec<UnfinishedRun>> {
        let q = self.sql(
            "SELECT r.id, r.job_id, r.group_id, r.executor_address, r.triggered_at, \
             j.timeout_secs FROM run r LEFT JOIN job j ON j.id = r.job_id \
             WHERE r.trigger_code IN (0, 200) AND r.handle_code = 0 AND (r.trigger_code = 200 OR r.send_token <> 0) \
             AND r.triggered_at < ? AND r.id > ? \
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
