//! Creating runs: scheduled fires (claimed by `claim`), manual runs, extra shards, and the
//! retries and child runs that results cause.

use super::{ticket, TICKET_COLUMNS};
use crate::model::now_ms;
use crate::run::{NewRun, RunTicket};
use crate::store::bulk::sized_query;
use crate::store::rows;
use crate::store::sqlite_ids::{IdCursor, Inserted, KNOWN_IDS};
use crate::store::{Backend, Store, StoreResult};
use sqlx::any::{Any, AnyArguments};
use sqlx::query::Query;
use sqlx::Transaction;
use std::collections::HashMap;

impl Store {
    /// Inserts run rows in one statement per chunk; rows whose `(job_id, fire_key)` already
    /// exists are skipped. Returns the tickets of the rows actually inserted (pending only).
    pub(in crate::store) async fn insert_runs_tx(
        &self,
        tx: &mut Transaction<'static, Any>,
        runs: &[NewRun],
    ) -> StoreResult<Vec<RunTicket>> {
        self.insert_linked_runs_tx(tx, runs, &[]).await
    }

    /// [`Store::insert_runs_tx`], where `retry_of[i]` is the failed run that `runs[i]` retries
    /// (0, or missing at the end: not a retry).
    pub(super) async fn insert_linked_runs_tx(
        &self,
        tx: &mut Transaction<'static, Any>,
        runs: &[NewRun],
        retry_of: &[i64],
    ) -> StoreResult<Vec<RunTicket>> {
        let now = now_ms();
        let (prefix, suffix) = self.backend.insert_ignore();
        let mut out = Vec::with_capacity(runs.len());
        let mut cursor = IdCursor::new("run");
        for (at, chunk) in self.backend.insert_slices(runs, 400) {
            let links = retry_of.get(at..).unwrap_or_default();
            let links = &links[..links.len().min(chunk.len())];
            // Only a chunk with a retry in it names the column; the others take its default.
            let links: &[i64] = if links.iter().any(|l| *l != 0) { links } else { &[] };
            // So too with upstream results and a run's own flow: only workflow nodes' runs have them.
            let node = chunk
                .iter()
                .any(|r| !r.payload.upstream.is_empty() || !r.payload.flow.is_empty());
            let mut sql = insert_sql(prefix, chunk.len(), !links.is_empty(), node);
            sql.push_str(suffix);
            if self.backend == Backend::Sqlite {
                // As for fires (`inserted_ids_sqlite`): the ids are known (`store/sqlite_ids.rs`),
                // and the tickets come from the values themselves, unless a row was skipped.
                sql.push_str(KNOWN_IDS);
                let q = self.sql(&sql).into_owned();
                let insert = bind_new_runs(&q, chunk, links, node, now);
                let done = self.insert_known_ids(tx, &mut cursor, insert, chunk.len()).await?;
                if let Some(ids) = done.ids {
                    out.extend(
                        chunk
                            .iter()
                            .zip(ids)
                            .filter(|(r, _)| r.trigger_code == 0)
                            .map(|(r, id)| r.ticket(id)),
                    );
                    continue;
                }
                let q = format!("SELECT {TICKET_COLUMNS} FROM run WHERE id > ? ORDER BY id");
                for row in sqlx::query(&q).bind(done.before).fetch_all(&mut **tx).await? {
                    let (t, code) = ticket(&row)?;
                    if code == 0 {
                        out.push(t);
                    }
                }
                continue;
            }
            sql.push_str(" RETURNING ");
            sql.push_str(TICKET_COLUMNS);
            let q = self.sql(&sql).into_owned();
            let query = bind_new_runs(&q, chunk, links, node, now);
            for row in query.fetch_all(&mut **tx).await? {
                let (t, code) = ticket(&row)?;
                if code == 0 {
                    out.push(t);
                }
            }
        }
        Ok(out)
    }

    /// Inserts the runs of scheduled fires (every one has a `fire_key`) and returns the
    /// tickets of the pending ones actually inserted. Only `(id, job_id, fire_key)` comes back
    /// from the database; the rest of each ticket is already known. A fire claimed before
    /// (same `(job_id, fire_key)`) is skipped by the unique key and returns no row.
    pub(super) async fn insert_fires_tx(
        &self,
        tx: &mut Transaction<'static, Any>,
        runs: &[NewRun],
    ) -> StoreResult<Vec<RunTicket>> {
        let now = now_ms();
        let (prefix, suffix) = self.backend.insert_ignore();
        let mut by_key: HashMap<(i64, i64), &NewRun> = HashMap::with_capacity(runs.len());
        for r in runs {
            if let Some(k) = r.fire_key {
                by_key.insert((r.job_id, k), r);
            }
        }
        let mut out = Vec::with_capacity(runs.len());
        let mut cursor = IdCursor::new("run");
        // 1,000 rows × 14 values stays under every engine's bound-parameter limit (SQLite 32,766).
        for (_, chunk) in self.backend.insert_slices(runs, 1000) {
            let mut sql = insert_sql(prefix, chunk.len(), false, false);
            sql.push_str(suffix);
            // SQLite: no RETURNING (see `inserted_ids_sqlite`).
            let returning = self.backend != Backend::Sqlite;
            if returning {
                sql.push_str(" RETURNING id, job_id, fire_key");
            } else {
                sql.push_str(KNOWN_IDS);
            }
            let q = self.sql(&sql).into_owned();
            let query = bind_new_runs(&q, chunk, &[], false, now);
            let inserted: Vec<(i64, i64, i64)> = if returning {
                let mut ids = Vec::with_capacity(chunk.len());
                for row in query.fetch_all(&mut **tx).await? {
                    // By position: MariaDB's RETURNING rows carry no column names through sqlx.
                    ids.push((rows::int(&row, 0)?, rows::int(&row, 1)?, rows::int(&row, 2)?));
                }
                ids
            } else {
                let done = self.insert_known_ids(tx, &mut cursor, query, chunk.len()).await?;
                self.inserted_ids_sqlite(tx, chunk, done).await?
            };
            for (id, job_id, key) in inserted {
                let Some(r) = by_key.get(&(job_id, key)) else { continue };
                if r.trigger_code != 0 {
                    continue;
                }
                out.push(r.ticket(id));
            }
        }
        Ok(out)
    }

