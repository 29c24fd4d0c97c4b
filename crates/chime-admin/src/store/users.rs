//! Console users (the first one is created at first start).

use super::rows;
use super::{Store, StoreResult};
use crate::model::now_ms;

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
    /// False for a read-only user (ignored for admins).
    pub can_write: bool,
    /// The executor groups a `user` may see (ignored for admins).
    pub group_ids: Vec<i64>,
}

impl Store {
    /// Number of users.
    pub async fn count_users(&self) -> StoreResult<i64> {
        let r = sqlx::query("SELECT COUNT(*) AS n FROM app_user")
            .fetch_one(&self.read)
            .await?;
        Ok(rows::int(&r, "n")?)
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

    /// A user by login name.
    pub async fn user(&self, username: &str) -> StoreResult<Option<User>> {
        let q = self
            .sql(&format!("SELECT {USER_COLUMNS} FROM app_user WHERE username = ?"))
            .into_owned();
        let row = sqlx::query(&q).bind(username).fetch_optional(&self.read).await?;
        Ok(row.map(|r| user_row(&r)).transpose()?)
    }
}

pub(super) const USER_COLUMNS: &str = "id, username, password_hash, role, can_write, group_ids";

pub(super) fn user_row(r: &sqlx::any::AnyRow) -> Result<User, sqlx::Error> {
    Ok(User {
        id: rows::int(r, "id")?,
        username: rows::text(r, "username")?,
        password_hash: rows::text(r, "password_hash")?,
        role: rows::text(r, "role")?,
        can_write: rows::int(r, "can_write")? != 0,
        group_ids: rows::id_list(&rows::text(r, "group_ids")?),
    })
}
