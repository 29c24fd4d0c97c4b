//! Reading runs: one run, listings, runs still waiting for a result, counts.

use crate::model::{Run, RunFilter, RunStatus};
use crate::run::UnfinishedRun;
use crate::store::bulk::{bound, Arg};
use crate::store::filter::Filtered;
use crate::store::rows::{self, from_row, RUN_COLUMNS};
use crate::store::{Store, StoreResult};

impl Store {
    /// One run.
    pub async fn run(&self, id: i64) -> StoreResult<Run> {
        let q = format!("SELECT {RUN_COLUMNS} FROM run WHERE id = ?");
        self.read_by_id(&q, id, "run", rows::run).await
    }

    /// Runs matching `f`, newest (highest id) first. The time range is on `scheduled_at`, which
    /// every run has (`triggered_at` is 0 until a run is sent). The group scope is applied here,
    /// not after the query, so `limit` and `before_id` count only rows the caller may see.
    pub async fn list_runs(&self, f: &RunFilter) -> StoreResult<Vec<Run>> {
        let mut sql = Filtered::new(format!("SELECT {RUN_COLUMNS} FROM run WHERE 1 = 1"));
        sql.and(" AND job_id = ?", f.job_id);
        sql.and(" AND group_id = ?", f.group_id);
        if let Some(ids) = &f.group_ids {
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            sql.and_in("group_id", ids);
        }
        sql.and(" AND scheduled_at >= ?", f.from);
        sql.and(" AND scheduled_at < ?", f.to);
        sql.and(" AND id < ?", f.before_id);
        if let Some(s) = f.status {
            sql.append(match s {
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
        sql.push(" ORDER BY id DESC LIMIT ?", [f.limit]);
        let q = self.sql(sql.text()).into_owned();
        let all = sql.bind(&q).fetch_all(&self.read).await?;
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
        let args = [Arg::Int(triggered_before), Arg::Int(after_id), Arg::Int(limit)];
        let all = bound(&q, &args).fetch_all(&self.read).await?;
        all.iter()
            .map(|r| {
                Ok(from_row!(r => UnfinishedRun {
                    id, job_id, group_id, triggered_at, timeout_secs,
                    address: rows::text(r, "executor_address")?,
                }))
            })
            .collect()
    }

    /// Counts runs by state (for `/metrics`): `(pending, running)`.
    pub async fn count_open_runs(&self) -> StoreResult<(i64, i64)> {
        let pending = self
            .count("SELECT COUNT(*) AS n FROM run WHERE trigger_code = 0 AND handle_code = 0")
            .await?;
        let running = self
            .count("SELECT COUNT(*) AS n FROM run WHERE trigger_code = 200 AND handle_code = 0")
            .await?;
        Ok((pending, running))
    }
}
