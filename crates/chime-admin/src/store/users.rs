//! Console users (the first one is created at first start).

use super::rows;
use super::{Store, StoreError, StoreResult};
use crate::api::roles::{grants_of_text, grants_text};
use crate::api::{GroupGrant, GroupRole};
use crate::model::now_ms;
use sqlx::any::Any;
use sqlx::{AnyConnection, Transaction};

/// A console user.
#[derive(Debug, Clone)]
pub struct User {
    /// Id.
    pub id: i64,
    /// Login name.
    pub username: String,
    /// Argon2 PHC string.
    pub password_hash: String,
    /// `admin` or `user`.
    pub role: String,
    /// Holds a role above viewer in some group (ignored for admins).
    pub can_write: bool,
    /// The executor groups a `user` may see (ignored for admins).
    pub group_ids: Vec<i64>,
    /// The role a `user` holds in each of `group_ids`, by group (ignored for admins).
    pub group_roles: Vec<GroupGrant>,
    /// `local`, or the directory that lets the user in (`ldap`).
    pub source: String,
}

impl User {
    /// The role of a `user` in group `id`; `None` for a group they are not given (and for
    /// admins, who hold every role everywhere: callers ask `role` first).
    pub fn role_in(&self, id: i64) -> Option<GroupRole> {
        self.group_roles.iter().find(|g| g.group_id == id).map(|g| g.role)
    }
}

impl Store {
    /// Number of users.
    pub async fn count_users(&self) -> StoreResult<i64> {
        self.count("SELECT COUNT(*) AS n FROM app_user").await
    }

    /// Creates a user with an already hashed password.
    pub async fn insert_user(&self, username: &str, password_hash: &str, role: &str) -> StoreResult<()> {
        let q = self.sql("INSERT INTO app_user (username, password_hash, role, created_at) VALUES (?, ?, ?, ?)");
        sqlx::query(&q)
            .bind(username)
            .bind(password_hash)
            .bind(role)
            .bind(now_ms())
            .execute(&self.write)
            .await?;
        Ok(())
    }

