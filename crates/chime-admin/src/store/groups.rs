//! Executor groups.

use super::rows::{self, GROUP_COLUMNS};
use super::{Store, StoreError, StoreResult};
use crate::model::{now_ms, Group, GroupDraft, Invalid};
use std::collections::HashMap;

fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.is_unique_violation())
}

impl Store {
    /// Creates a group; the app name must be new.
    pub async fn insert_group(&self, draft: &GroupDraft) -> StoreResult<Group> {
        let now = now_ms();
        let row = self.insert_group_row(&self.write, draft, now).await.map_err(|e| {
            if is_unique_violation(&e) {
                StoreError::Invalid(Invalid::new(
                    "app_name",
                    format!("a group '{}' already exists", draft.app_name),
                ))
            } else {
                e.into()
            }
        })?;
        let id = rows::int(&row, 0)?;
        self.group(id).await
    }

    /// Replaces a group's fields.
    pub async fn update_group(&self, id: i64, draft: &GroupDraft) -> StoreResult<Group> {
        let done = self
            .update_group_row(&self.write, id, draft, now_ms())
            .await
            .map_err(|e| {
                if is_unique_violation(&e) {
                    StoreError::Invalid(Invalid::new(
                        "app_name",
                        format!("a group '{}' already exists", draft.app_name),
                    ))
                } else {
                    e.into()
                }
            })?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("group {id}")));
        }
        self.group(id).await
    }

    /// Inserts a group's row, on the pool or inside a transaction (jobs as code); returns the
    /// row holding the new id.
    pub(super) async fn insert_group_row<'e, E>(
        &self,
        db: E,
        draft: &GroupDraft,
        now: i64,
    ) -> Result<sqlx::any::AnyRow, sqlx::Error>
    where
        E: sqlx::Executor<'e, Database = sqlx::Any>,
    {
        let q = self.sql(
            "INSERT INTO executor_group (app_name, title, address_type, address_list, protocol, access_token, \
             insecure_no_token, keep_logs, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
             RETURNING id",
        );
        sqlx::query(&q)
            .bind(&draft.app_name)
            .bind(&draft.title)
            .bind(draft.address_type.code())
            .bind(draft.addresses.join(","))
            .bind(draft.protocol.as_str())
            .bind(draft.access_token.as_deref())
            .bind(i64::from(draft.insecure_no_token))
            .bind(i64::from(draft.keep_logs))
            .bind(now)
            .bind(now)
            .fetch_one(db)
            .await
    }

    /// Replaces the fields of group `id` with `draft`'s, on the pool or inside a transaction.
    pub(super) async fn update_group_row<'e, E>(
        &self,
        db: E,
        id: i64,
        draft: &GroupDraft,
        now: i64,
    ) -> Result<sqlx::any::AnyQueryResult, sqlx::Error>
    where
        E: sqlx::Executor<'e, Database = sqlx::Any>,
    {
        let q = self.sql(
            "UPDATE executor_group SET app_name = ?, title = ?, address_type = ?, address_list = ?, protocol = ?, \
             access_token = ?, insecure_no_token = ?, keep_logs = ?, updated_at = ? WHERE id = ?",
        );
        sqlx::query(&q)
            .bind(&draft.app_name)
            .bind(&draft.title)
            .bind(draft.address_type.code())
            .bind(draft.addresses.join(","))
            .bind(draft.protocol.as_str())
            .bind(draft.access_token.as_deref())
            .bind(i64::from(draft.insecure_no_token))
            .bind(i64::from(draft.keep_logs))
            .bind(now)
            .bind(id)
            .execute(db)
            .await
    }

    /// Deletes a group that no job uses.
    pub async fn delete_group(&self, id: i64) -> StoreResult<()> {
        let mut tx = self.write.begin().await?;
        let q = self.sql("SELECT COUNT(*) AS n FROM job WHERE group_id = ?");
        let n = rows::int(&sqlx::query(&q).bind(id).fetch_one(&mut *tx).await?, "n")?;
        if n > 0 {
            return Err(StoreError::Conflict(format!(
                "group {id} still has {n} job(s); delete or move them first"
            )));
        }
        let q = self.sql("DELETE FROM executor_group WHERE id = ?");
        let done = sqlx::query(&q).bind(id).execute(&mut *tx).await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("group {id}")));
        }
        tx.commit().await?;
        Ok(())
    }

    /// One group by id.
    pub async fn group(&self, id: i64) -> StoreResult<Group> {
        let q = self
            .sql(&format!("SELECT {GROUP_COLUMNS} FROM executor_group WHERE id = ?"))
            .into_owned();
        let row = sqlx::query(&q).bind(id).fetch_optional(&self.read).await?;
        match row {
            Some(r) => Ok(rows::group(&r)?),
            None => Err(StoreError::NotFound(format!("group {id}"))),
        }
    }

    /// One group by app name.
    pub async fn group_by_app_name(&self, app_name: &str) -> StoreResult<Option<Group>> {
        let q = self
            .sql(&format!(
                "SELECT {GROUP_COLUMNS} FROM executor_group WHERE app_name = ?"
            ))
            .into_owned();
        let row = sqlx::query(&q).bind(app_name).fetch_optional(&self.read).await?;
        Ok(row.map(|r| rows::group(&r)).transpose()?)
    }

    /// The group of each of `run_ids` that exists: run id → group id (checking whose runs a
    /// callback reports on).
    pub async fn groups_of_runs(&self, run_ids: &[i64]) -> StoreResult<HashMap<i64, i64>> {
        let sql = "SELECT id, group_id FROM run WHERE id IN ({in})";
        self.read_in(sql, run_ids, &[])
            .await?
            .iter()
            .map(|r| Ok((rows::int(r, "id")?, rows::int(r, "group_id")?)))
            .collect()
    }

    /// Every group, by id.
    pub async fn list_groups(&self) -> StoreResult<Vec<Group>> {
        let q = format!("SELECT {GROUP_COLUMNS} FROM executor_group ORDER BY id");
        let all = sqlx::query(&q).fetch_all(&self.read).await?;
        Ok(all.iter().map(rows::group).collect::<Result<_, _>>()?)
    }
}
