//! Every route of `/v1` and `/console/api`, each declared once: its method and path, who may
//! use it, the handler that serves it and its OpenAPI operation. The router
//! ([`super::router`]), the access middleware (which finds a route's [`Rule`] on the request,
//! put there by the router from this table) and the OpenAPI document ([`openapi_document`])
//! are all built from [`ROUTES`], so a route is added in one place and the three cannot
//! disagree.
//!
//! The executor API (the XXL-JOB protocol at `/api/…`), `/metrics`, `/healthz`, the console's
//! static files and `/v1/openapi.json` itself are not here: they are open or authenticated by
//! the executor token, not by users, and are not part of the REST API.

use super::access::{Rule, Target};
use super::openapi::{
    apply_plan, apply_request, arr, audit_query, body, boolean, exact, executors_out, filter_text, group_spec, id,
    input, int, int_range, job_spec, jobs_document, key, limit, nullable, op, password, query, r, runs_query,
    schedule_types, string, string_enum, times, user_out, user_spec, LATEST,
};
use super::openapi::{instance_states, job_key, path, workflow_spec};
use super::{console_api as console, rest, workflows as wf};
use crate::center::Admin;
use axum::routing::{on, MethodFilter, MethodRouter};
use serde_json::{json, Value};
use std::sync::Arc;

/// One route: method, path, access rule, handler and documentation.
#[derive(Clone, Copy)]
pub struct Route {
    /// HTTP method, upper case.
    pub method: &'static str,
    /// Route pattern, as the router matches it (`/v1/jobs/{id}`).
    pub path: &'static str,
    /// Who may use it.
    pub rule: Rule,
    /// The handler, on the method it is given.
    serve: fn(MethodFilter) -> MethodRouter<Arc<Admin>>,
    /// The OpenAPI operation; `None` for the console's session routes, which are for the web
    /// console only and not part of the REST API.
    operation: Option<fn() -> Value>,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route")
            .field("method", &self.method)
            .field("path", &self.path)
            .field("rule", &self.rule)
            .finish_non_exhaustive()
    }
}

impl Route {
    /// The handler, answering this route's method only.
    pub fn method_router(&self) -> MethodRouter<Arc<Admin>> {
        (self.serve)(self.method_filter())
    }

    /// The route's OpenAPI operation, if it is part of the REST API.
    pub fn operation(&self) -> Option<Value> {
        self.operation.map(|describe| describe())
    }

    fn method_filter(&self) -> MethodFilter {
        match self.method {
            "GET" => MethodFilter::GET,
            "POST" => MethodFilter::POST,
            "PUT" => MethodFilter::PUT,
            "PATCH" => MethodFilter::PATCH,
            "DELETE" => MethodFilter::DELETE,
            // The table is a constant of this file; the unit test below builds every entry,
            // and every admin builds them all at start-up, before it serves anything.
            other => panic!("route table: unsupported method {other} for {}", self.path),
        }
    }
}

/// A documented route of the REST API.
const fn api(
    method: &'static str,
    path: &'static str,
    rule: Rule,
    serve: fn(MethodFilter) -> MethodRouter<Arc<Admin>>,
    describe: fn() -> Value,
) -> Route {
    Route {
        method,
        path,
        rule,
        serve,
        operation: Some(describe),
    }
}

/// A route of the web console's session, outside the REST API's document.
const fn console_only(
    method: &'static str,
    path: &'static str,
    rule: Rule,
    serve: fn(MethodFilter) -> MethodRouter<Arc<Admin>>,
) -> Route {
    Route {
        method,
        path,
        rule,
        serve,
        operation: None,
    }
}

