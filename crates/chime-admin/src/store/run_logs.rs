//! Run logs kept by the admin (`run_log`): the log a Chime executor sent once a run ended, so
//! that it can be read after the executor is gone. Deleted with their run (retention, clearing).

use super::rows;
use super::{Store, StoreResult};
use crate::model::now_ms;

/// What a run's log may be stored for: the run's group, and whether that group keeps logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogTarget {
    /// The run's group.
    pub group_id: i64,
    /// The group's `keep_logs` setting.
    pub keep_logs: bool,
}

/// A run's log as the admin keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredLog {
    /// The log's text: the whole log, or its end when `truncated`.
    pub content: String,
    /// The start of the log was cut off to fit the cap.
    pub truncated: bool,
    /// The whole log's size in bytes, as the executor counted it.
    pub total_bytes: i64,
    /// When it was stored, epoch ms.
    pub stored_at: i64,
}

impl Store {
    /// The run's group and state for storing its log; `None` when the run does not exist.
    pub async fn run_log_target(&self, run_id: i64) -> StoreResult<Option<LogTarget>> {
        let q = self.sql(
            "SELECT r.group_id AS group_id, g.keep_logs AS keep_logs \
             FROM run r JOIN executor_group g ON g.id = r.group_id WHERE r.id = ?",
        );
        let row = sqlx::query(&q).bind(run_id).fetch_optional(&self.read).await?;
        row.map(|r| {
            Ok(LogTarget {
                group_id: rows::int(&r, "group_id")?,
                keep_logs: rows::int(&r, "keep_logs")? != 0,
            })
        })
        .transpose()
    }

    /// Stores (or replaces) a run's log. The caller bounds `content`. Nothing is stored for a
    /// run that no longer exists (deleted in the meantime).
    pub async fn put_run_log(
        &self,
        run_id: i64,
        content: &str,
        truncated: bool,
        total_bytes: i64,
    ) -> StoreResult<bool> {
        let mut tx = self.write.begin().await?;
        let q = self.sql("DELETE FROM run_log WHERE run_id = ?");
        sqlx::query(&q).bind(run_id).execute(&mut *tx).await?;
        let q = self.sql(
            "INSERT INTO run_log (run_id, content, truncated, total_bytes, stored_at) \
             SELECT id, ?, ?, ?, ? FROM run WHERE id = ?",
        );
        let done = sqlx::query(&q)
            .bind(content)
            .bind(i64::from(truncated))
            .bind(total_bytes)
            .bind(now_ms())
            .bind(run_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(done.rows_affected() > 0)
    }

    /// A run's stored log, if it has one.
    pub async fn stored_run_log(&self, run_id: i64) -> StoreResult<Option<StoredLog>> {
        let q = self.sql("SELECT content, truncated, total_bytes, stored_at FROM run_log WHERE run_id = ?");
        let row = sqlx::query(&q).bind(run_id).fetch_optional(&self.read).await?;
        row.map(|r| {
            Ok(StoredLog {
                content: rows::text(&r, "content")?,
                truncated: rows::int(&r, "truncated")? != 0,
                total_bytes: rows::int(&r, "total_bytes")?,
                stored_at: rows::int(&r, "stored_at")?,
            })
        })
        .transpose()
    }

    /// Deletes the stored logs whose run is gone (after runs were deleted in bulk).
    pub(super) async fn delete_orphan_run_logs(&self) -> StoreResult<u64> {
        let q = "DELETE FROM run_log WHERE NOT EXISTS (SELECT 1 FROM run WHERE run.id = run_log.run_id)";
        Ok(sqlx::query(q).execute(&self.write).await?.rows_affected())
    }
}
