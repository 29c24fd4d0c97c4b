//! Limits on running runs (`concurrency_limit`): a name, how many runs may hold a slot of it at
//! once, how many may start per second or minute, and how long a run may wait for it. The
//! slots and the queue are the runs' (`store/runs/queue.rs`).

use super::{rows, Store, StoreResult};
use crate::api::LimitRule;

/// A limit as stored, with its rate's current window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredLimit {
    /// Its name: a concurrency key, `group:<app_name>` or `executor:<address>`.
    pub name: String,
    /// What it allows.
    pub rule: LimitRule,
    /// When the rate's current window began, epoch ms.
    pub window_start: i64,
    /// Runs started in that window.
    pub window_count: i64,
}

impl StoredLimit {
    /// The start of the rate's window that holds `now`.
    pub fn window_at(&self, now: i64) -> i64 {
        now - now.rem_euclid(self.rule.rate_period_ms.max(1))
    }

    /// How many runs started under its rate in the window that holds `now`.
    pub fn started_at(&self, now: i64) -> i64 {
        if self.window_start == self.window_at(now) {
            self.window_count
        } else {
            0
        }
    }

    /// How many more runs may start under its rate at `now` (`i64::MAX` without a rate).
    pub fn rate_room(&self, now: i64) -> i64 {
        if self.rule.rate_max <= 0 {
            return i64::MAX;
        }
        (self.rule.rate_max - self.started_at(now)).max(0)
    }
}

/// A limit with what it holds now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitUsage {
    /// Its name.
    pub name: String,
    /// What it allows.
    pub rule: LimitRule,
    /// How many runs hold a slot of it now.
    pub running: i64,
    /// How many runs wait in the queue on it.
    pub queued: i64,
    /// Last change, epoch ms.
    pub updated_at: i64,
}

/// The columns [`limit_row`] reads.
const LIMIT_COLUMNS: &str = "name, max_running, rate_max, rate_period_ms, queue_timeout_ms, window_start, window_count";

/// A [`LIMIT_COLUMNS`] row.
pub(super) fn limit_row(r: &sqlx::any::AnyRow) -> Result<StoredLimit, sqlx::Error> {
    Ok(StoredLimit {
        name: rows::text(r, "name")?,
        rule: LimitRule {
            max_running: rows::int(r, "max_running")?,
            rate_max: rows::int(r, "rate_max")?,
            rate_period_ms: rows::int(r, "rate_period_ms")?,
            queue_timeout_ms: rows::int(r, "queue_timeout_ms")?,
        },
        window_start: rows::int(r, "window_start")?,
        window_count: rows::int(r, "window_count")?,
    })
}

impl Store {
    /// Every limit, by name.
    pub async fn limits(&self) -> StoreResult<Vec<StoredLimit>> {
        let q = format!("SELECT {LIMIT_COLUMNS} FROM concurrency_limit ORDER BY name");
        let all = sqlx::query(&q).fetch_all(&self.read).await?;
        Ok(all.iter().map(limit_row).collect::<Result<_, _>>()?)
    }

    /// The `SELECT … FROM concurrency_limit` of the limits named by `names` placeholders, in
    /// the order of their names, locked for the caller's transaction where the engine locks.
    pub(super) fn locked_limits_sql(&self, names: usize) -> String {
        let list = vec!["?"; names].join(", ");
        let lock = self.backend.for_update();
        self.sql_text(format!(
            "SELECT {LIMIT_COLUMNS} FROM concurrency_limit WHERE name IN ({list}) ORDER BY name{lock}"
        ))
    }

    /// Every limit with its running and queued runs, by name.
    pub async fn limit_usage(&self) -> StoreResult<Vec<LimitUsage>> {
        let q = "SELECT l.name AS name, l.max_running AS max_running, l.rate_max AS rate_max, \
                 l.rate_period_ms AS rate_period_ms, l.queue_timeout_ms AS queue_timeout_ms, \
                 l.window_start AS window_start, l.window_count AS window_count, l.updated_at AS updated_at, \
                 (SELECT COUNT(*) FROM concurrency_slot s WHERE s.name = l.name) AS running, \
                 (SELECT COUNT(*) FROM run_queue q WHERE q.waits_on = l.name) AS queued \
                 FROM concurrency_limit l ORDER BY l.name";
        let all = sqlx::query(q).fetch_all(&self.read).await?;
        all.iter()
            .map(|r| {
                let limit = limit_row(r)?;
                Ok(LimitUsage {
                    name: limit.name,
                    rule: limit.rule,
                    running: rows::int(r, "running")?,
                    queued: rows::int(r, "queued")?,
                    updated_at: rows::int(r, "updated_at")?,
                })
            })
            .collect()
    }

    /// Sets limit `name` to `rule`, creating it if needed; true when it was created.
    pub async fn put_limit(&self, name: &str, rule: &LimitRule, now: i64) -> StoreResult<bool> {
        let update = self.sql(
            "UPDATE concurrency_limit SET max_running = ?, rate_max = ?, rate_period_ms = ?, queue_timeout_ms = ?, \
             updated_at = ? WHERE name = ?",
        );
        let set = || {
            sqlx::query(&update)
                .bind(rule.max_running)
                .bind(rule.rate_max)
                .bind(rule.rate_period_ms)
                .bind(rule.queue_timeout_ms)
                .bind(now)
                .bind(name)
        };
        if set().execute(&self.write).await?.rows_affected() > 0 {
            return Ok(false);
        }
        let (prefix, suffix) = self.backend.insert_ignore();
        let insert = self.sql_text(format!(
            "{prefix} INTO concurrency_limit (name, max_running, rate_max, rate_period_ms, queue_timeout_ms, \
             created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?){suffix}"
        ));
        let inserted = sqlx::query(&insert)
            .bind(name)
            .bind(rule.max_running)
            .bind(rule.rate_max)
            .bind(rule.rate_period_ms)
            .bind(rule.queue_timeout_ms)
            .bind(now)
            .bind(now)
            .execute(&self.write)
            .await?;
        if inserted.rows_affected() > 0 {
            return Ok(true);
        }
        // Created by another caller between the two statements: set it as asked.
        set().execute(&self.write).await?;
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
