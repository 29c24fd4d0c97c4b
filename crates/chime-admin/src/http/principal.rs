//! Who is calling, and what they may do in each executor group: an administrator (every role in
//! every group), a console user with a role per group, an API key bounded by its maker's roles
//! as they are now, or the bootstrap API token (an administrator).

use super::error::ApiError;
use crate::api::{GroupGrant, GroupRole, KeyRole};
use crate::center::KeyManager;
use crate::store::{KeyUse, User};
use axum::http::StatusCode;

/// Who is calling.
#[derive(Debug, Clone)]
pub struct Principal {
    /// User name (`api-token` for the bearer token, `key:<name>` for an API key).
    pub username: String,
    /// User id (none for the API token and for keys: a key does not act on its maker's account).
    pub user_id: Option<i64>,
    /// Admin role: every group, user management, GLUE source.
    pub admin: bool,
    /// Holds a role above viewer somewhere (always true for admins).
    pub can_write: bool,
    /// Groups a non-admin may see (each one of `roles`).
    pub groups: Vec<i64>,
    /// The role of a non-admin in each of their groups.
    pub roles: Vec<GroupGrant>,
    /// Hash of the session token when authenticated by cookie.
    pub session_hash: Option<String>,
    /// The session's CSRF token.
    pub csrf_token: Option<String>,
    /// The API key the caller authenticated with (its requests are audited as `key:<name>`).
    pub key_id: Option<i64>,
}

impl Principal {
    /// The bootstrap API token: an administrator.
    pub fn api_token() -> Principal {
        Principal {
            username: "api-token".into(),
            user_id: None,
            admin: true,
            can_write: true,
            groups: Vec::new(),
            roles: Vec::new(),
            session_hash: None,
            csrf_token: None,
            key_id: None,
        }
    }

    /// A console user, as stored now.
    pub fn of_user(user: &User, session_hash: Option<String>, csrf_token: Option<String>) -> Principal {
        let admin = user.role == "admin";
        Principal {
            username: user.username.clone(),
            user_id: Some(user.id),
            admin,
            ..Principal::with_roles(admin, user.group_roles.clone(), session_hash, csrf_token)
        }
    }

    /// The caller of a request made with a key: its role in each of its groups, no more than
    /// its maker holds there now (a maker who lost a group or a role takes it from the key). A
    /// key made with the bootstrap token has no maker and keeps what it was given.
    pub fn of_key(found: &KeyUse) -> Principal {
        let key = &found.key;
        let owner_admin = found.owner.as_ref().is_none_or(|u| u.role == "admin");
        let admin = key.draft.role == KeyRole::Admin && owner_admin;
        let roles = match key.draft.role.in_group() {
            None => Vec::new(),
            Some(role) => key
                .draft
                .group_ids
                .iter()
                .filter_map(|&group_id| {
                    let held = match &found.owner {
                        Some(u) if u.role != "admin" => u.role_in(group_id)?,
                        _ => GroupRole::GroupAdmin,
                    };
                    Some(GroupGrant {
                        group_id,
                        role: role.min(held),
                    })
                })
                .collect(),
        };
        Principal {
            username: format!("key:{}", key.draft.name),
            user_id: None,
            key_id: Some(key.id),
            ..Principal::with_roles(admin, roles, None, None)
        }
    }

    fn with_roles(
        admin: bool,
        roles: Vec<GroupGrant>,
        session_hash: Option<String>,
        csrf_token: Option<String>,
    ) -> Principal {
        Principal {
            username: String::new(),
            user_id: None,
            admin,
            can_write: admin || roles.iter().any(|g| g.role > GroupRole::Viewer),
            groups: roles.iter().map(|g| g.group_id).collect(),
            roles,
            session_hash,
            csrf_token,
            key_id: None,
        }
    }

    /// The caller as a manager of API keys; 403 for a caller authenticated by a key: a key
    /// that could make keys would outlive its own revocation.
    pub fn key_manager(&self) -> Result<KeyManager<'_>, ApiError> {
        if self.key_id.is_some() {
            return Err(forbidden(
                "an API key cannot manage API keys: log in to the console or use the API token",
            ));
        }
        Ok(KeyManager {
            user_id: self.user_id,
            username: &self.username,
            admin: self.admin,
            roles: &self.roles,
        })
    }

    /// The caller's role in group `id`: every role for an administrator, `None` where they have
    /// no access.
    pub fn role_in(&self, id: i64) -> Option<GroupRole> {
        if self.admin {
            return Some(GroupRole::GroupAdmin);
        }
        self.roles.iter().find(|g| g.group_id == id).map(|g| g.role)
    }

    /// True when this caller may see group `id`.
    pub fn sees_group(&self, id: i64) -> bool {
        self.role_in(id).is_some()
    }

    /// `None` for admins (all groups), else the permitted groups.
    pub fn group_scope(&self) -> Option<&[i64]> {
        (!self.admin).then_some(self.groups.as_slice())
    }

    /// 403 unless this caller holds `needed` (or more) in group `id`, saying which role they
    /// hold.
    pub fn check_role(&self, id: i64, needed: GroupRole) -> Result<(), ApiError> {
        match self.role_in(id) {
            None => Err(forbidden("you have no access to this executor group")),
            Some(GroupRole::Viewer) if needed > GroupRole::Viewer => Err(forbidden(&format!(
                "you are read-only in this executor group (viewer): this needs the role {needed} or above"
            ))),
            Some(held) if held < needed => Err(forbidden(&format!(
                "your role in this executor group is {held}: this needs {needed} or above"
            ))),
            Some(_) => Ok(()),
        }
    }

    /// 403 unless this caller may edit jobs in group `id` (an editor or above).
    pub fn check_write(&self, id: i64) -> Result<(), ApiError> {
        self.check_role(id, GroupRole::Editor)
    }
}

/// 403 with a message.
pub fn forbidden(msg: &str) -> ApiError {
    ApiError {
        status: StatusCode::FORBIDDEN,
        error: msg.to_owned(),
        field: None,
    }
}
