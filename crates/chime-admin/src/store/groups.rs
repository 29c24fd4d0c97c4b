//! Executor groups.
//!
//! Every change to a group raises the version in the one-row `group_change` table, in the
//! change's transaction ([`Store::group_change_version`]): each admin reads that version every
//! 500 ms and reloads its groups when it moved, so a group created or changed through one admin
//! is known to the others within about half a second, not at their next full refresh. A counter
//! polled through the database the admins share works on every backend alike; PostgreSQL's
//! LISTEN/NOTIFY would need a connection held open per admin outside the pools (and MariaDB has
//! nothing like it), and a notification missed while that connection is down would be missed
//! for good, where the counter is simply read again.

use super::job_columns::Cell;
use super::rows::{self, GROUP_COLUMNS};
use super::{Store, StoreError, StoreResult};
use crate::model::{now_ms, Group, GroupDraft, Invalid};
use sqlx::AnyConnection;
use std::collections::HashMap;

/// A failed write of `draft`: 400 naming the app name when another group has it.
fn name_taken(e: sqlx::Error, draft: &GroupDraft) -> StoreError {
    StoreError::unique_violation_as(e, || {
        StoreError::Invalid(Invalid::new(
            "app_name",
            format!("a group '{}' already exists", draft.app_name),
        ))
    })
}

impl Store {
    /// Creates a group; the app name must be new.
    pub async fn insert_group(&self, draft: &GroupDraft) -> StoreResult<Group> {
        let now = now_ms();
        let mut tx = self.write.begin().await?;
        let id = self
            .insert_group_row(&mut tx, draft, now)
            .await
            .map_err(|e| name_taken(e, draft))?;
        tx.commit().await?;
        self.group(id).await
    }

    /// Replaces a group's fields.
    pub async fn update_group(&self, id: i64, draft: &GroupDraft) -> StoreResult<Group> {
        let mut tx = self.write.begin().await?;
        let changed = self
            .update_group_row(&mut tx, id, draft, now_ms())
            .await
            .map_err(|e| name_taken(e, draft))?;
        if changed == 0 {
            return Err(StoreError::NotFound(format!("group {id}")));
        }
        tx.commit().await?;
        self.group(id).await
    }

    /// The version of the groups: raised by every change to a group, in its transaction.
    pub async fn group_change_version(&self) -> StoreResult<i64> {
        let row = sqlx::query("SELECT version FROM group_change WHERE id = 1")
            .fetch_one(&self.read)
            .await?;
        Ok(rows::int(&row, "version")?)
    }

    /// Raises the version of the groups ([`Store::group_change_version`]), on `conn`: in the
    /// transaction that changes a group, so that an admin that sees the new version reads the
    /// change.
    async fn group_changed(&self, conn: &mut AnyConnection) -> Result<(), sqlx::Error> {
        sqlx::query("UPDATE group_change SET version = version + 1 WHERE id = 1")
            .execute(conn)
            .await?;
        Ok(())
    }

    /// Inserts a group's row in a transaction (`conn`: the REST API's, or that of jobs as code or
    /// of an import) and raises the version of the groups; returns the new id.
    pub(super) async fn insert_group_row(
        &self,
        conn: &mut AnyConnection,
        draft: &GroupDraft,
        now: i64,
    ) -> Result<i64, sqlx::Error> {
        let id = self
            .insert_row(conn, "executor_group", group_columns(draft), now)
            .await?;
        self.group_changed(conn).await?;
        Ok(id)
    }

    /// Replaces the fields of group `id` with `draft`'s in a transaction (`conn`) and raises the
    /// version of the groups; returns how many rows changed (0: no such group).
    pub(super) async fn update_group_row(
        &self,
        conn: &mut AnyConnection,
        id: i64,
        draft: &GroupDraft,
        now: i64,
    ) -> Result<u64, sqlx::Error> {
        let changed = self
            .update_row(conn, "executor_group", id, group_columns(draft), now)
            .await?;
        self.group_changed(conn).await?;
        Ok(changed)
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
        self.group_changed(&mut tx).await?;
        tx.commit().await?;
        Ok(())
    }

    /// One group by id.
    pub async fn group(&self, id: i64) -> StoreResult<Group> {
        let q = format!("SELECT {GROUP_COLUMNS} FROM executor_group WHERE id = ?");
        self.read_by_id(&q, id, "group", rows::group).await
    }

    /// One group by app name.
    pub async fn group_by_app_name(&self, app_name: &str) -> StoreResult<Option<Group>> {
        let q = self.sql_text(format!("SELECT {GROUP_COLUMNS} FROM executor_group WHERE app_name = ?"));
        let row = sqlx::query(&q).bind(app_name).fetch_optional(&self.read).await?;
        Ok(row.map(|r| rows::group(&r)).transpose()?)
    }

    /// The group of each of `run_ids` that exists: run id → group id (checking whose runs a
    /// callback reports on).
    pub async fn groups_of_runs(&self, run_ids: &[i64]) -> StoreResult<HashMap<i64, i64>> {
        let sql = "SELECT id, group_id FROM run WHERE id IN ({in})";
        self.read_in_as(sql, run_ids, &[], |r| {
            Ok((rows::int(r, "id")?, rows::int(r, "group_id")?))
        })
        .await
    }

    /// Every group, by id.
    pub async fn list_groups(&self) -> StoreResult<Vec<Group>> {
        self.read_all(
            &format!("SELECT {GROUP_COLUMNS} FROM executor_group ORDER BY id"),
            rows::group,
        )
        .await
    }
}

/// A group's columns with their values, as its insert and update write them.
fn group_columns(draft: &GroupDraft) -> Vec<(&'static str, Cell)> {
    use Cell::{Int, MaybeText, Text};
    vec![
        ("app_name", Text(draft.app_name.clone())),
        ("title", Text(draft.title.clone())),
        ("address_type", Int(draft.address_type.code())),
        ("address_list", Text(draft.addresses.join(","))),
        ("protocol", Text(draft.protocol.as_str().to_owned())),
        ("access_token", MaybeText(draft.access_token.clone())),
        ("insecure_no_token", Int(i64::from(draft.insecure_no_token))),
        ("keep_logs", Int(i64::from(draft.keep_logs))),
        ("alarm_channels", Text(draft.alarm_channels.clone())),
    ]
}