    /// Changes a user in one transaction: role and roles per group, and with `password_hash`
    /// the password, which also ends every session of the user (a reset password logs the user
    /// out everywhere). All of it is written, or none of it. `grants` are one per group, sorted
    /// (`roles::normalised`).
    pub async fn update_user(
        &self,
        id: i64,
        role: &str,
        grants: &[GroupGrant],
        password_hash: Option<&str>,
    ) -> StoreResult<()> {
        let mut tx = self.write.begin().await?;
        self.set_user_roles(&mut tx, id, role, grants).await?;
        if let Some(hash) = password_hash {
            let q = self.sql("UPDATE app_user SET password_hash = ? WHERE id = ?");
            sqlx::query(&q).bind(hash).bind(id).execute(&mut *tx).await?;
            let q = self.sql("DELETE FROM console_session WHERE user_id = ?");
            sqlx::query(&q).bind(id).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Sets the password of the user named `username` to `password_hash` and ends every
    /// session of the user, in one transaction, so a session opened with the old password
    /// never outlives the reset. Returns how many sessions were ended; `NotFound` when no user
    /// has this name. Used by `chime admin reset-password`, which works on the database
    /// directly because a forgotten password leaves no way in through the console.
    pub async fn reset_password(&self, username: &str, password_hash: &str) -> StoreResult<u64> {
        let mut tx = self.write.begin().await?;
        let q = self.sql("SELECT id FROM app_user WHERE username = ?").into_owned();
        let row = sqlx::query(&q).bind(username).fetch_optional(&mut *tx).await?;
        let Some(row) = row else {
            return Err(StoreError::NotFound(format!("user '{username}'")));
        };
        let id = rows::int(&row, "id")?;
        let q = self.sql("UPDATE app_user SET password_hash = ? WHERE id = ?");
        sqlx::query(&q).bind(password_hash).bind(id).execute(&mut *tx).await?;
        let q = self.sql("DELETE FROM console_session WHERE user_id = ?");
        let ended = sqlx::query(&q).bind(id).execute(&mut *tx).await?.rows_affected();
        tx.commit().await?;
        Ok(ended)
    }

    /// Sets user `id`'s role and roles per group in `tx`; `NotFound` when there is no such user.
    async fn set_user_roles(
        &self,
        tx: &mut Transaction<'static, Any>,
        id: i64,
        role: &str,
        grants: &[GroupGrant],
    ) -> StoreResult<()> {
        let q = self.sql("UPDATE app_user SET role = ?, can_write = ?, group_ids = ?, group_roles = ? WHERE id = ?");
        let ids: Vec<i64> = grants.iter().map(|g| g.group_id).collect();
        // The columns of before roles per group, kept true for tools that read them.
        let can_write = grants.iter().any(|g| g.role > GroupRole::Viewer);
        let done = sqlx::query(&q)
            .bind(role)
            .bind(i64::from(can_write))
            .bind(rows::join_ids(&ids))
            .bind(grants_text(grants))
            .bind(id)
            .execute(&mut **tx)
            .await?;
        // (MySQL reports matched rows, not changed ones: sqlx connects with CLIENT_FOUND_ROWS.)
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("user {id}")));
        }
        Ok(())
    }

    /// Creates or updates the user `username` whom directory `source` let in, with the role
    /// and roles per group its groups give now; answers the user. A local user of that name is
    /// not taken over (409): local accounts are checked before the directory is asked. One
    /// transaction: a login never leaves a user created without its roles.
    pub async fn upsert_directory_user(
        &self,
        username: &str,
        source: &str,
        role: &str,
        grants: &[GroupGrant],
    ) -> StoreResult<User> {
        let mut tx = self.write.begin().await?;
        let id = match self.user_on(&mut tx, username).await? {
            Some(u) if u.source != source => {
                return Err(StoreError::Conflict(format!(
                    "a {} user named '{username}' exists already",
                    u.source
                )))
            }
            Some(u) => u.id,
            None => {
                let q = self.sql(
                    "INSERT INTO app_user (username, password_hash, role, source, created_at) \
                     VALUES (?, '!', ?, ?, ?) RETURNING id",
                );
                let row = sqlx::query(&q)
                    .bind(username)
                    .bind(role)
                    .bind(source)
                    .bind(now_ms())
                    .fetch_one(&mut *tx)
                    .await?;
                rows::int(&row, 0)?
            }
        };
        self.set_user_roles(&mut tx, id, role, grants).await?;
        let user = self
            .user_on(&mut tx, username)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("user '{username}'")))?;
        tx.commit().await?;
        Ok(user)
    }

    /// A user by login name, read through `conn`.
    async fn user_on(&self, conn: &mut AnyConnection, username: &str) -> StoreResult<Option<User>> {
        let q = self.sql_text(format!("SELECT {USER_COLUMNS} FROM app_user WHERE username = ?"));
        let row = sqlx::query(&q).bind(username).fetch_optional(conn).await?;
        Ok(row.map(|r| user_row(&r)).transpose()?)
    }

    /// The login names of all users, in creation order (for messages that name them).
    pub async fn usernames(&self) -> StoreResult<Vec<String>> {
        let found = sqlx::query("SELECT username FROM app_user ORDER BY id")
            .fetch_all(&self.read)
            .await?;
        found
            .iter()
            .map(|r| rows::text(r, "username").map_err(Into::into))
            .collect()
    }

    /// A user by login name.
    pub async fn user(&self, username: &str) -> StoreResult<Option<User>> {
        self.user_on(&mut *self.read.acquire().await?, username).await
    }
}

pub(super) const USER_COLUMNS: &str = "id, username, password_hash, role, can_write, group_ids, group_roles, source";

pub(super) fn user_row(r: &sqlx::any::AnyRow) -> Result<User, sqlx::Error> {
    user_of_columns(r, "")
}

/// A user read from columns named `{prefix}{column}` (a join names another table's `id` too).
/// A user written before roles per group (no `group_roles`) holds in each of its groups the
/// role its write permission gave.
pub(super) fn user_of_columns(r: &sqlx::any::AnyRow, prefix: &str) -> Result<User, sqlx::Error> {
    let col = |c: &str| format!("{prefix}{c}");
    let can_write = rows::int(r, col("can_write").as_str())? != 0;
    let group_ids = rows::id_list(&rows::text(r, col("group_ids").as_str())?);
    let stored = rows::text(r, col("group_roles").as_str())?;
    let group_roles = if stored.is_empty() {
        let role = GroupRole::of_legacy(can_write);
        group_ids
            .iter()
            .map(|&group_id| GroupGrant { group_id, role })
            .collect()
    } else {
        grants_of_text(&stored)
    };
    Ok(User {
        id: rows::int(r, col("id").as_str())?,
        username: rows::text(r, col("username").as_str())?,
        // Not read where it is not needed (an API key's owner): empty then.
        password_hash: rows::text(r, col("password_hash").as_str()).unwrap_or_default(),
        role: rows::text(r, col("role").as_str())?,
        can_write,
        group_ids: group_roles.iter().map(|g| g.group_id).collect(),
        group_roles,
        source: rows::text(r, col("source").as_str())?,
    })
}
