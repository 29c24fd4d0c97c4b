//! Limits on running runs (`concurrency_limit`): a name and how many runs may hold a slot of
//! it at once. The slots and the queue are the runs' (`store/runs/queue.rs`).

use super::{rows, Store, StoreResult};

/// A limit with what it holds now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitUsage {
    /// Its name: a concurrency key, `group:<app_name>` or `executor:<address>`.
    pub name: String,
    /// How many runs may hold one of its slots at once.
    pub max_running: i64,
    /// How many do now.
    pub running: i64,
    /// How many runs wait in the queue on it.
    pub queued: i64,
    /// Last change, epoch ms.
    pub updated_at: i64,
}

impl Store {
    /// Every limit's name and maximum, by name.
    pub async fn limits(&self) -> StoreResult<Vec<(String, i64)>> {
        let q = "SELECT name, max_running FROM concurrency_limit ORDER BY name";
        let all = sqlx::query(q).fetch_all(&self.read).await?;
        all.iter()
            .map(|r| Ok((rows::text(r, "name")?, rows::int(r, "max_running")?)))
            .collect()
    }

    /// Every limit with its running and queued runs, by name.
    pub async fn limit_usage(&self) -> StoreResult<Vec<LimitUsage>> {
        let q = "SELECT l.name AS name, l.max_running AS max_running, l.updated_at AS updated_at, \
                 (SELECT COUNT(*) FROM concurrency_slot s WHERE s.name = l.name) AS running, \
                 (SELECT COUNT(*) FROM run_queue q WHERE q.waits_on = l.name) AS queued \
                 FROM concurrency_limit l ORDER BY l.name";
        let all = sqlx::query(q).fetch_all(&self.read).await?;
        all.iter()
            .map(|r| {
                Ok(LimitUsage {
                    name: rows::text(r, "name")?,
                    max_running: rows::int(r, "max_running")?,
                    running: rows::int(r, "running")?,
                    queued: rows::int(r, "queued")?,
                    updated_at: rows::int(r, "updated_at")?,
                })
            })
            .collect()
    }

    /// Sets limit `name` to `max_running`, creating it if needed; true when it was created.
    pub async fn put_limit(&self, name: &str, max_running: i64, now: i64) -> StoreResult<bool> {
        let update = self.sql("UPDATE concurrency_limit SET max_running = ?, updated_at = ? WHERE name = ?");
        let changed = sqlx::query(&update)
            .bind(max_running)
            .bind(now)
            .bind(name)
            .execute(&self.write)
            .await?;
        if changed.rows_affected() > 0 {
            return Ok(false);
        }
        let (prefix, suffix) = self.backend.insert_ignore();
        let insert = self.sql_text(format!(
            "{prefix} INTO concurrency_limit (name, max_running, created_at, updated_at) VALUES (?, ?, ?, ?){suffix}"
        ));
        let inserted = sqlx::query(&insert)
            .bind(name)
            .bind(max_running)
            .bind(now)
            .bind(now)
            .execute(&self.write)
            .await?;
        if inserted.rows_affected() > 0 {
            return Ok(true);
        }
        // Created by another caller between the two statements: set it as asked.
        sqlx::query(&update)
            .bind(max_running)
            .bind(now)
            .bind(name)
            .execute(&self.write)
            .await?;
        Ok(false)
    }

    /// Deletes limit `name`; false when there was none. Runs waiting only on it go on at the
    /// queue's next round; the slots taken under it are given back as their runs end.
    pub async fn delete_limit(&self, name: &str) -> StoreResult<bool> {
        let q = self.sql("DELETE FROM concurrency_limit WHERE name = ?");
        let done = sqlx::query(&q).bind(name).execute(&self.write).await?;
        Ok(done.rows_affected() > 0)
    }
}
