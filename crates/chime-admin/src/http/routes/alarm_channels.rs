//! The routes of alarm channels (administrators only: a channel holds a receiver's secret and
//! makes the admin call out), of a run's alarm deliveries, and of the alarms no run raised.

use super::Route;
use crate::http::access::{Rule, Target};
use crate::http::alarm_channels as channels;
use crate::http::openapi::{arr, body, boolean, exact, id, int, limit, op, query, r, string_enum};
use serde_json::json;

/// The routes of alarm channels.
pub(super) const ROUTES: &[Route] = &[
    api!("GET" "/v1/alarm-channels", Rule::Admin, channels::list, op(
        "List alarm channels (admins only; URLs shown up to the host, secrets never)",
        "alarms", json!([]), None, (200, Some(arr(r("AlarmChannel")))), &[403],
    )),
    api!("POST" "/v1/alarm-channels", Rule::Admin, channels::create, op(
        "Create an alarm channel (admins only)",
        "alarms", json!([]), Some(body(r("AlarmChannelSpec"), true)), (201, Some(r("AlarmChannel"))), &[400, 403, 409, 413, 422],
    )),
    api!("GET" "/v1/alarm-channels/{id}", Rule::Admin, channels::show, op(
        "Show an alarm channel (admins only)",
        "alarms", json!([id()]), None, (200, Some(r("AlarmChannel"))), &[400, 403, 404],
    )),
    api!("PUT" "/v1/alarm-channels/{id}", Rule::Admin, channels::update, op(
        "Change an alarm channel; url and secret left out keep their values (admins only)",
        "alarms", json!([id()]), Some(body(r("AlarmChannelSpec"), true)), (200, Some(r("AlarmChannel"))), &[400, 403, 404, 409, 413, 422],
    )),
    api!("DELETE" "/v1/alarm-channels/{id}", Rule::Admin, channels::delete, op(
        "Delete an alarm channel no job or group names (admins only)",
        "alarms", json!([id()]), None, (204, None), &[400, 403, 404, 409, 413],
    )),
    api!("POST" "/v1/alarm-channels/{id}/test", Rule::Admin, channels::test, op(
        "Send a test message to an alarm channel now, once (502 with the receiver's refusal)",
        "alarms", json!([id()]), None, (200, Some(exact(json!({ "delivered": boolean() })))), &[400, 403, 404, 413, 502],
    )),
    api!("GET" "/v1/runs/{id}/alarms", Rule::Read(Target::Run), channels::run_alarms, op(
        "The deliveries of a run's alarm, each with its channel, state, attempts and last error",
        "runs", json!([id()]), None, (200, Some(arr(r("AlarmDelivery")))), &[400, 403, 404],
    )),
    api!("GET" "/v1/alarm-events", Rule::Admin, channels::alarm_events, op(
        "List the alarms no run raised (a workflow instance failed, a group without a live executor and its return), newest first, each with its deliveries (admins only)",
        "alarms",
        json!([
            query("event", string_enum(&["workflow_failed", "no_executor", "executor_back"]), "only alarms of this kind"),
            query("subject", int(), "only alarms about this workflow instance or group id"),
            query("before_id", int(), "paging: only alarms with a smaller id"),
            limit(channels::MAX_EVENTS, 50),
        ]),
        None, (200, Some(arr(r("AlarmEventEntry")))), &[400, 403],
    )),
    api!("GET" "/v1/workflow-instances/{id}/alarms", Rule::Admin, channels::instance_alarms, op(
        "The alarm of a failed workflow instance, with its deliveries (empty when none was raised)",
        "workflows", json!([id()]), None, (200, Some(arr(r("AlarmEventEntry")))), &[400, 403, 404],
    )),
];
