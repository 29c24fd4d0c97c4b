//! Queries the web console needs beyond the REST API's: user management, dashboard counts,
//! GLUE version history and clearing old runs.

use super::rows::from_row;
use super::users::{user_row, User, USER_COLUMNS};
use super::{rows, Store, StoreError, StoreResult};
use crate::model::{now_ms, RunStatus};
use serde::Serialize;
use sqlx::any::AnyRow;

/// Runs of one UTC day by outcome.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DayCounts {
    /// Start of the day, epoch ms (UTC).
    pub day: i64,
    /// Succeeded.
    pub success: i64,
    /// Failed (including trigger failures and timeouts; not kills).
    pub failed: i64,
    /// Killed by a user: failures asked for, counted apart from the job's own.
    pub killed: i64,
    /// Pending or running.
    pub running: i64,
    /// Skipped misfires.
    pub skipped: i64,
}

/// One saved version of a GLUE script.
#[derive(Debug, Clone, Serialize)]
pub struct GlueVersion {
    /// Id.
    pub id: i64,
    /// GLUE type, e.g. `GLUE_SHELL`.
    pub glue_type: String,
    /// The source.
    pub glue_source: String,
    /// Who saved it.
    pub author: String,
    /// What changed, as its author described it (XXL-JOB's GLUE remark; empty when none).
    pub remark: String,
    /// When, epoch ms.
    pub created_at: i64,
}

const DAY_MS: i64 = 86_400_000;

impl Store {
    /// Every user, by id.
    pub async fn list_users(&self) -> StoreResult<Vec<User>> {
        self.read_all(&format!("SELECT {USER_COLUMNS} FROM app_user ORDER BY id"), user_row)
            .await
    }

    /// One user by id.
    pub async fn user_by_id(&self, id: i64) -> StoreResult<User> {
        let q = format!("SELECT {USER_COLUMNS} FROM app_user WHERE id = ?");
        self.read_by_id(&q, id, "user", user_row).await
    }

    /// Sets a user's role, write permission and groups.
    pub async fn update_user_access(&self, id: i64, role: &str, grants: &[crate::api::GroupGrant]) -> StoreResult<()> {
        self.update_user(id, role, grants, None).await
    }

