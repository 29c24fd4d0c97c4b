//! Console login sessions. The table holds only a SHA-256 of each session token, so reading
//! the database (a backup, an SQL injection elsewhere) does not let anyone log in.

use super::bulk::{bound, Arg};
use super::users::{user_row, User, USER_COLUMNS};
use super::{rows, Store, StoreResult};

/// A live session and its user.
#[derive(Debug, Clone)]
pub struct SessionUser {
    /// The logged-in user, as stored now (role and groups changes apply at once).
    pub user: User,
    /// The session's CSRF token.
    pub csrf_token: String,
    /// When the session ends, epoch ms.
    pub expires_at: i64,
}

impl Store {
    /// Records a new session.
    pub async fn insert_session(
        &self,
        token_hash: &str,
        user_id: i64,
        csrf_token: &str,
        now: i64,
        expires_at: i64,
    ) -> StoreResult<()> {
        let q = self.sql(
            "INSERT INTO console_session (token_hash, user_id, csrf_token, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
        );
        let args = [
            Arg::Text(token_hash),
            Arg::Int(user_id),
            Arg::Text(csrf_token),
            Arg::Int(now),
            Arg::Int(expires_at),
        ];
        bound(&q, &args).execute(&self.write).await?;
        Ok(())
    }

    /// The session with this token hash when it has not expired.
    pub async fn session_user(&self, token_hash: &str, now: i64) -> StoreResult<Option<SessionUser>> {
        let cols: Vec<String> = USER_COLUMNS.split(", ").map(|c| format!("u.{c}")).collect();
        let q = self.sql_text(format!(
            "SELECT {}, s.csrf_token, s.expires_at FROM console_session s JOIN app_user u ON u.id = s.user_id \
                 WHERE s.token_hash = ? AND s.expires_at > ?",
            cols.join(", ")
        ));
        let row = sqlx::query(&q)
            .bind(token_hash)
            .bind(now)
            .fetch_optional(&self.read)
            .await?;
        Ok(row
            .map(|r| -> Result<SessionUser, sqlx::Error> {
                Ok(SessionUser {
                    user: user_row(&r)?,
                    csrf_token: rows::text(&r, "csrf_token")?,
                    expires_at: rows::int(&r, "expires_at")?,
                })
            })
            .transpose()?)
    }

    /// Ends one session (logout).
    pub async fn delete_session(&self, token_hash: &str) -> StoreResult<()> {
        let q = self.sql("DELETE FROM console_session WHERE token_hash = ?");
        sqlx::query(&q).bind(token_hash).execute(&self.write).await?;
        Ok(())
    }

    /// Ends every session of a user (password reset, removal), except `keep` if given.
    pub async fn delete_user_sessions(&self, user_id: i64, keep: Option<&str>) -> StoreResult<()> {
        let q = self.sql("DELETE FROM console_session WHERE user_id = ? AND token_hash <> ?");
        sqlx::query(&q)
            .bind(user_id)
            .bind(keep.unwrap_or(""))
            .execute(&self.write)
            .await?;
        Ok(())
    }

    /// Drops expired sessions.
    pub async fn purge_sessions(&self, now: i64) -> StoreResult<u64> {
        let q = self.sql("DELETE FROM console_session WHERE expires_at <= ?");
        Ok(sqlx::query(&q).bind(now).execute(&self.write).await?.rows_affected())
    }
}
