//! The routes of console users and the audit log.

use super::Route;
use crate::http::access::Rule;
use crate::http::console_api as console;
use crate::http::openapi::{arr, audit_query, body, exact, id, int, op, password, string, user_out, user_spec};
use serde_json::json;

/// The routes of console users and the audit log.
pub(super) const ROUTES: &[Route] = &[
    api!("GET" "/v1/users", Rule::Admin, console::list_users, op(
        "List console users (admins only)",
        "console", json!([]), None, (200, Some(arr(user_out()))), &[403],
    )),
    api!("POST" "/v1/users", Rule::Admin, console::create_user, op(
        "Create a console user (admins only)",
        "console", json!([]), Some(body(user_spec(true), true)), (201, Some(user_out())), &[400, 403, 413, 422],
    )),
    api!("GET" "/v1/users/{id}", Rule::Admin, console::show_user, op(
        "Show a console user (admins only)",
        "console", json!([id()]), None, (200, Some(user_out())), &[400, 403, 404],
    )),
    api!("PUT" "/v1/users/{id}", Rule::Admin, console::update_user, op(
        "Change a console user's role, groups, write access or password (admins only)",
        "console",
        json!([id()]),
        Some(body(user_spec(false), true)),
        (200, Some(user_out())),
        &[400, 403, 404, 413, 422],
    )),
    api!("DELETE" "/v1/users/{id}", Rule::Admin, console::delete_user, op(
        "Delete a console user (admins only; not yourself)",
        "console", json!([id()]), None, (204, None), &[400, 403, 404, 409, 413],
    )),
    api!("POST" "/v1/me/password", Rule::Authenticated, console::change_password, op(
        "Change your own console password (the API token has none: 403)",
        "console",
        json!([]),
        Some(body(json!({ "type": "object", "additionalProperties": false, "required": ["current_password", "new_password"], "properties": { "current_password": string(), "new_password": password() } }), true)),
        (204, None),
        &[400, 403, 409, 413, 422],
    )),
    api!("GET" "/v1/audit", Rule::Admin, console::list_audit, op(
        "The audit log, newest first (admins only)",
        "console",
        audit_query(),
        None,
        (200, Some(arr(exact(json!({ "id": int(), "at": int(), "username": string(), "action": string(), "target": string(), "detail": { "description": "JSON: the response status, the reason of a refusal, the request body with secrets removed" } }))))),
        &[400, 403],
    )),
];
