//! The routes of executor groups.

use super::{api, Route};
use crate::http::access::{Rule, Target};
use crate::http::openapi::{arr, body, group_spec, key, op, r};
use crate::http::rest;
use axum::routing::on;
use serde_json::json;

/// The routes of executor groups.
pub(super) const ROUTES: &[Route] = &[
    api(
        "GET",
        "/v1/groups",
        Rule::List { field: "id" },
        |m| on(m, rest::list_groups),
        || {
            op(
                "List executor groups",
                "groups",
                json!([]),
                None,
                (200, Some(arr(r("Group")))),
                &[403],
            )
        },
    ),
    api(
        "POST",
        "/v1/groups",
        Rule::Admin,
        |m| on(m, rest::create_group),
        || {
            op(
                "Create an executor group (admins only)",
                "groups",
                json!([]),
                Some(body(group_spec(true), true)),
                (201, Some(r("Group"))),
                &[400, 403, 413, 422],
            )
        },
    ),
    api(
        "GET",
        "/v1/groups/{key}",
        Rule::Read(Target::GroupKey),
        |m| on(m, rest::show_group),
        || {
            op(
                "Show a group",
                "groups",
                json!([key()]),
                None,
                (200, Some(r("Group"))),
                &[403, 404],
            )
        },
    ),
    // Changing a group is changing where its jobs are sent, with the executor access token
    // that is the same for every group: admins only, as in XXL-JOB.
    api(
        "PUT",
        "/v1/groups/{key}",
        Rule::Admin,
        |m| on(m, rest::update_group),
        || {
            op(
                "Change a group (fields left out keep their value; admins only)",
                "groups",
                json!([key()]),
                Some(body(group_spec(false), true)),
                (200, Some(r("Group"))),
                &[400, 403, 404, 413, 422],
            )
        },
    ),
    api(
        "PATCH",
        "/v1/groups/{key}",
        Rule::Admin,
        |m| on(m, rest::update_group),
        || {
            op(
                "Change a group (same as PUT)",
                "groups",
                json!([key()]),
                Some(body(group_spec(false), true)),
                (200, Some(r("Group"))),
                &[400, 403, 404, 413, 422],
            )
        },
    ),
    api(
        "DELETE",
        "/v1/groups/{key}",
        Rule::Admin,
        |m| on(m, rest::delete_group),
        || {
            op(
                "Delete a group without jobs (admins only)",
                "groups",
                json!([key()]),
                None,
                (204, None),
                &[403, 404, 409, 413],
            )
        },
    ),
];
