//! The routes of jobs, and jobs as code: the desired state of groups and jobs, and applying one.

use super::Route;
use crate::http::access::{Rule, Target};
use crate::http::openapi::{
    apply_plan, apply_request, arr, backfill_id, body, change, exact, filter_text, id, input, int, int_range, job_spec,
    jobs_document, limit, nullable, op, pause_body, query, r, string, string_enum, times,
};
use crate::http::{backfills, console_api as console, pause, rest};
use serde_json::json;

/// The routes of jobs, and jobs as code: the desired state of groups and jobs, and applying one.
pub(super) const ROUTES: &[Route] = &[
    api!("GET" "/v1/jobs", Rule::List { field: "group_id" }, rest::list_jobs, op(
        "List jobs by id",
        "jobs",
        json!([query("group", string(), "only jobs of this group (app name or id)"), query("group_id", int(), "only jobs of this group"), query("after_id", int(), "paging: only jobs with a larger id (pass the last id of the previous page)"), query("running", string_enum(&["true", "false"]), "only started (true) or stopped (false) jobs"), query("q", filter_text(), "description, handler or owner contains this (any case)"), query("handler", filter_text(), "handler contains this (any case)"), query("description", filter_text(), "description contains this (any case)"), query("owner", filter_text(), "owner contains this (any case)"), query("sort", string_enum(crate::store::JobSort::NAMES), "order by this field (default id)"), query("order", string_enum(&["asc", "desc"]), "ascending (default) or descending"), query("offset", int_range(0, rest::MAX_JOB_OFFSET), "paging: jobs of the ordered list to skip (default 0)"), limit(10_000, 1000)]),
        None,
        (200, Some(arr(r("Job")))),
        &[400, 403, 404],
    )),
    api!("POST" "/v1/jobs", Rule::CreateJob, rest::create_job, op(
        "Create a job (its group by `group_id` or `group`; 403 for a group the caller may not write, 422 when both name different groups)",
        "jobs", json!([]), Some(body(job_spec(), true)), (201, Some(r("Job"))), &[400, 403, 413, 422],
    )),
    // Jobs as code: the desired state of groups and jobs, and applying one.
    api!("GET" "/v1/export", Rule::Authenticated, rest::export_jobs, op(
        "Export groups and their jobs as a jobs document (the caller's groups; no ids, no secrets)",
        "jobs",
        json!([query("group", filter_text(), "only this group (app name)")]),
        None,
        (200, Some(jobs_document())),
        &[400, 404],
    )),
    api!("POST" "/v1/apply", Rule::Writer, rest::apply_jobs, op(
        "Apply a jobs document in one transaction: creates, updates and (with `prune`) deletes, all or nothing; answers the plan (administrators: anything; editors: the jobs of groups they edit, without prune)",
        "jobs", json!([]), Some(body(apply_request(), true)), (200, Some(apply_plan())), &[400, 403, 409, 413, 422],
    )),
    api!("GET" "/v1/jobs/{id}", Rule::Read(Target::Job), rest::show_job, op(
        "Show a job",
        "jobs", json!([id()]), None, (200, Some(r("Job"))), &[400, 403, 404],
    )),
    api!("PUT" "/v1/jobs/{id}", Rule::UpdateJob, rest::update_job, change(
        "Change a job (fields left out keep their value; moving it needs write access to both groups, 422 when `group_id` and `group` name different groups)",
        "jobs", id(), job_spec(), "Job",
    )),
    api!("PATCH" "/v1/jobs/{id}", Rule::UpdateJob, rest::update_job, change(
        "Change a job (same as PUT)",
        "jobs", id(), job_spec(), "Job",
    )),
    api!("DELETE" "/v1/jobs/{id}", Rule::Write(Target::Job), rest::delete_job, op(
        "Delete a job, its runs and script versions (409 while it is another job's child)",
        "jobs", json!([id()]), None, (204, None), &[400, 403, 404, 409, 413],
    )),
    api!("POST" "/v1/jobs/{id}/start", Rule::Operate(Target::Job), rest::start_job, op(
        "Start scheduling a job",
        "jobs", json!([id()]), None, (200, Some(r("Job"))), &[400, 403, 404, 413, 422],
    )),
    api!("POST" "/v1/jobs/{id}/stop", Rule::Operate(Target::Job), rest::stop_job, op(
        "Stop scheduling a job",
        "jobs", json!([id()]), None, (200, Some(r("Job"))), &[400, 403, 404, 413],
    )),
    api!("POST" "/v1/jobs/{id}/pause", Rule::Operate(Target::Job), pause::pause_job, op(
        "Pause a job until a time: fires due before then are missed fires, handled by its misfire policy when the pause ends",
        "jobs", json!([id()]), Some(pause_body()), (200, Some(r("Job"))), &[400, 403, 404, 413, 422],
    )),
    api!("POST" "/v1/jobs/{id}/resume", Rule::Operate(Target::Job), pause::resume_job, op(
        "End a job's pause now",
        "jobs", json!([id()]), None, (200, Some(r("Job"))), &[400, 403, 404, 413],
    )),
    api!("POST" "/v1/jobs/{id}/trigger", Rule::Operate(Target::Job), rest::trigger_job, op(
        "Run a job now (optional param, optional address from the group); the body may be left out",
        "jobs",
        json!([id()]),
        Some(body(input(json!({ "param": nullable(string()), "address": nullable(string()), "trigger_type": nullable(string_enum(&["API", "MANUAL"])) })), false)),
        (202, Some(exact(json!({ "run_id": int(), "job_id": int() })))),
        &[400, 403, 404, 409, 413, 422],
    )),
    api!("POST" "/v1/jobs/{id}/backfills", Rule::Operate(Target::Job), backfills::create_for_job, op(
        "Backfill a job: run it once for every fire time its schedule had in a past range (both ends included), each run scheduled at its fire time, at most `at_once` under way; a fire time backfilled before is left out",
        "jobs", json!([id()]), Some(body(r("BackfillSpec"), true)), (201, Some(r("Backfill"))), &[400, 403, 404, 413, 422],
    )),
    api!("GET" "/v1/jobs/{id}/backfills", Rule::Read(Target::Job), backfills::list_for_job, op(
        "A job's 50 newest backfills, newest first, each with how far it got",
        "jobs", json!([id()]), None, (200, Some(arr(r("Backfill")))), &[400, 403, 404],
    )),
    api!("GET" "/v1/jobs/{id}/backfills/{backfill}", Rule::Read(Target::Job), backfills::show_for_job, op(
        "Show a backfill of a job, with how far it got",
        "jobs", json!([id(), backfill_id()]), None, (200, Some(r("Backfill"))), &[400, 403, 404],
    )),
    api!("POST" "/v1/jobs/{id}/backfills/{backfill}/cancel", Rule::Operate(Target::Job), backfills::cancel_for_job, op(
        "Cancel a running backfill: its fire times not started are let go (a later backfill may take them on); its runs under way go on",
        "jobs", json!([id(), backfill_id()]), None, (200, Some(r("Backfill"))), &[400, 403, 404, 409, 413],
    )),
    api!("GET" "/v1/jobs/{id}/next", Rule::Read(Target::Job), rest::next_fires, op(
        "Next fire times, each with the parameter a run of it would be sent with, and the days its business calendar leaves out",
        "jobs",
        json!([id(), query("count", int_range(1, 1000), "how many, 1..1000, default 5")]),
        None,
        (200, Some(exact(json!({ "job_id": int(), "time_zone": string(), "calendar": string(), "next": times(json!({ "param": string() })), "skipped": times(json!({ "why": string() })) })))),
        &[400, 403, 404, 422],
    )),
    api!("GET" "/v1/jobs/{id}/glue", Rule::Admin, console::glue_history, op(
        "The job's last 50 GLUE script versions, newest first (admins only)",
        "jobs",
        json!([id()]),
        None,
        (200, Some(arr(exact(json!({ "id": int(), "glue_type": string(), "glue_source": string(), "author": string(), "remark": string(), "created_at": int() }))))),
        &[400, 403, 404],
    )),
];
