//! The audit log: who changed what through the REST API or the console, and who tried to and
//! was refused.

use super::filter::{like_pattern, Filtered};
use super::rounds::{Rounds, Waiting};
use super::rows::from_row;
use super::{rows, Store, StoreResult};
use serde::Serialize;
use sqlx::any::Any;
use sqlx::Transaction;

/// Audit entries waiting for their round's commit.
pub(super) type PendingAudit = Rounds<AuditRequest>;

/// An entry waiting for its round.
pub(super) type AuditRequest = Waiting<NewAuditEntry, StoreResult<()>>;

/// Rows of one insert: 5 values each, well inside every database's limit on bound values.
const AUDIT_ROWS_PER_INSERT: usize = 100;

/// An entry to append: on its own ([`Store::insert_audit`]) or in the transaction of the change
/// it records (a job's create, [`Store::insert_job_audited`]).
#[derive(Debug, Clone)]
pub struct NewAuditEntry {
    at: i64,
    username: String,
    action: String,
    target: String,
    detail: String,
}

impl NewAuditEntry {
    /// An entry written at `at` (epoch ms): who, what (`METHOD /pattern`), on which path, and
    /// its detail (JSON text).
    pub fn new(at: i64, username: &str, action: &str, target: &str, detail: &str) -> NewAuditEntry {
        NewAuditEntry {
            at,
            username: username.to_owned(),
            action: action.to_owned(),
            target: target.to_owned(),
            detail: detail.to_owned(),
        }
    }
}

/// Which entries to list.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    /// Only this user (exact name).
    pub username: Option<String>,
    /// Only actions containing this text, in any case (e.g. `jobs`, `login failed`).
    pub action: Option<String>,
    /// Only entries at or after this time, epoch ms.
    pub from: Option<i64>,
    /// Only entries before this time, epoch ms.
    pub to: Option<i64>,
    /// Only entries with an id below this (paging backwards).
    pub before_id: Option<i64>,
    /// At most this many (newest first).
    pub limit: i64,
}

/// One recorded change or refused attempt.
#[derive(Debug, Clone, Serialize)]
pub struct AuditEntry {
    /// Id.
    pub id: i64,
    /// When, epoch ms.
    pub at: i64,
    /// Who (`api-token` for the bearer token).
    pub username: String,
    /// What, e.g. `PUT /v1/jobs/{id}`.
    pub action: String,
    /// The path acted on, e.g. `/v1/jobs/7`.
    pub target: String,
    /// JSON: status and the request body with secrets removed.
    pub detail: serde_json::Value,
}

