//! The routes of flow control: limits on running runs and the queue of runs waiting for a slot.

use super::Route;
use crate::http::access::{Rule, Target};
use crate::http::flow;
use crate::http::openapi::{arr, body, boolean, exact, id, int, op, path, r, string};
use serde_json::json;

/// The routes of limits and the queue.
pub(super) const ROUTES: &[Route] = &[
    api!("GET" "/v1/limits", Rule::Authenticated, flow::list_limits, op(
        "List the limits on running runs, each with its runs holding a slot and its runs waiting",
        "flow", json!([]), None, (200, Some(arr(r("Limit")))), &[403],
    )),
    api!("PUT" "/v1/limits/{name}", Rule::Admin, flow::put_limit, op(
        "Set a limit on running runs (admins only): a concurrency key, group:<app_name> or executor:<address> (URL-encoded)",
        "flow", json!([path("name", string(), "the limit's name")]), Some(body(r("LimitSpec"), true)),
        (200, Some(r("Limit"))), &[400, 403, 413, 422],
    )),
    api!("DELETE" "/v1/limits/{name}", Rule::Admin, flow::delete_limit, op(
        "Delete a limit (admins only): the runs waiting on it go on",
        "flow", json!([path("name", string(), "the limit's name")]), None, (204, None), &[400, 403, 404, 413, 422],
    )),
    api!("GET" "/v1/queue", Rule::List { field: "group_id" }, flow::queue, op(
        "The runs waiting for a slot of a full limit, in the order they will go (the caller's groups only)",
        "flow", json!([]), None, (200, Some(arr(r("QueuedRunEntry")))), &[403],
    )),
    api!("POST" "/v1/runs/{id}/run-now", Rule::Operate(Target::Run), flow::run_now, op(
        "Send a queued run now, skipping the queue and its limits (operators)",
        "flow", json!([id()]), None,
        (200, Some(exact(json!({ "run_id": int(), "skip_queue": boolean() })))), &[400, 403, 404, 409, 413],
    )),
    api!("POST" "/v1/runs/{id}/cancel", Rule::Operate(Target::Run), flow::cancel, op(
        "Cancel a queued run: it ends as killed, never sent (operators)",
        "flow", json!([id()]), None,
        (200, Some(exact(json!({ "run_id": int(), "cancelled": boolean() })))), &[400, 403, 404, 409, 413],
    )),
];
