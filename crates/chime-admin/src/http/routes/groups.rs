//! The routes of executor groups.

use super::Route;
use crate::http::access::{Rule, Target};
use crate::http::openapi::{arr, body, change, group_pause_answer, group_spec, key, op, pause_body, r};
use crate::http::{members, pause, rest};
use serde_json::json;

/// The routes of executor groups.
pub(super) const ROUTES: &[Route] = &[
    api!("GET" "/v1/groups", Rule::List { field: "id" }, rest::list_groups, op(
        "List executor groups",
        "groups", json!([]), None, (200, Some(arr(r("Group")))), &[403],
    )),
    api!("POST" "/v1/groups", Rule::Admin, rest::create_group, op(
        "Create an executor group (admins only)",
        "groups", json!([]), Some(body(group_spec(true), true)), (201, Some(r("Group"))), &[400, 403, 413, 422],
    )),
    api!("GET" "/v1/groups/{key}", Rule::Read(Target::GroupKey), rest::show_group, op(
        "Show a group",
        "groups", json!([key()]), None, (200, Some(r("Group"))), &[403, 404],
    )),
    // Changing a group is changing where its jobs are sent, with the executor access token
    // that is the same for every group: admins only, as in XXL-JOB.
    api!("PUT" "/v1/groups/{key}", Rule::Admin, rest::update_group, change(
        "Change a group (fields left out keep their value; admins only)",
        "groups", key(), group_spec(false), "Group",
    )),
    api!("PATCH" "/v1/groups/{key}", Rule::Admin, rest::update_group, change(
        "Change a group (same as PUT)",
        "groups", key(), group_spec(false), "Group",
    )),
    api!("DELETE" "/v1/groups/{key}", Rule::Admin, rest::delete_group, op(
        "Delete a group without jobs (admins only)",
        "groups", json!([key()]), None, (204, None), &[403, 404, 409, 413],
    )),
    api!("POST" "/v1/groups/{key}/pause", Rule::Operate(Target::GroupKey), pause::pause_group, op(
        "Pause every job of a group until a time (maintenance): fires due before then are handled by each job's misfire policy when the pause ends",
        "groups", json!([key()]), Some(pause_body()), (200, Some(group_pause_answer())), &[400, 403, 404, 413, 422],
    )),
    api!("POST" "/v1/groups/{key}/resume", Rule::Operate(Target::GroupKey), pause::resume_group, op(
        "End the pause of every job of a group now",
        "groups", json!([key()]), None, (200, Some(group_pause_answer())), &[400, 403, 404, 413],
    )),
    api!("GET" "/v1/groups/{key}/members", Rule::ManageGroup(Target::GroupKey), members::list, op(
        "The group's members and the role each holds in it (its group admins and administrators)",
        "groups", json!([key()]), None, (200, Some(arr(r("GroupMember")))), &[403, 404],
    )),
    api!("PUT" "/v1/groups/{key}/members", Rule::ManageGroup(Target::GroupKey), members::change, op(
        "Give a user a role in the group, change it, or take the group from them (role null); answers the members",
        "groups", json!([key()]), Some(body(r("MemberChange"), true)), (200, Some(arr(r("GroupMember")))), &[400, 403, 404, 409, 413, 422],
    )),
];