    /// Replaces a user's password hash.
    pub async fn set_password_hash(&self, id: i64, password_hash: &str) -> StoreResult<()> {
        let q = self.sql("UPDATE app_user SET password_hash = ? WHERE id = ?");
        let done = sqlx::query(&q)
            .bind(password_hash)
            .bind(id)
            .execute(&self.write)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("user {id}")));
        }
        Ok(())
    }

    /// Removes a user and their sessions.
    pub async fn delete_user(&self, id: i64) -> StoreResult<()> {
        let mut tx = self.write.begin().await?;
        let q = self.sql("DELETE FROM console_session WHERE user_id = ?");
        sqlx::query(&q).bind(id).execute(&mut *tx).await?;
        let q = self.sql("DELETE FROM app_user WHERE id = ?");
        let done = sqlx::query(&q).bind(id).execute(&mut *tx).await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("user {id}")));
        }
        tx.commit().await?;
        Ok(())
    }

    /// Runs per UTC day scheduled in `[from, to)`, by outcome; `group_ids` limits the groups
    /// (None: all).
    pub async fn runs_per_day(&self, from: i64, to: i64, group_ids: Option<&[i64]>) -> StoreResult<Vec<DayCounts>> {
        let mut sql = format!(
            "SELECT scheduled_at - (scheduled_at % {DAY_MS}) AS day, trigger_code, handle_code, \
             CASE WHEN killed_by <> '' THEN 1 ELSE 0 END AS killed, COUNT(*) AS n \
             FROM run WHERE scheduled_at >= ? AND scheduled_at < ?"
        );
        if let Some(ids) = group_ids {
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            sql.push_str(&format!(" AND group_id IN ({})", super::placeholders(ids.len())));
        }
        sql.push_str(
            " GROUP BY scheduled_at - (scheduled_at % 86400000), trigger_code, handle_code, \
             CASE WHEN killed_by <> '' THEN 1 ELSE 0 END",
        );
        let q = self.sql(&sql).into_owned();
        let mut query = sqlx::query(&q).bind(from).bind(to);
        for id in group_ids.unwrap_or(&[]) {
            query = query.bind(*id);
        }
        let all = query.fetch_all(&self.read).await?;
        let mut days: std::collections::BTreeMap<i64, DayCounts> = std::collections::BTreeMap::new();
        let first = from - from.rem_euclid(DAY_MS);
        let mut d = first;
        while d < to && days.len() < 400 {
            days.insert(
                d,
                DayCounts {
                    day: d,
                    ..Default::default()
                },
            );
            d += DAY_MS;
        }
        for r in &all {
            let day = rows::int(r, "day")?;
            let n = rows::int(r, "n")?;
            let e = days.entry(day).or_insert_with(|| DayCounts {
                day,
                ..Default::default()
            });
            let killed = rows::int(r, "killed")? != 0;
            match RunStatus::of_run(rows::int(r, "trigger_code")?, rows::int(r, "handle_code")?, killed) {
                RunStatus::Success => e.success += n,
                RunStatus::Failed => e.failed += n,
                RunStatus::Killed => e.killed += n,
                RunStatus::Pending | RunStatus::Running => e.running += n,
                RunStatus::Skipped => e.skipped += n,
            }
        }
        Ok(days.into_values().collect())
    }

    /// `(groups, jobs, running jobs)` counts, limited to `group_ids` when given.
    pub async fn console_counts(&self, group_ids: Option<&[i64]>) -> StoreResult<(i64, i64, i64)> {
        if let Some([]) = group_ids {
            return Ok((0, 0, 0));
        }
        let row = self
            .row_in_groups(
                "SELECT COUNT(*) AS n, COUNT(CASE WHEN running <> 0 THEN 1 END) AS r FROM job WHERE 1 = 1",
                group_ids,
            )
            .await?;
        let groups = match group_ids {
            Some(ids) => ids.len() as i64,
            None => self.count("SELECT COUNT(*) AS n FROM executor_group").await?,
        };
        Ok((groups, rows::int(&row, "n")?, rows::int(&row, "r")?))
    }

    /// The earliest due fire time (epoch ms) among started jobs, limited to `group_ids` when
    /// given; `None` when no started job has a next fire time. The dashboard shows how far
    /// this lies in the past as the current trigger lateness.
    pub async fn earliest_next_fire(&self, group_ids: Option<&[i64]>) -> StoreResult<Option<i64>> {
        if let Some([]) = group_ids {
            return Ok(None);
        }
        let row = self
            .row_in_groups(
                "SELECT MIN(next_fire_at) AS t, COUNT(*) AS n FROM job WHERE running <> 0 AND next_fire_at > 0",
                group_ids,
            )
            .await?;
        if rows::int(&row, "n")? == 0 {
            return Ok(None);
        }
        Ok(Some(rows::int(&row, "t")?))
    }

    /// The one row of `select` (a query whose `WHERE` a condition can be added to), limited to
    /// the jobs of `group_ids` when given.
    async fn row_in_groups(&self, select: &str, group_ids: Option<&[i64]>) -> StoreResult<AnyRow> {
        let (filter, ids) = match group_ids {
            Some(ids) => (format!(" AND group_id IN ({})", super::placeholders(ids.len())), ids),
            None => (String::new(), &[][..]),
        };
        let q = self.sql_text(format!("{select}{filter}"));
        let mut query = sqlx::query(&q);
        for id in ids {
            query = query.bind(*id);
        }
        Ok(query.fetch_one(&self.read).await?)
    }

    /// Saved GLUE versions of a job, newest first (by when they were saved: versions
    /// imported from XXL-JOB keep their own times).
    pub async fn glue_versions(&self, job_id: i64, limit: i64) -> StoreResult<Vec<GlueVersion>> {
        let q = self.sql(
            "SELECT id, glue_type, glue_source, author, remark, created_at FROM glue_version WHERE job_id = ? \
             ORDER BY created_at DESC, id DESC LIMIT ?",
        );
        let all = sqlx::query(&q).bind(job_id).bind(limit).fetch_all(&self.read).await?;
        all.iter()
            .map(|r| Ok(from_row!(r => GlueVersion { id, glue_type, glue_source, author, remark, created_at })))
            .collect()
    }

    /// Deletes finished runs (success, failed, skipped) created before `before`, of one job or
    /// one group when given, with their stored logs and alarm deliveries. Returns how many.
    pub async fn clear_finished_runs(
        &self,
        before: i64,
        job_id: Option<i64>,
        group_id: Option<i64>,
    ) -> StoreResult<u64> {
        let mut sql =
            String::from("DELETE FROM run WHERE created_at < ? AND (handle_code <> 0 OR trigger_code NOT IN (0, 200))");
        if job_id.is_some() {
            sql.push_str(" AND job_id = ?");
        }
        if group_id.is_some() {
            sql.push_str(" AND group_id = ?");
        }
        let q = self.sql(&sql).into_owned();
        let mut query = sqlx::query(&q).bind(before.min(now_ms()));
        for v in [job_id, group_id].into_iter().flatten() {
            query = query.bind(v);
        }
        let deleted = query.execute(&self.write).await?.rows_affected();
        if deleted > 0 {
            self.delete_orphan_run_logs().await?;
            for table in ["alarm_delivery", "alarm_run_event"] {
                let q =
                    format!("DELETE FROM {table} WHERE NOT EXISTS (SELECT 1 FROM run WHERE run.id = {table}.run_id)");
                sqlx::query(&q).execute(&self.write).await?;
            }
        }
        Ok(deleted)
    }
}
