//! `/v1/groups/{key}/members`: who holds which role in one executor group, read and changed by
//! the group's group admins (and administrators). Administrators are not listed: they hold
//! every role everywhere.

use super::access::Principal;
use super::error::ApiError;
use super::rest::{group_by_key, parse_body};
use crate::api::{GroupMember, MemberChange};
use crate::center::Admin;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::{Extension, Json};
use std::sync::Arc;

type ApiResult<T> = Result<T, ApiError>;

/// The group's members and their roles, by user name.
pub(super) async fn list(
    State(admin): State<Arc<Admin>>,
    Path(key): Path<String>,
) -> ApiResult<Json<Vec<GroupMember>>> {
    let group = group_by_key(&admin, &key).await?;
    let users = admin.store.list_users().await?;
    let mut members: Vec<GroupMember> = users
        .iter()
        .filter(|u| u.role != "admin")
        .filter_map(|u| {
            Some(GroupMember {
                user_id: u.id,
                username: u.username.clone(),
                role: u.role_in(group.id)?,
            })
        })
        .collect();
    members.sort_by(|a, b| a.username.cmp(&b.username));
    Ok(Json(members))
}

/// Gives a user a role in the group, changes it, or (`role: null`) takes the group from them;
/// answers the group's members.
pub(super) async fn change(
    State(admin): State<Arc<Admin>>,
    Extension(who): Extension<Principal>,
    Path(key): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Vec<GroupMember>>> {
    let change: MemberChange = parse_body(&body)?;
    let group = group_by_key(&admin, &key).await?;
    admin
        .set_member_role(group.id, change.username.trim(), change.role, who.user_id)
        .await?;
    list(State(admin), Path(group.id.to_string())).await
}
