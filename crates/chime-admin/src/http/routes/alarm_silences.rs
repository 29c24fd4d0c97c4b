//! The routes of silence windows of alarms (administrators only, as alarm channels: a silence
//! stops every alarm of a group).

use super::Route;
use crate::http::access::Rule;
use crate::http::alarm_silences as silences;
use crate::http::openapi::{arr, body, id, op, query, r, string_enum};
use serde_json::json;

/// The routes of silence windows.
pub(super) const ROUTES: &[Route] = &[
    api!("GET" "/v1/alarm-silences", Rule::Admin, silences::list, op(
        "List silence windows of alarms, each with whether it is in force now (admins only)",
        "alarms", json!([query("active", string_enum(&["true", "false"]), "only those in force now (true) or not (false)")]),
        None, (200, Some(arr(r("AlarmSilence")))), &[400, 403],
    )),
    api!("POST" "/v1/alarm-silences", Rule::Admin, silences::create, op(
        "Create a silence window: no alarm for a group's or a job's failures while it is in force (admins only)",
        "alarms", json!([]), Some(body(r("AlarmSilenceSpec"), true)), (201, Some(r("AlarmSilence"))), &[400, 403, 413, 422],
    )),
    api!("GET" "/v1/alarm-silences/{id}", Rule::Admin, silences::show, op(
        "Show a silence window (admins only)",
        "alarms", json!([id()]), None, (200, Some(r("AlarmSilence"))), &[400, 403, 404],
    )),
    api!("DELETE" "/v1/alarm-silences/{id}", Rule::Admin, silences::delete, op(
        "Delete a silence window: alarms are sent again from now on (admins only)",
        "alarms", json!([id()]), None, (204, None), &[400, 403, 404, 413],
    )),
];
