//! The routes of business calendars: read by anyone logged in (a job's form lists them),
//! written by administrators (a calendar is shared by every group's jobs, and an edit re-plans
//! them all).

use super::Route;
use crate::http::access::Rule;
use crate::http::calendars;
use crate::http::openapi::{arr, body, calendar_name, ics_answer, ics_body, op, query, r, string};
use serde_json::json;

/// The routes of business calendars.
pub(super) const ROUTES: &[Route] = &[
    api!("GET" "/v1/calendars", Rule::Authenticated, calendars::list, op(
        "List business calendars, each with how many jobs and workflows use it",
        "calendars", json!([]), None, (200, Some(arr(r("BusinessCalendar")))), &[403],
    )),
    api!("POST" "/v1/calendars", Rule::Admin, calendars::create, op(
        "Create a business calendar: a zone, the week's workdays, holidays and make-up workdays (admins only)",
        "calendars", json!([]), Some(body(r("BusinessCalendarSpec"), true)), (201, Some(r("BusinessCalendar"))), &[400, 403, 409, 413, 422],
    )),
    api!("GET" "/v1/calendars/{name}", Rule::Authenticated, calendars::show, op(
        "Show a business calendar",
        "calendars", json!([calendar_name()]), None, (200, Some(r("BusinessCalendar"))), &[400, 403, 404],
    )),
    api!("PUT" "/v1/calendars/{name}", Rule::Admin, calendars::update, op(
        "Replace a business calendar's days; the next fires of the jobs and workflows using it are planned again (admins only)",
        "calendars", json!([calendar_name()]), Some(body(r("BusinessCalendarSpec"), true)), (200, Some(r("BusinessCalendar"))), &[400, 403, 404, 413, 422],
    )),
    api!("DELETE" "/v1/calendars/{name}", Rule::Admin, calendars::delete, op(
        "Delete a business calendar no job or workflow uses (admins only)",
        "calendars", json!([calendar_name()]), None, (204, None), &[400, 403, 404, 409, 413],
    )),
    api!("GET" "/v1/calendars/{name}/ics", Rule::Authenticated, calendars::export_ics, ics_answer(op(
        "A business calendar as an iCalendar (.ics) file: an all-day event per holiday, and per make-up workday (CATEGORIES:WORKDAY)",
        "calendars", json!([calendar_name()]), None, (200, None), &[400, 403, 404],
    ))),
    api!("PUT" "/v1/calendars/{name}/ics", Rule::Admin, calendars::import_ics, op(
        "Create or replace a business calendar from an iCalendar (.ics) file: each all-day event a holiday, or a make-up workday when its CATEGORIES holds WORKDAY or its summary says 补班/上班/workday (admins only)",
        "calendars",
        json!([calendar_name(), query("time_zone", string(), "the calendar's IANA zone (required when the file has no X-WR-TIMEZONE)")]),
        Some(ics_body()), (200, Some(r("BusinessCalendar"))), &[400, 403, 413, 422],
    )),
];
