//! The routes of runs: the list, one run, its log, killing it, clearing old ones.

use super::Route;
use crate::http::access::{Rule, Target};
use crate::http::openapi::{
    arr, body, boolean, exact, id, input, int, int_range, nullable, op, query, r, runs_query, string,
};
use crate::http::{console_api as console, rest};
use serde_json::json;

/// The routes of runs: the list, one run, its log, killing it, clearing old ones.
pub(super) const ROUTES: &[Route] = &[
    api!("GET" "/v1/runs", Rule::List { field: "group_id" }, rest::list_runs, op(
        "List runs, newest first",
        "runs", runs_query(), None, (200, Some(arr(r("Run")))), &[400, 403, 404, 422],
    )),
    api!("POST" "/v1/runs/clear", Rule::Writer, console::clear_runs, op(
        "Delete finished runs older than some days (non-admins name a job or group); the body may be left out",
        "runs",
        json!([]),
        Some(body(input(json!({ "older_than_days": nullable(json!({ "type": "integer", "format": "int64", "minimum": 0, "maximum": 36500, "description": "keep younger runs; default 30, 0 clears all finished runs" })), "job_id": nullable(int()), "group_id": nullable(int()) })), false)),
        (200, Some(exact(json!({ "deleted": int() })))),
        &[400, 403, 404, 413, 422],
    )),
    api!("GET" "/v1/runs/{id}", Rule::Read(Target::Run), rest::show_run, op(
        "Show a run",
        "runs", json!([id()]), None, (200, Some(r("Run"))), &[400, 403, 404],
    )),
    api!("GET" "/v1/runs/{id}/log", Rule::Read(Target::Run), rest::run_log, op(
        "A run's log: the admin's stored copy once the run is final and its whole log stored (`stored`), else read from its executor, else the stored copy when the executor cannot answer (409 for a run never sent to one)",
        "runs",
        json!([id(), query("from_line", int_range(1, i32::MAX as i64), "first line, from 1")]),
        None,
        (200, Some(exact(json!({ "run_id": int(), "from_line": int(), "to_line": int(), "content": string(), "is_end": boolean(), "stored": boolean() })))),
        &[400, 403, 404, 409, 502],
    )),
    api!("POST" "/v1/runs/{id}/kill", Rule::Operate(Target::Run), rest::kill_run, op(
        "Kill a running run on its executor (409 when it is not running)",
        "runs", json!([id()]), None, (200, Some(r("Run"))), &[400, 403, 404, 409, 413, 502],
    )),
];
