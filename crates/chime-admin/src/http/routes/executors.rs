//! The routes of executors, the dashboard and the schedule preview.

use super::Route;
use crate::http::access::Rule;
use crate::http::openapi::{
    arr, boolean, exact, executors_out, int, int_range, op, query, schedule_types, string, times, LATEST,
};
use crate::http::{console_api as console, rest};
use serde_json::json;

/// The routes of executors, the dashboard and the schedule preview.
pub(super) const ROUTES: &[Route] = &[
    api!("GET" "/v1/executors", Rule::List { field: "group_id" }, rest::list_executors, op(
        "Executors per group with last heartbeat",
        "executors",
        json!([query("group", string(), "only this group (app name or id)")]),
        None,
        (200, Some(executors_out())),
        &[403, 404],
    )),
    api!("GET" "/v1/stats", Rule::Authenticated, console::stats, op(
        "Dashboard numbers of the caller's groups: counts, runs per day in [from, to) (at most 366 days; default the last 7), dispatch lateness",
        "console",
        json!([query("from", int_range(0, LATEST), "first day, epoch ms (1970 to 9999); default 7 days before `to`"), query("to", int_range(0, LATEST), "end of the range (exclusive), epoch ms; later than `from`; default the end of today (UTC)")]),
        None,
        (200, Some(exact(json!({ "groups": int(), "jobs": int(), "running_jobs": int(), "executors": int(), "days": arr(exact(json!({ "day": int(), "success": int(), "failed": int(), "killed": int(), "running": int(), "skipped": int() }))), "lateness": exact(json!({ "count": { "type": "number" }, "mean_seconds": { "type": "number" }, "current_seconds": { "type": "number" }, "buckets": arr(exact(json!({ "le": string(), "count": { "type": "number" } }))) })) })))),
        &[400],
    )),
    api!("GET" "/v1/schedule/preview", Rule::Authenticated, console::schedule_preview, op(
        "Next fire times of a schedule not saved yet, with UTC offsets",
        "console",
        json!([query("type", schedule_types(), "schedule type, default CRON"), query("expr", string(), "cron expression or fixed-rate seconds"), query("tz", string(), "IANA zone, default the admin's"), query("count", int_range(1, 100), "how many, 1..100, default 5"), query("param", string(), "a job parameter: each fire time then shows it with its date placeholders filled in"), query("more", string(), "a job's further schedules, as the job body's more_schedules (a JSON array): the times of all of them, merged"), query("calendar", string(), "a business calendar's name: fires on days it does not count as business days are left out, and listed in skipped")]),
        None,
        (200, Some(exact(json!({ "time_zone": string(), "next": times(json!({ "utc_offset_secs": int(), "dst_shift": boolean(), "param": string() })), "skipped": times(json!({ "why": string() })) })))),
        &[400, 422],
    )),
    api!("GET" "/v1/options", Rule::Authenticated, console::options, {
        let choices = || arr(exact(json!({ "value": string(), "title": string() })));
        op(
            "The values of every job and run enum (wire value and English title), in XXL-JOB's order, and whether alarm e-mails can be sent",
            "console",
            json!([]),
            None,
            (
                200,
                Some(exact(json!({
                    "schedule_types": choices(), "misfire_strategies": choices(), "route_strategies": choices(),
                    "block_strategies": choices(), "glue_types": choices(), "trigger_types": choices(),
                    "run_statuses": arr(string()), "alarm_email": boolean()
                }))),
            ),
            &[],
        )
    }),
];
