//! Executor heartbeats (`/api/registry`).

use super::bulk::{bound, Arg};
use super::rows;
use super::{Store, StoreResult};

impl Store {
    /// Records a heartbeat of `address` for `app_name` (insert or refresh).
    pub async fn upsert_registry(&self, app_name: &str, address: &str, now: i64) -> StoreResult<()> {
        self.update_or_insert(
            "UPDATE registry SET updated_at = ? WHERE app_name = ? AND address = ?",
            &[Arg::Int(now), Arg::Text(app_name), Arg::Text(address)],
            "registry (app_name, address, updated_at)",
            &[Arg::Text(app_name), Arg::Text(address), Arg::Int(now)],
        )
        .await
    }

    /// Forgets an address (`/api/registryRemove`).
    pub async fn remove_registry(&self, app_name: &str, address: &str) -> StoreResult<()> {
        let q = self.sql("DELETE FROM registry WHERE app_name = ? AND address = ?");
        sqlx::query(&q)
            .bind(app_name)
            .bind(address)
            .execute(&self.write)
            .await?;
        Ok(())
    }

    /// Heartbeats newer than `since`: `(app name, address, last heartbeat)`.
    pub async fn live_registry(&self, since: i64) -> StoreResult<Vec<(String, String, i64)>> {
        let q = self
            .sql("SELECT app_name, address, updated_at FROM registry WHERE updated_at > ? ORDER BY app_name, address");
        let all = sqlx::query(&q).bind(since).fetch_all(&self.read).await?;
        all.iter()
            .map(|r| {
                Ok((
                    rows::text(r, "app_name")?,
                    rows::text(r, "address")?,
                    rows::int(r, "updated_at")?,
                ))
            })
            .collect()
    }

    /// Deletes the row of `address` in `app_name` if its last heartbeat is still `updated_at`
    /// (an executor judged dead as read): a heartbeat written since, by any admin, keeps it.
    /// True when deleted.
    pub async fn delete_registry_row(&self, app_name: &str, address: &str, updated_at: i64) -> StoreResult<bool> {
        let q = self.sql("DELETE FROM registry WHERE app_name = ? AND address = ? AND updated_at = ?");
        let args = [Arg::Text(app_name), Arg::Text(address), Arg::Int(updated_at)];
        let done = bound(&q, &args).execute(&self.write).await?;
        Ok(done.rows_affected() == 1)
    }
}