/// Every route of `/v1` and `/console/api`.
pub const ROUTES: &[Route] = &[
    // Workflows: jobs of any group, so admins only.
    api(
        "GET",
        "/v1/workflows",
        Rule::Admin,
        |m| on(m, wf::list_workflows),
        || {
            op(
                "List workflows (admins only)",
                "workflows",
                json!([]),
                None,
                (200, Some(arr(r("Workflow")))),
                &[403],
            )
        },
    ),
    api(
        "POST",
        "/v1/workflows",
        Rule::Admin,
        |m| on(m, wf::create_workflow),
        || {
            op(
                "Create a workflow: a schedule and a DAG of nodes, each running a job (admins only)",
                "workflows",
                json!([]),
                Some(body(workflow_spec(), true)),
                (201, Some(r("Workflow"))),
                &[400, 403, 413, 422],
            )
        },
    ),
    api(
        "GET",
        "/v1/workflows/{id}",
        Rule::Admin,
        |m| on(m, wf::show_workflow),
        || {
            op(
                "Show a workflow",
                "workflows",
                json!([id()]),
                None,
                (200, Some(r("Workflow"))),
                &[400, 403, 404],
            )
        },
    ),
    api(
        "PUT",
        "/v1/workflows/{id}",
        Rule::Admin,
        |m| on(m, wf::update_workflow),
        || {
            op("Change a workflow (fields left out keep their value; running instances keep the graph they started with)", "workflows", json!([id()]), Some(body(workflow_spec(), true)), (200, Some(r("Workflow"))), &[400, 403, 404, 413, 422])
        },
    ),
    api(
        "PATCH",
        "/v1/workflows/{id}",
        Rule::Admin,
        |m| on(m, wf::update_workflow),
        || {
            op(
                "Change a workflow (same as PUT)",
                "workflows",
                json!([id()]),
                Some(body(workflow_spec(), true)),
                (200, Some(r("Workflow"))),
                &[400, 403, 404, 413, 422],
            )
        },
    ),
    api(
        "DELETE",
        "/v1/workflows/{id}",
        Rule::Admin,
        |m| on(m, wf::delete_workflow),
        || {
            op(
                "Delete a workflow and its finished instances (409 while one is queued or running)",
                "workflows",
                json!([id()]),
                None,
                (204, None),
                &[400, 403, 404, 409, 413],
            )
        },
    ),
    api(
        "POST",
        "/v1/workflows/{id}/start",
        Rule::Admin,
        |m| on(m, wf::start_workflow),
        || {
            op(
                "Start scheduling a workflow",
                "workflows",
                json!([id()]),
                None,
                (200, Some(r("Workflow"))),
                &[400, 403, 404, 413, 422],
            )
        },
    ),
    api(
        "POST",
        "/v1/workflows/{id}/stop",
        Rule::Admin,
        |m| on(m, wf::stop_workflow),
        || {
            op(
                "Stop scheduling a workflow (its instances go on)",
                "workflows",
                json!([id()]),
                None,
                (200, Some(r("Workflow"))),
                &[400, 403, 404, 413],
            )
        },
    ),
    api(
        "POST",
        "/v1/workflows/{id}/trigger",
        Rule::Admin,
        |m| on(m, wf::trigger_workflow),
        || {
            op(
                "Fire a workflow now: a new instance",
                "workflows",
                json!([id()]),
                Some(body(
                    input(json!({ "trigger_type": nullable(string_enum(&["API", "MANUAL"])) })),
                    false,
                )),
                (202, Some(exact(json!({ "instance_id": int(), "workflow_id": int() })))),
                &[400, 403, 404, 413, 422],
            )
        },
    ),
    api(
        "GET",
        "/v1/workflow-instances",
        Rule::Admin,
        |m| on(m, wf::list_instances),
        || {
            op(
                "List workflow instances, newest first (their nodes in /v1/workflow-instances/{id})",
                "workflows",
                json!([
                    query("workflow_id", int(), "only instances of this workflow"),
                    query("state", instance_states(), "only instances in this state"),
                    query("before_id", int(), "paging: only instances with a smaller id"),
                    limit(wf::MAX_INSTANCES, 100)
                ]),
                None,
                (200, Some(arr(r("WorkflowInstance")))),
                &[400, 403],
            )
        },
    ),
    api(
        "GET",
        "/v1/workflow-instances/{id}",
        Rule::Admin,
        |m| on(m, wf::show_instance),
        || {
            op(
                "Show a workflow instance with the state, run and result of each node",
                "workflows",
                json!([id()]),
                None,
                (200, Some(r("WorkflowInstance"))),
                &[400, 403, 404],
            )
        },
    ),
    api(
        "POST",
        "/v1/workflow-instances/{id}/stop",
        Rule::Admin,
        |m| on(m, wf::stop_instance),
        || {
            op(
                "Stop an instance: its running nodes are stopped and their runs killed",
                "workflows",
                json!([id()]),
                None,
                (200, Some(r("WorkflowInstance"))),
                &[400, 403, 404, 409, 413],
            )
        },
    ),
    api(
        "POST",
        "/v1/workflow-instances/{id}/nodes/{node}/{action}",
        Rule::Admin,
        |m| on(m, wf::change_node),
        || {
            op("Retry a failed node, skip a node (its children go on as after a success) or mark a failed node succeeded; the rest of the instance goes on", "workflows", json!([
            id(),
            path("node", job_key(), "the node's key"),
            path("action", string_enum(&["retry", "skip", "succeed"]), "what to do")
        ]), None, (200, Some(r("WorkflowInstance"))), &[400, 403, 404, 409, 413])
        },
    ),
    // Executor groups.
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
    // Jobs.
    api(
        "GET",
        "/v1/jobs",
        Rule::List { field: "group_id" },
        |m| on(m, rest::list_jobs),
        || {
            op(
                "List jobs by id",
                "jobs",
                json!([
                    query("group", string(), "only jobs of this group (app name or id)"),
                    query("group_id", int(), "only jobs of this group"),
                    query(
                        "after_id",
                        int(),
                        "paging: only jobs with a larger id (pass the last id of the previous page)"
                    ),
                    query(
                        "running",
                        string_enum(&["true", "false"]),
                        "only started (true) or stopped (false) jobs"
                    ),
                    query(
                        "q",
                        filter_text(),
                        "description, handler or owner contains this (any case)"
                    ),
                    query("handler", filter_text(), "handler contains this (any case)"),
                    query("description", filter_text(), "description contains this (any case)"),
                    query("owner", filter_text(), "owner contains this (any case)"),
                    query(
                        "sort",
                        string_enum(crate::store::JobSort::NAMES),
                        "order by this field (default id)"
                    ),
                    query(
                        "order",
                        string_enum(&["asc", "desc"]),
                        "ascending (default) or descending"
                    ),
                    query(
                        "offset",
                        int_range(0, rest::MAX_JOB_OFFSET),
                        "paging: jobs of the ordered list to skip (default 0)"
                    ),
                    limit(10_000, 1000)
                ]),
                None,
                (200, Some(arr(r("Job")))),
                &[400, 403, 404],
            )
        },
    ),
    api(
        "POST",
        "/v1/jobs",
        Rule::CreateJob,
        |m| on(m, rest::create_job),
        || {
            op("Create a job (its group by `group_id` or `group`; 403 for a group the caller may not write, 422 when both name different groups)", "jobs", json!([]), Some(body(job_spec(), true)), (201, Some(r("Job"))), &[400, 403, 413, 422])
        },
    ),
    // Jobs as code: the desired state of groups and jobs, and applying one.
    api(
        "GET",
        "/v1/export",
        Rule::Authenticated,
        |m| on(m, rest::export_jobs),
        || {
            op(
                "Export groups and their jobs as a jobs document (the caller's groups; no ids, no secrets)",
                "jobs",
                json!([query("group", filter_text(), "only this group (app name)")]),
                None,
                (200, Some(jobs_document())),
                &[400, 404],
            )
        },
    ),
    api(
        "POST",
        "/v1/apply",
        Rule::Admin,
        |m| on(m, rest::apply_jobs),
        || {
            op(
                "Apply a jobs document in one transaction: creates, updates and (with `prune`) deletes, all or nothing; answers the plan (admins only)",
                "jobs",
                json!([]),
                Some(body(apply_request(), true)),
                (200, Some(apply_plan())),
                &[400, 403, 409, 413, 422],
            )
        },
    ),
    api(
        "GET",
        "/v1/jobs/{id}",
        Rule::Read(Target::Job),
        |m| on(m, rest::show_job),
        || {
            op(
                "Show a job",
                "jobs",
                json!([id()]),
                None,
                (200, Some(r("Job"))),
                &[400, 403, 404],
            )
        },
    ),
    api(
        "PUT",
        "/v1/jobs/{id}",
        Rule::UpdateJob,
        |m| on(m, rest::update_job),
        || {
            op("Change a job (fields left out keep their value; moving it needs write access to both groups, 422 when `group_id` and `group` name different groups)", "jobs", json!([id()]), Some(body(job_spec(), true)), (200, Some(r("Job"))), &[400, 403, 404, 413, 422])
        },
    ),
    api(
        "PATCH",
        "/v1/jobs/{id}",
        Rule::UpdateJob,
        |m| on(m, rest::update_job),
        || {
            op(
                "Change a job (same as PUT)",
                "jobs",
                json!([id()]),
                Some(body(job_spec(), true)),
                (200, Some(r("Job"))),
                &[400, 403, 404, 413, 422],
            )
        },
    ),
    api(
        "DELETE",
        "/v1/jobs/{id}",
        Rule::Write(Target::Job),
        |m| on(m, rest::delete_job),
        || {
            op(
                "Delete a job, its runs and script versions (409 while it is another job's child)",
                "jobs",
                json!([id()]),
                None,
                (204, None),
                &[400, 403, 404, 409, 413],
            )
        },
    ),
    api(
        "POST",
        "/v1/jobs/{id}/start",
        Rule::Write(Target::Job),
        |m| on(m, rest::start_job),
        || {
            op(
                "Start scheduling a job",
                "jobs",
                json!([id()]),
                None,
                (200, Some(r("Job"))),
                &[400, 403, 404, 413, 422],
            )
        },
    ),
    api(
        "POST",
        "/v1/jobs/{id}/stop",
        Rule::Write(Target::Job),
        |m| on(m, rest::stop_job),
        || {
            op(
                "Stop scheduling a job",
                "jobs",
                json!([id()]),
                None,
                (200, Some(r("Job"))),
                &[400, 403, 404, 413],
            )
        },
    ),
    api(
        "POST",
        "/v1/jobs/{id}/trigger",
        Rule::Write(Target::Job),
        |m| on(m, rest::trigger_job),
        || {
            op(
                "Run a job now (optional param, optional address from the group); the body may be left out",
                "jobs",
                json!([id()]),
                Some(body(
                    input(
                        json!({ "param": nullable(string()), "address": nullable(string()), "trigger_type": nullable(string_enum(&["API", "MANUAL"])) }),
                    ),
                    false,
                )),
                (202, Some(exact(json!({ "run_id": int(), "job_id": int() })))),
                &[400, 403, 404, 409, 413, 422],
            )
        },
    ),
    api(
        "GET",
        "/v1/jobs/{id}/next",
        Rule::Read(Target::Job),
        |m| on(m, rest::next_fires),
        || {
            op(
                "Next fire times",
                "jobs",
                json!([id(), query("count", int_range(1, 1000), "how many, 1..1000, default 5")]),
                None,
                (
                    200,
                    Some(exact(
                        json!({ "job_id": int(), "time_zone": string(), "next": times(json!({})) }),
                    )),
                ),
                &[400, 403, 404, 422],
            )
        },
    ),
    api(
        "GET",
        "/v1/jobs/{id}/glue",
        Rule::Admin,
        |m| on(m, console::glue_history),
        || {
            op(
                "The job's last 50 GLUE script versions, newest first (admins only)",
                "jobs",
                json!([id()]),
                None,
                (
                    200,
                    Some(arr(exact(
                        json!({ "id": int(), "glue_type": string(), "glue_source": string(), "author": string(), "remark": string(), "created_at": int() }),
                    ))),
                ),
                &[400, 403, 404],
            )
        },
    ),
    // Runs.
    api(
        "GET",
        "/v1/runs",
        Rule::List { field: "group_id" },
        |m| on(m, rest::list_runs),
        || {
            op(
                "List runs, newest first",
                "runs",
                runs_query(),
                None,
                (200, Some(arr(r("Run")))),
                &[400, 403, 404, 422],
            )
        },
    ),
    api(
        "POST",
        "/v1/runs/clear",
        Rule::Writer,
        |m| on(m, console::clear_runs),
        || {
            op(
                "Delete finished runs older than some days (non-admins name a job or group); the body may be left out",
                "runs",
                json!([]),
                Some(body(
                    input(
                        json!({ "older_than_days": nullable(json!({ "type": "integer", "format": "int64", "minimum": 0, "maximum": 36500, "description": "keep younger runs; default 30, 0 clears all finished runs" })), "job_id": nullable(int()), "group_id": nullable(int()) }),
                    ),
                    false,
                )),
                (200, Some(exact(json!({ "deleted": int() })))),
                &[400, 403, 404, 413, 422],
            )
        },
    ),
    api(
        "GET",
        "/v1/runs/{id}",
        Rule::Read(Target::Run),
        |m| on(m, rest::show_run),
        || {
            op(
                "Show a run",
                "runs",
                json!([id()]),
                None,
                (200, Some(r("Run"))),
                &[400, 403, 404],
            )
        },
    ),
    api(
        "GET",
        "/v1/runs/{id}/log",
        Rule::Read(Target::Run),
        |m| on(m, rest::run_log),
        || {
            op(
                "A run's log: the admin's stored copy once the run is final and its whole log stored (`stored`), else read from its executor, else the stored copy when the executor cannot answer (409 for a run never sent to one)",
                "runs",
                json!([
                    id(),
                    query("from_line", int_range(1, i32::MAX as i64), "first line, from 1")
                ]),
                None,
                (
                    200,
                    Some(exact(
                        json!({ "run_id": int(), "from_line": int(), "to_line": int(), "content": string(), "is_end": boolean(), "stored": boolean() }),
                    )),
                ),
                &[400, 403, 404, 409, 502],
            )
        },
    ),
    api(
        "POST",
        "/v1/runs/{id}/kill",
        Rule::Write(Target::Run),
        |m| on(m, rest::kill_run),
        || {
            op(
                "Kill a running run on its executor (409 when it is not running)",
                "runs",
                json!([id()]),
                None,
                (200, Some(r("Run"))),
                &[400, 403, 404, 409, 413, 502],
            )
        },
    ),
    // Executors, dashboard, schedule preview.
    api(
        "GET",
        "/v1/executors",
        Rule::List { field: "group_id" },
        |m| on(m, rest::list_executors),
        || {
            op(
                "Executors per group with last heartbeat",
                "executors",
                json!([query("group", string(), "only this group (app name or id)")]),
                None,
                (200, Some(executors_out())),
                &[403, 404],
            )
        },
    ),
    api(
        "GET",
        "/v1/stats",
        Rule::Authenticated,
        |m| on(m, console::stats),
        || {
            op("Dashboard numbers of the caller's groups: counts, runs per day in [from, to) (at most 366 days; default the last 7), dispatch lateness", "console", json!([
            query("from", int_range(0, LATEST), "first day, epoch ms (1970 to 9999); default 7 days before `to`"),
            query("to", int_range(0, LATEST), "end of the range (exclusive), epoch ms; later than `from`; default the end of today (UTC)")
        ]), None, (200, Some(exact(json!({
            "groups": int(), "jobs": int(), "running_jobs": int(), "executors": int(),
            "days": arr(exact(json!({ "day": int(), "success": int(), "failed": int(), "killed": int(), "running": int(), "skipped": int() }))),
            "lateness": exact(json!({ "count": { "type": "number" }, "mean_seconds": { "type": "number" }, "current_seconds": { "type": "number" },
                "buckets": arr(exact(json!({ "le": string(), "count": { "type": "number" } }))) }))
        })))), &[400])
        },
    ),
    api(
        "GET",
        "/v1/schedule/preview",
        Rule::Authenticated,
        |m| on(m, console::schedule_preview),
        || {
            op(
                "Next fire times of a schedule not saved yet, with UTC offsets",
                "console",
                json!([
                    query("type", schedule_types(), "schedule type, default CRON"),
                    query("expr", string(), "cron expression or fixed-rate seconds"),
                    query("tz", string(), "IANA zone, default the admin's"),
                    query("count", int_range(1, 100), "how many, 1..100, default 5")
                ]),
                None,
                (
                    200,
                    Some(exact(
                        json!({ "time_zone": string(), "next": times(json!({ "utc_offset_secs": int(), "dst_shift": boolean() })) }),
                    )),
                ),
                &[400, 422],
            )
        },
    ),
    api(
        "GET",
        "/v1/options",
        Rule::Authenticated,
        |m| on(m, console::options),
        || {
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
        },
    ),
    // Users and audit.
    api(
        "GET",
        "/v1/users",
        Rule::Admin,
        |m| on(m, console::list_users),
        || {
            op(
                "List console users (admins only)",
                "console",
                json!([]),
                None,
                (200, Some(arr(user_out()))),
                &[403],
            )
        },
    ),
    api(
        "POST",
        "/v1/users",
        Rule::Admin,
        |m| on(m, console::create_user),
        || {
            op(
                "Create a console user (admins only)",
                "console",
                json!([]),
                Some(body(user_spec(true), true)),
                (201, Some(user_out())),
                &[400, 403, 413, 422],
            )
        },
    ),
    api(
        "GET",
        "/v1/users/{id}",
        Rule::Admin,
        |m| on(m, console::show_user),
        || {
            op(
                "Show a console user (admins only)",
                "console",
                json!([id()]),
                None,
                (200, Some(user_out())),
                &[400, 403, 404],
            )
        },
    ),
    api(
        "PUT",
        "/v1/users/{id}",
        Rule::Admin,
        |m| on(m, console::update_user),
        || {
            op(
                "Change a console user's role, groups, write access or password (admins only)",
                "console",
                json!([id()]),
                Some(body(user_spec(false), true)),
                (200, Some(user_out())),
                &[400, 403, 404, 413, 422],
            )
        },
    ),
    api(
        "DELETE",
        "/v1/users/{id}",
        Rule::Admin,
        |m| on(m, console::delete_user),
        || {
            op(
                "Delete a console user (admins only; not yourself)",
                "console",
                json!([id()]),
                None,
                (204, None),
                &[400, 403, 404, 409, 413],
            )
        },
    ),
    api(
        "POST",
        "/v1/me/password",
        Rule::Authenticated,
        |m| on(m, console::change_password),
        || {
            op(
                "Change your own console password (the API token has none: 403)",
                "console",
                json!([]),
                Some(body(
                    json!({ "type": "object", "additionalProperties": false, "required": ["current_password", "new_password"], "properties": { "current_password": string(), "new_password": password() } }),
                    true,
                )),
                (204, None),
                &[400, 403, 413, 422],
            )
        },
    ),
    api(
        "GET",
        "/v1/audit",
        Rule::Admin,
        |m| on(m, console::list_audit),
        || {
            op(
                "The audit log, newest first (admins only)",
                "console",
                audit_query(),
                None,
                (
                    200,
                    Some(arr(exact(
                        json!({ "id": int(), "at": int(), "username": string(), "action": string(), "target": string(), "detail": { "description": "JSON: the response status, the reason of a refusal, the request body with secrets removed" } }),
                    ))),
                ),
                &[400, 403],
            )
        },
    ),
    // Console session.
    console_only("POST", "/console/api/login", Rule::Public, |m| on(m, console::login)),
    console_only("POST", "/console/api/logout", Rule::Authenticated, |m| {
        on(m, console::logout)
    }),
    console_only("GET", "/console/api/me", Rule::Authenticated, |m| on(m, console::me)),
];

