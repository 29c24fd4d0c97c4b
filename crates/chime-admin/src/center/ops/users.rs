//! Operations on console users. Passwords are hashed off the async threads (Argon2 takes tens
//! of milliseconds), and every check is made before anything is written.

use crate::api::roles::{normalised, MAX_GRANTS};
use crate::api::{GroupGrant, GroupRole};
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
    /// The role of a `user` in each of their groups; replaces them all. (Without it,
    /// `group_ids` and `can_write` say the same as before roles per group: an editor of each
    /// group, or with `can_write: false` a viewer.)
    pub group_roles: Option<Vec<GroupGrant>>,
    /// False for a read-only user: a viewer in each group (default true: an editor).
    pub can_write: Option<bool>,
    /// The executor groups a `user` may see.
    pub group_ids: Option<Vec<i64>>,
}

impl UserFields {
    /// The roles per group these fields give a user who holds `current` now: `group_roles`
    /// when given; else `group_ids` (each group kept keeps its role, a new one gets the role
    /// `can_write` names, or the user's) and `can_write` (every group viewer, or editor).
    fn grants(&self, current: &[GroupGrant], could_write: bool) -> Result<Vec<GroupGrant>, Invalid> {
        let given = match (&self.group_roles, &self.group_ids, self.can_write) {
            (Some(roles), _, _) => roles.clone(),
            (None, ids, can_write) => {
                let fresh = GroupRole::of_legacy(can_write.unwrap_or(could_write));
                let ids = ids
                    .clone()
                    .unwrap_or_else(|| current.iter().map(|g| g.group_id).collect());
                ids.into_iter()
                    .map(|group_id| {
                        let kept = current.iter().find(|g| g.group_id == group_id).map(|g| g.role);
                        let role = match (can_write, kept) {
                            (Some(w), _) => GroupRole::of_legacy(w),
                            (None, Some(role)) => role,
                            (None, None) => fresh,
                        };
                        GroupGrant { group_id, role }
                    })
                    .collect()
            }
        };
        if given.len() > MAX_GRANTS {
            return Err(Invalid::new("group_roles", format!("at most {MAX_GRANTS} groups")));
        }
        normalised(&given).map_err(|id| Invalid::new("group_roles", format!("{id} is not a group id")))
    }
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
        let grants = fields.grants(&[], true)?;
        self.check_grants(&grants).await?;
        if self.store.user(username).await?.is_some() {
            return Err(Invalid::new("username", format!("a user '{username}' already exists")).into());
        }
        let hash = hashed(password).await?;
        self.store.insert_user(username, &hash, role).await?;
        let Some(user) = self.store.user(username).await? else {
            return Err(crate::store::StoreError::NotFound("user".into()).into());
        };
        self.store.update_user_access(user.id, role, &grants).await?;
        Ok(self.store.user_by_id(user.id).await?)
    }

    /// Changes user `id`; `by` is the acting user's id (an admin cannot take the admin role
    /// from themself). A new password logs the user out everywhere, in the same transaction.
    pub async fn update_user(&self, id: i64, fields: UserFields, by: Option<i64>) -> Result<User, OpError> {
        let user = self.store.user_by_id(id).await?;
        if fields.username.as_deref().is_some_and(|n| n != user.username) {
            return Err(Invalid::new("username", "cannot be changed").into());
        }
        let role = fields.role.clone().unwrap_or_else(|| user.role.clone());
        check_role(&role)?;
        if by == Some(id) && role != "admin" {
            return Err(Invalid::new("role", "you cannot take the admin role from yourself").into());
        }
        let grants = fields.grants(&user.group_roles, user.can_write)?;
        self.check_grants(&grants).await?;
        // Everything is checked before anything is written, and written in one transaction: a
        // request refused for one field changes nothing.
        if let Some(password) = &fields.password {
            check_password("password", password)?;
        }
        let hash = match fields.password {
            Some(password) => Some(hashed(password).await?),
            None => None,
        };
        self.store.update_user(id, &role, &grants, hash.as_deref()).await?;
        Ok(self.store.user_by_id(id).await?)
    }

    /// 422 unless every group of `grants` exists.
    async fn check_grants(&self, grants: &[GroupGrant]) -> Result<(), OpError> {
        let ids: Vec<i64> = grants.iter().map(|g| g.group_id).collect();
        self.check_groups(&ids).await
    }

    /// Sets the role of user `username` in group `group_id` (`None`: takes the group from
    /// them), as a group admin does for their group's members; `by` is the acting user's id.
    /// Administrators are not members of anything: their role is everything, everywhere.
    pub async fn set_member_role(
        &self,
        group_id: i64,
        username: &str,
        role: Option<GroupRole>,
        by: Option<i64>,
    ) -> Result<User, OpError> {
        let Some(user) = self.store.user(username).await? else {
            return Err(crate::store::StoreError::NotFound(format!("user '{username}'")).into());
        };
        if user.role == "admin" {
            return Err(OpError::Conflict(format!(
                "{username} is an administrator: their access is set on the user, not per group"
            )));
        }
        if by == Some(user.id) {
            return Err(OpError::Conflict("you cannot change your own role".into()));
        }
        let mut grants: Vec<GroupGrant> = user
            .group_roles
            .iter()
            .filter(|g| g.group_id != group_id)
            .copied()
            .collect();
        if let Some(role) = role {
            grants.push(GroupGrant { group_id, role });
        }
        let grants =
            normalised(&grants).map_err(|id| Invalid::new("group_roles", format!("{id} is not a group id")))?;
        self.store.update_user_access(user.id, &user.role, &grants).await?;
        Ok(self.store.user_by_id(user.id).await?)
    }

    /// Keeps the user `username` whom directory `source` let in, with what their groups give
    /// now (`mapped`, by app name): created at their first login, their roles replaced at each
    /// one. 403 when the groups give nothing (an executor group a rule names that does not
    /// exist gives nothing, and is logged).
    pub async fn sync_directory_user(
        &self,
        source: &str,
        username: &str,
        mapped: &crate::sso::Mapped,
    ) -> Result<User, OpError> {
        let mut grants = Vec::new();
        if !mapped.admin {
            for (app, role) in &mapped.roles {
                match self.store.group_by_app_name(app).await? {
                    Some(g) => grants.push(GroupGrant {
                        group_id: g.id,
                        role: *role,
                    }),
                    None => tracing::warn!(app = %app, "sso_roles names an executor group that does not exist"),
                }
            }
        }
        if !mapped.admin && grants.is_empty() {
            return Err(OpError::Forbidden(
                "your directory groups give you no access to Chime: ask an administrator to map one of them (sso_roles)"
                    .into(),
            ));
        }
        let grants =
            normalised(&grants).map_err(|id| Invalid::new("group_roles", format!("{id} is not a group id")))?;
        let role = if mapped.admin { "admin" } else { "user" };
        Ok(self
            .store
            .upsert_directory_user(username, source, role, &grants)
            .await?)
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
        if user.source != "local" {
            return Err(OpError::Conflict(format!(
                "your password is kept by the directory ({}): change it there",
                user.source
            )));
        }
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