impl Store {
    /// Appends an entry on `db`: the pool, or a transaction, so the entry is written with the
    /// change it records or not at all (apply, import).
    pub(super) async fn insert_audit_on<'e, E>(
        &self,
        db: E,
        at: i64,
        username: &str,
        action: &str,
        target: &str,
        detail: &str,
    ) -> StoreResult<()>
    where
        E: sqlx::Executor<'e, Database = sqlx::Any>,
    {
        let q = self.sql("INSERT INTO audit_log (at, username, action, target, detail) VALUES (?, ?, ?, ?, ?)");
        sqlx::query(&q)
            .bind(at)
            .bind(username)
            .bind(action)
            .bind(target)
            .bind(detail)
            .execute(db)
            .await?;
        Ok(())
    }

    /// Appends an entry. Entries written at the same moment (every change through the API
    /// writes one) share one insert and one commit: the first starts the round (see
    /// `rounds.rs`), and each caller waits for its own entry.
    pub async fn insert_audit(
        &self,
        at: i64,
        username: &str,
        action: &str,
        target: &str,
        detail: &str,
    ) -> StoreResult<()> {
        let entry = NewAuditEntry::new(at, username, action, target, detail);
        self.join_round(&self.pending_audit, entry, Store::commit_pending_audit)
            .await
    }

    /// One round of audit entries: one multi-row insert per chunk, one commit. When it fails,
    /// each entry is written alone, so each caller gets its own result.
    async fn commit_pending_audit(self) {
        let (tx, batch) = self.begin_round(&self.pending_audit).await;
        let written = match tx {
            Ok(mut tx) => match self
                .insert_audit_rows(&mut tx, batch.iter().map(|entry| &entry.request))
                .await
            {
                Ok(()) => tx.commit().await.is_ok(),
                Err(_) => false,
            },
            Err(_) => false,
        };
        for entry in batch {
            let result = if written {
                Ok(())
            } else {
                let e = &entry.request;
                self.insert_audit_on(&self.write, e.at, &e.username, &e.action, &e.target, &e.detail)
                    .await
            };
            entry.answer(result);
        }
    }

    /// Writes `entries` in `tx`, one multi-row insert per chunk.
    pub(super) async fn insert_audit_rows<'a>(
        &self,
        tx: &mut Transaction<'static, Any>,
        entries: impl Iterator<Item = &'a NewAuditEntry>,
    ) -> StoreResult<()> {
        let entries: Vec<&NewAuditEntry> = entries.collect();
        for chunk in entries.chunks(AUDIT_ROWS_PER_INSERT) {
            let rows = vec!["(?, ?, ?, ?, ?)"; chunk.len()].join(", ");
            let sql = format!("INSERT INTO audit_log (at, username, action, target, detail) VALUES {rows}");
            let q = self.sql(&sql);
            let mut query = sqlx::query(&q);
            for e in chunk {
                query = query
                    .bind(e.at)
                    .bind(e.username.as_str())
                    .bind(e.action.as_str())
                    .bind(e.target.as_str())
                    .bind(e.detail.as_str());
            }
            query.execute(&mut **tx).await?;
        }
        Ok(())
    }

    /// Deletes entries recorded before `cutoff` (epoch ms), `batch` per statement so the
    /// scheduler's writes get through in between; returns how many. Refused attempts are
    /// recorded too, so without this a user could grow the table without bound.
    pub async fn delete_audit_before(&self, cutoff: i64, batch: i64) -> StoreResult<u64> {
        // `audit_log_at` indexes `at`; the ids are read first because MariaDB and PostgreSQL
        // disagree on DELETE … LIMIT.
        let select = self
            .sql("SELECT id FROM audit_log WHERE at < ? ORDER BY at LIMIT ?")
            .into_owned();
        let mut deleted = 0;
        loop {
            let ids: Vec<i64> = sqlx::query(&select)
                .bind(cutoff)
                .bind(batch.max(1))
                .fetch_all(&self.read)
                .await?
                .iter()
                .map(|r| rows::int(r, "id"))
                .collect::<Result<_, _>>()?;
            if ids.is_empty() {
                return Ok(deleted);
            }
            deleted += self
                .write_in("DELETE FROM audit_log WHERE id IN ({in})", &ids, &[])
                .await?;
            if (ids.len() as i64) < batch.max(1) {
                return Ok(deleted);
            }
            tokio::task::yield_now().await;
        }
    }

    /// Entries matching `f`, newest first.
    pub async fn list_audit(&self, f: &AuditFilter) -> StoreResult<Vec<AuditEntry>> {
        let mut sql = Filtered::new("SELECT id, at, username, action, target, detail FROM audit_log");
        sql.push(" WHERE id < ?", [f.before_id.unwrap_or(i64::MAX)]);
        sql.and(" AND username = ?", f.username.as_ref());
        // LOWER on both sides: LIKE is case-insensitive on SQLite and MariaDB but not PostgreSQL.
        // '!' escapes LIKE's wildcards in the user's text (a backslash would mean different things per engine).
        sql.and(
            " AND LOWER(action) LIKE ? ESCAPE '!'",
            f.action.as_deref().map(like_pattern),
        );
        sql.and(" AND at >= ?", f.from);
        sql.and(" AND at < ?", f.to);
        sql.push(" ORDER BY id DESC LIMIT ?", [f.limit]);
        let q = self.sql(sql.text()).into_owned();
        let all = sql.bind(&q).fetch_all(&self.read).await?;
        all.iter()
            .map(|r| {
                let detail = rows::text(r, "detail")?;
                Ok(from_row!(r => AuditEntry {
                    id, at, username, action, target,
                    detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::String(detail)),
                }))
            })
            .collect()
    }
}