/// The OpenAPI 3.1 document of the REST API, served at `/v1/openapi.json`.
pub fn openapi_document() -> Value {
    super::openapi::document(
        ROUTES
            .iter()
            .filter_map(|route| Some((route.method, route.path, route.operation()?))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Every entry builds (its method is one the router knows), and no method and path is
    /// declared twice.
    #[test]
    fn every_route_builds_once() {
        let mut seen = BTreeSet::new();
        for route in ROUTES {
            let _ = route.method_router();
            assert!(
                seen.insert((route.method, route.path)),
                "{} {} twice",
                route.method,
                route.path
            );
        }
    }

    /// The document describes the routes of `/v1`, and only they are documented.
    #[test]
    fn the_rest_api_and_only_it_is_documented() {
        for route in ROUTES {
            assert_eq!(
                route.operation().is_some(),
                route.path.starts_with("/v1/"),
                "{} {}",
                route.method,
                route.path
            );
        }
        let doc = openapi_document();
        let described: usize = doc["paths"]
            .as_object()
            .unwrap()
            .values()
            .map(|ops| ops.as_object().unwrap().len())
            .sum();
        assert_eq!(described, ROUTES.iter().filter(|r| r.path.starts_with("/v1/")).count());
    }

    /// Every reference points at something defined, every operation answers 401 and 503, and
    /// each has exactly one success status (204 without a body).
    #[test]
    fn references_resolve_and_common_statuses_are_listed() {
        let doc = openapi_document();
        let text = doc.to_string();
        for piece in text.split("\"$ref\":\"#/components/").skip(1) {
            let target = piece.split('"').next().unwrap();
            let (kind, name) = target.split_once('/').unwrap();
            assert!(
                doc["components"][kind][name].is_object(),
                "#/components/{target} is not defined"
            );
        }
        for (path, ops) in doc["paths"].as_object().unwrap() {
            for (method, op) in ops.as_object().unwrap() {
                for code in ["401", "503"] {
                    assert!(op["responses"][code].is_object(), "{method} {path} lacks {code}");
                }
                let ok: Vec<&String> = op["responses"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .filter(|c| c.starts_with('2'))
                    .collect();
                assert_eq!(ok.len(), 1, "{method} {path}: one success status");
                if ok[0] == "204" {
                    assert!(
                        op["responses"]["204"].get("content").is_none(),
                        "{method} {path}: 204 has no body"
                    );
                }
            }
        }
    }
}
