//! Operations on console users. Passwords are hashed off the async threads (Argon2 takes tens
//! of milliseconds), and every check is made before anything is written.

use crate::center::{Admin, OpError};
use crate::model::Invalid;
use crate::password::{hash_password, verify_password};
use crate::store::User;
use serde::Deserialize;

/// A user's fields as the console sends them, to create a user (`username` and `password`
/// required) or change one (what is left out keeps its value).
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct UserFields {
    /// Login name; it cannot be changed.
    pub username: Option<String>,
    /// A new password, 8 to 256 characters.
    pub password: Option<String>,
    /// `admin` or `user` (the default).
    pub role: Option<String>,
    /// False for a read-only user (default true).
    pub can_write: Option<bool>,
    /// The executor groups a `user` may see.
    pub group_ids: Option<Vec<i64>>,
}

fn check_role(role: &str) -> Result<(), Invalid> {
    match role {
        "admin" | "user" => Ok(()),
        other => Err(Invalid::new("role", format!("'{other}' is not a role (admin, user)"))),
    }
}

/// A password's length rule; `field` is the input it came in.
fn check_password(field: &str, password: &str) -> Result<(), Invalid> {
    if password.chars().count() < 8 || password.len() > 256 {
        return Err(Invalid::new(field, "must be 8 to 256 characters"));
    }
    Ok(())
}

/// Hashes a password on a blocking thread.
async fn hashed(password: String) -> Result<String, OpError> {
    tokio::task::spawn_blocking(move || hash_password(&password))
        .await
        .map_err(|e| OpError::Internal(format!("hashing the password failed: {e}")))
}

impl Admin {
    /// 422 on `group_ids` unless every group of `ids` exists.
    pub(super) async fn check_groups(&self, ids: &[i64]) -> Result<(), OpError> {
        for id in ids {
            if self.store.group(*id).await.is_err() {
                return Err(Invalid::new("group_ids", format!("executor group {id} does not exist")).into());
            }
        }
        Ok(())
    }

    /// Creates a console user.
    pub async fn create_user(&self, fields: UserFields) -> Result<User, OpError> {
        let username = fields.username.as_deref().map(str::trim).unwrap_or("");
        if username.is_empty() || username.len() > 64 || username.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(Invalid::new("username", "must be 1 to 64 characters without spaces").into());
        }
        let password = fields
            .password
            .clone()
            .ok_or_else(|| Invalid::new("password", "is required"))?;
        check_password("password", &password)?;
        let role = fields.role.as_deref().unwrap_or("user");
        check_role(role)?;
        let groups = fields.group_ids.clone().unwrap_or_default();
        self.check_groups(&groups).await?;
        if self.store.user(username).await?.is_some() {
            return Err(Invalid::new("username", format!("a user '{username}' already exists")).into());
        }
        let hash = hashed(password).await?;
        self.store.insert_user(username, &hash, role).await?;
        let Some(user) = self.store.user(username).await? else {
            return Err(crate::store::StoreError::NotFound("user".into()).into());
        };
        self.store
            .update_user_access(user.id, role, fields.can_write.unwrap_or(true), &groups)
            .await?;
        Ok(self.store.user_by_id(user.id).await?)
    }

    /// Changes user `id`; `by` is the acting user's id (an admin cannot take the admin role
    /// from themself). A new password logs the user out everywhere, in the same transaction.
    pub async fn update_user(&self, id: i64, fields: UserFields, by: Option<i64>) -> Result<User, OpError> {
        let user = self.store.user_by_id(id).await?;
        if fields.username.as_deref().is_some_and(|n| n != user.username) {
            return Err(Invalid::new("username", "cannot be changed").into());
        }
        let role = fields.role.unwrap_or_else(|| user.role.clone());
        check_role(&role)?;
        if by == Some(id) && role != "admin" {
            return Err(Invalid::new("role", "you cannot take the admin role from yourself").into());
        }
        let groups = fields.group_ids.unwrap_or_else(|| user.group_ids.clone());
        self.check_groups(&groups).await?;
        // Everything is checked before anything is written, and written in one transaction: a
        // request refused for one field changes nothing.
        if let Some(password) = &fields.password {
            check_password("password", password)?;
        }
        let hash = match fields.password {
            Some(password) => Some(hashed(password).await?),
            None => None,
        };
        let can_write = fields.can_write.unwrap_or(user.can_write);
        self.store
            .update_user(id, &role, can_write, &groups, hash.as_deref())
            .await?;
        Ok(self.store.user_by_id(id).await?)
    }

    /// Deletes user `id`; `by` is the acting user's id (nobody removes themself).
    pub async fn delete_user(&self, id: i64, by: Option<i64>) -> Result<(), OpError> {
        if by == Some(id) {
            return Err(OpError::Conflict("you cannot remove yourself".into()));
        }
        Ok(self.store.delete_user(id).await?)
    }

    /// Changes user `id`'s own password, which they confirm with the current one. Their other
    /// sessions end; `keep_session` (the hash of the session asking) stays.
    pub async fn change_password(
        &self,
        id: i64,
        current: String,
        new: String,
        keep_session: Option<&str>,
    ) -> Result<(), OpError> {
        check_password("new_password", &new)?;
        let user = self.store.user_by_id(id).await?;
        let stored = user.password_hash;
        let confirmed = tokio::task::spawn_blocking(move || verify_password(&current, &stored))
            .await
            .unwrap_or(false);
        if !confirmed {
            return Err(Invalid::new("current_password", "is wrong").into());
        }
        let hash = hashed(new).await?;
        self.store.set_password_hash(id, &hash).await?;
        self.store.delete_user_sessions(id, keep_session).await?;
        Ok(())
    }
}