    /// `(id, job_id, fire_key)` of the rows a multi-row `INSERT … ON CONFLICT DO NOTHING` of
    /// `chunk` just added on SQLite (`done`).
    ///
    /// When no row was skipped and the last one took the id the counter gave it, the ids are
    /// known (`store/sqlite_ids.rs`), `chunk` in order. Otherwise (a fire claimed twice; a
    /// skipped row may still use up an id) the new rows are read back. `RETURNING` would send
    /// every row through the driver's channel one by one, which at twenty thousand fires a
    /// second was a measurable part of a claim.
    async fn inserted_ids_sqlite(
        &self,
        tx: &mut Transaction<'static, Any>,
        chunk: &[NewRun],
        done: Inserted,
    ) -> StoreResult<Vec<(i64, i64, i64)>> {
        if done.written == 0 {
            return Ok(Vec::new());
        }
        if let Some(ids) = done.ids {
            return Ok(chunk
                .iter()
                .zip(ids)
                .map(|(r, id)| (id, r.job_id, r.fire_key.unwrap_or_default()))
                .collect());
        }
        let found = sqlx::query("SELECT id, job_id, fire_key FROM run WHERE id > ?")
            .bind(done.before)
            .fetch_all(&mut **tx)
            .await?;
        found
            .iter()
            .map(|row| Ok((rows::int(row, 0)?, rows::int(row, 1)?, rows::int(row, 2)?)))
            .collect()
    }

    /// Creates runs (manual triggers, broadcast shards) and returns their tickets.
    pub async fn insert_runs(&self, runs: &[NewRun]) -> StoreResult<Vec<RunTicket>> {
        let mut tx = self.write.begin().await?;
        let out = self.insert_runs_tx(&mut tx, runs).await?;
        tx.commit().await?;
        Ok(out)
    }
}

/// `{prefix} INTO run (…) VALUES` with `rows` rows of placeholders, bound by [`bind_new_runs`];
/// with `retry_of` (a chunk with retries in it) the column `retry_of` too, with `node` (a chunk
/// with workflow nodes' upstream results or own flow) the columns `upstream`, `priority` and
/// `concurrency_key`. Scheduled fires, the busiest inserts, leave all of them to their defaults.
fn insert_sql(prefix: &str, rows: usize, retry_of: bool, node: bool) -> String {
    let (column, value) = if retry_of { ("retry_of, ", "?, ") } else { ("", "") };
    let (node_columns, node_values) = if node {
        ("upstream, priority, concurrency_key, ", "?, ?, ?, ")
    } else {
        ("", "")
    };
    let mut sql = format!(
        "{prefix} INTO run (job_id, group_id, fire_key, scheduled_at, trigger_type, handler, param, shard_index, \
         shard_total, retry_count, lineage, trigger_code, trigger_msg, {column}{node_columns}executor_address, handle_msg, \
         created_at) VALUES "
    );
    let row = format!("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, {value}{node_values}'', '', ?)");
    sql.reserve(rows * (row.len() + 1));
    for i in 0..rows {
        if i > 0 {
            sql.push(',');
        }
        sql.push_str(&row);
    }
    sql
}

/// [`insert_sql`] statement `sql` with the values of `runs` (created at `now`) bound; `retry_of`
/// (one per run, `runs[i]` retrying run `retry_of[i]`, 0: none) when it names that column,
/// empty when it does not; each run's upstream results and own flow when `node` (it names
/// those columns).
fn bind_new_runs<'q>(
    sql: &'q str,
    runs: &'q [NewRun],
    retry_of: &[i64],
    node: bool,
    now: i64,
) -> Query<'q, Any, AnyArguments<'q>> {
    // Texts are bound as `&str`, which the PostgreSQL and MySQL drivers borrow; a bound
    // `&String` is copied (SQLite's driver copies either once, to hand it to its thread).
    let per_run = 14 + usize::from(!retry_of.is_empty()) + 3 * usize::from(node);
    let mut query = sized_query(sql, runs.len() * per_run);
    for (i, r) in runs.iter().enumerate() {
        query = query
            .bind(r.job_id)
            .bind(r.group_id)
            .bind(r.fire_key)
            .bind(r.scheduled_at)
            .bind(r.trigger_type.as_str())
            .bind(r.payload.handler.as_str())
            .bind(r.payload.param.as_str())
            .bind(r.payload.shard_index)
            .bind(r.payload.shard_total)
            .bind(r.payload.retry_count)
            .bind(r.payload.lineage.as_str())
            .bind(r.trigger_code)
            .bind(r.trigger_msg.as_str());
        if !retry_of.is_empty() {
            query = query.bind(retry_of.get(i).copied().unwrap_or(0));
        }
        if node {
            query = query
                .bind(r.payload.upstream.as_str())
                .bind(r.payload.flow.priority)
                .bind(r.payload.flow.concurrency_key.as_deref());
        }
        query = query.bind(now);
    }
    query
}
