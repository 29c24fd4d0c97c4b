//! Silence windows of alarms (`alarm_silence`). Whether a window is in force is computed in
//! Rust ([`crate::silence`]): the store only finds the windows of a job and its group.

use super::rows;
use super::{Store, StoreError, StoreResult};
use crate::model::{AlarmSilence, SilenceDraft};
use sqlx::any::AnyRow;

/// A stored silence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSilence {
    /// Silence id.
    pub id: i64,
    /// Its settings.
    pub draft: SilenceDraft,
    /// Who created it (the caller's user name, `api-token` for the API token).
    pub created_by: String,
    /// Creation time, epoch ms.
    pub created_at: i64,
}

impl StoredSilence {
    /// The silence as the API shows it at `now` (epoch ms).
    pub fn shown(&self, now: i64) -> AlarmSilence {
        self.draft.shown(self.id, &self.created_by, self.created_at, now)
    }
}

const SILENCE_COLUMNS: &str =
    "id, name, reason, group_id, job_id, starts_at, ends_at, cron, duration_secs, time_zone, created_by, created_at";

fn silence(row: &AnyRow) -> Result<StoredSilence, sqlx::Error> {
    Ok(StoredSilence {
        id: rows::int(row, "id")?,
        draft: SilenceDraft {
            name: rows::text(row, "name")?,
            reason: rows::text(row, "reason")?,
            group_id: rows::int(row, "group_id")?,
            job_id: rows::int(row, "job_id")?,
            starts_at: rows::int(row, "starts_at")?,
            ends_at: rows::int(row, "ends_at")?,
            cron: rows::text(row, "cron")?,
            duration_secs: rows::int(row, "duration_secs")?,
            time_zone: rows::text(row, "time_zone")?,
        },
        created_by: rows::text(row, "created_by")?,
        created_at: rows::int(row, "created_at")?,
    })
}

impl Store {
    /// Every silence, by id.
    pub async fn alarm_silences(&self) -> StoreResult<Vec<StoredSilence>> {
        self.read_all(
            &format!("SELECT {SILENCE_COLUMNS} FROM alarm_silence ORDER BY id"),
            silence,
        )
        .await
    }

    /// The silence `id`.
    pub async fn alarm_silence(&self, id: i64) -> StoreResult<StoredSilence> {
        let select = format!("SELECT {SILENCE_COLUMNS} FROM alarm_silence WHERE id = ?");
        self.read_by_id(&select, id, "alarm silence", silence).await
    }

    /// Creates a silence, by `created_by` at `now`; answers it as stored, read from the writing
    /// pool (on SQLite a reader might not see the commit yet).
    pub async fn insert_alarm_silence(
        &self,
        draft: &SilenceDraft,
        created_by: &str,
        now: i64,
    ) -> StoreResult<StoredSilence> {
        let q = self.sql(
            "INSERT INTO alarm_silence (name, reason, group_id, job_id, starts_at, ends_at, cron, duration_secs, \
             time_zone, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        );
        let mut conn = self.write.acquire().await?;
        let row = sqlx::query(&q)
            .bind(&draft.name)
            .bind(&draft.reason)
            .bind(draft.group_id)
            .bind(draft.job_id)
            .bind(draft.starts_at)
            .bind(draft.ends_at)
            .bind(&draft.cron)
            .bind(draft.duration_secs)
            .bind(&draft.time_zone)
            .bind(crate::model::cut_chars(created_by, 64))
            .bind(now)
            .fetch_one(&mut *conn)
            .await?;
        let id = rows::int(&row, 0)?;
        let select = format!("SELECT {SILENCE_COLUMNS} FROM alarm_silence WHERE id = ?");
        self.row_by_id(&mut conn, &select, id, "alarm silence", silence).await
    }

    /// Deletes silence `id`; 404 when there is none.
    pub async fn delete_alarm_silence(&self, id: i64) -> StoreResult<()> {
        let q = self.sql("DELETE FROM alarm_silence WHERE id = ?");
        let done = sqlx::query(&q).bind(id).execute(&self.write).await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("alarm silence {id}")));
        }
        Ok(())
    }

    /// The silences of job `job_id` and of group `group_id` that may be in force at `now`:
    /// every recurring one and the one-off ones whose window holds `now`, by id. One query by
    /// the two indexes, on the writing pool: a silence created a moment ago must count.
    pub async fn silences_covering(&self, job_id: i64, group_id: i64, now: i64) -> StoreResult<Vec<StoredSilence>> {
        let q = self.sql_text(format!(
            "SELECT {SILENCE_COLUMNS} FROM alarm_silence WHERE (job_id = ? OR group_id = ?) \
                 AND (cron <> '' OR (starts_at <= ? AND ends_at > ?)) ORDER BY id"
        ));
        // 0 stands for "none" in both columns: a run without a job or group matches nothing.
        let or_none = |id: i64| if id > 0 { id } else { -1 };
        let found = sqlx::query(&q)
            .bind(or_none(job_id))
            .bind(or_none(group_id))
            .bind(now)
            .bind(now)
            .fetch_all(&self.write)
            .await?;
        Ok(found.iter().map(silence).collect::<Result<_, _>>()?)
    }
}
