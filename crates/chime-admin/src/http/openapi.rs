//! The OpenAPI 3.1 description of `/v1`, served at `/v1/openapi.json`.
//!
//! Each operation is declared with its route in [`super::routes::ROUTES`]; this module holds the
//! pieces they are written with (parameters, the error responses every operation shares, the
//! schemas not yet derived) and assembles the document. The schemas of groups and jobs, their
//! answers and bodies, are derived from the wire types in [`crate::api`].
//!
//! The document is meant to be exactly true, and is checked to be: it is built from the same
//! table as the router, and `scripts/openapi-fuzz` runs schemathesis
//! against a real admin, which fails on any status, header, content type or body the document
//! does not describe. So each operation lists every status it can answer, request bodies say
//! whether they may be left out, and fields the API accepts as `null` (meaning "keep" or "the
//! default") are declared nullable.

use serde_json::{json, Value};

/// The last millisecond of year 9999: the latest time the dashboard accepts.
pub(super) const LATEST: i64 = 253_402_300_799_999;

/// Statuses every operation of `/v1` can answer besides its own: 401 (no or wrong credentials)
/// from the access middleware, and 503 when the database was momentarily busy.
const ALWAYS: &[u16] = &[401, 503];

/// The path parameter naming a business calendar.
pub(super) fn calendar_name() -> Value {
    path(
        "name",
        json!({ "type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$" }),
        "the calendar's name",
    )
}

/// An iCalendar (`.ics`) file as a request body.
pub(super) fn ics_body() -> Value {
    json!({ "required": true, "content": { "text/calendar": { "schema": { "type": "string", "maxLength": crate::api::calendar_ics::MAX_ICS_BYTES } } } })
}

/// `operation` answering 200 with an iCalendar (`.ics`) file.
pub(super) fn ics_answer(mut operation: Value) -> Value {
    operation["responses"]["200"] = json!({ "description": "the calendar as an iCalendar file", "content": { "text/calendar": { "schema": string() } } });
    operation
}

/// A JSON request body: `required` is false where the API takes an empty body as `{}`.
pub(super) fn body(schema: Value, required: bool) -> Value {
    json!({ "required": required, "content": { "application/json": { "schema": schema } } })
}

/// One operation. `ok` is the success status with its JSON body, or `None` for a reply without
/// a body (204); `errors` are the operation's own failure statuses (see [`ALWAYS`]).
pub(super) fn op(
    summary: &str,
    tag: &str,
    params: Value,
    request: Option<Value>,
    ok: (u16, Option<Value>),
    errors: &[u16],
) -> Value {
    let mut responses = serde_json::Map::new();
    let (status, schema) = ok;
    let success = match schema {
        Some(schema) => json!({ "description": "success", "content": { "application/json": { "schema": schema } } }),
        None => json!({ "description": "done (no body)" }),
    };
    responses.insert(status.to_string(), success);
    let mut codes: Vec<u16> = errors.iter().chain(ALWAYS).copied().collect();
    codes.sort_unstable();
    codes.dedup();
    for code in codes {
        responses.insert(
            code.to_string(),
            json!({ "$ref": format!("#/components/responses/E{code}") }),
        );
    }
    let mut o = json!({ "summary": summary, "tags": [tag], "parameters": params, "responses": responses });
    if let Some(b) = request {
        o["requestBody"] = b;
    }
    o
}

/// The operation of `PUT` and `PATCH` on an object changed in place (a group, job or
/// workflow), the same for each but for its summary: `spec` is its body, the object as changed
/// (`answer`, a component's name) its answer, `param` the path parameter naming it.
pub(super) fn change(summary: &str, tag: &str, param: Value, spec: Value, answer: &str) -> Value {
    let request = Some(body(spec, true));
    op(
        summary,
        tag,
        json!([param]),
        request,
        (200, Some(r(answer))),
        &[400, 403, 404, 413, 422],
    )
}

pub(super) fn r(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

pub(super) fn arr(item: Value) -> Value {
    json!({ "type": "array", "items": item })
}

/// An object whose properties are all always present and nothing else is.
pub(super) fn exact(props: Value) -> Value {
    let required: Vec<String> = props
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    json!({ "type": "object", "additionalProperties": false, "required": required, "properties": props })
}

/// A request object: only these keys (the API refuses unknown ones with 400).
pub(super) fn input(props: Value) -> Value {
    json!({ "type": "object", "additionalProperties": false, "properties": props })
}

/// `schema`, or `null` (which the API takes as "left out").
pub(super) fn nullable(schema: Value) -> Value {
    json!({ "anyOf": [schema, { "type": "null" }] })
}

pub(super) fn path(name: &str, schema: Value, desc: &str) -> Value {
    json!({ "name": name, "in": "path", "required": true, "schema": schema, "description": desc })
}

pub(super) fn query(name: &str, schema: Value, desc: &str) -> Value {
    json!({ "name": name, "in": "query", "required": false, "schema": schema, "description": desc })
}

pub(super) fn int() -> Value {
    json!({ "type": "integer", "format": "int64" })
}

pub(super) fn int_range(min: i64, max: i64) -> Value {
    json!({ "type": "integer", "format": "int64", "minimum": min, "maximum": max })
}

pub(super) fn string() -> Value {
    json!({ "type": "string" })
}

pub(super) fn boolean() -> Value {
    json!({ "type": "boolean" })
}

/// A text filter of a list: at most `MAX_FILTER_CHARS` characters.
pub(super) fn filter_text() -> Value {
    json!({ "type": "string", "maxLength": super::rest::MAX_FILTER_CHARS })
}

pub(super) fn string_enum(values: &[&str]) -> Value {
    json!({ "type": "string", "enum": values })
}

/// A failure reply: the JSON error body, and the headers that come with some statuses.
fn error_response(code: u16, description: &str) -> Value {
    let mut resp = json!({ "description": description, "content": { "application/json": { "schema": r("Error") } } });
    let header = match code {
        401 => Some(("WWW-Authenticate", "always `Bearer`")),
        503 => Some(("Retry-After", "seconds to wait before trying again")),
        _ => None,
    };
    if let Some((name, desc)) = header {
        resp["headers"] = json!({ name: { "required": true, "description": desc, "schema": string() } });
    }
    resp
}

/// The names of an enum's values, as a string schema.
fn names_of<T: 'static>(all: &[T], name: fn(&T) -> &'static str) -> Value {
    let values: Vec<&str> = all.iter().map(name).collect();
    string_enum(&values)
}

/// Schedule types (`CRON`, `FIX_RATE`, …).
pub(super) fn schedule_types() -> Value {
    names_of(chime_protocol::ScheduleType::ALL, |v| v.as_str())
}

fn misfire_strategies() -> Value {
    names_of(chime_protocol::MisfireStrategy::ALL, |v| v.as_str())
}

fn route_strategies() -> Value {
    names_of(chime_protocol::RouteStrategy::ALL, |v| v.as_str())
}

fn block_strategies() -> Value {
    names_of(chime_protocol::BlockStrategy::ALL, |v| v.as_str())
}

fn glue_types() -> Value {
    names_of(chime_protocol::GlueType::ALL, |v| v.as_str())
}

fn address_types() -> Value {
    string_enum(&["auto", "manual"])
}

fn run_statuses() -> Value {
    string_enum(crate::model::RunStatus::ALL)
}

fn protocols() -> Value {
    names_of(chime_protocol::ProtocolGeneration::ALL, |v| v.as_str())
}

/// The `{id}` path parameter.
pub(super) fn id() -> Value {
    path("id", int(), "id")
}

/// The `{backfill}` path parameter: a backfill's id.
pub(super) fn backfill_id() -> Value {
    path("backfill", int(), "backfill id")
}

/// The `{key}` path parameter of a group.
pub(super) fn key() -> Value {
    path("key", string(), "group id or app name")
}

/// The `limit` query parameter.
pub(super) fn limit(max: i64, default: i64) -> Value {
    query(
        "limit",
        int_range(1, max),
        &format!("at most this many entries, 1..{max}, default {default}"),
    )
}

fn from_to(what: &str) -> [Value; 2] {
    [
        query("from", int(), &format!("only {what} at or after this time (epoch ms)")),
        query(
            "to",
            int(),
            &format!("only {what} before this time (epoch ms); later than `from`"),
        ),
    ]
}

/// Names are trimmed, then must be 1 to 64 bytes without whitespace (app names: nor commas).
/// The patterns are no stricter than that (a longer name of multi-byte characters can match
/// and still be refused with 422), so input that breaks them is always refused.
fn app_name() -> Value {
    json!({ "type": "string", "pattern": "^\\s*[^\\s,]{1,64}\\s*$" })
}

fn username() -> Value {
    json!({ "type": "string", "pattern": "^\\s*\\S{1,64}\\s*$" })
}

/// A new console password.
pub(super) fn password() -> Value {
    json!({ "type": "string", "minLength": 8, "maxLength": 256, "description": "8 to 256 characters" })
}

/// A group's body (`GroupSpec`): on create `app_name` is required, on change every field may
/// be left out.
pub(super) fn group_spec(create: bool) -> Value {
    if create {
        json!({ "allOf": [r("GroupSpec")], "required": ["app_name"], "properties": { "app_name": string() } })
    } else {
        r("GroupSpec")
    }
}

/// A job's body (`JobSpec`; create and change alike: fields left out keep their value or the
/// default).
pub(super) fn job_spec() -> Value {
    r("JobSpec")
}

/// A workflow's graph: nodes (each a job) and the edges between them; the same shape in and out.
fn workflow_definition() -> Value {
    input_required(
        json!({
            "nodes": arr(input_required(json!({
                "key": job_key(),
                "job_id": int(),
                "param": json!({ "type": "string", "maxLength": 65535, "description": "sent instead of the job's; {{node.result}} is an upstream node's result message (refused for a job that runs code: a script, or the shell handler; it reads CHIME_UPSTREAM_RESULTS)" }),
                "join": string_enum(&["all", "any"]),
                "priority": json!({ "type": "integer", "minimum": -1000, "maximum": 1000, "description": "its runs queue with this priority instead of the job's" }),
                "concurrency_key": json!({ "type": "string", "maxLength": 128, "description": "its runs count under this concurrency key instead of the job's; \"\": none" }),
            }), &["key", "job_id"])),
            "edges": arr(input_required(json!({
                "from": job_key(),
                "to": job_key(),
                "when": string_enum(&["success", "failure", "always"]),
            }), &["from", "to"])),
        }),
        &["nodes"],
    )
}

/// The body of a pause (of a job, a group's jobs or a workflow): until when.
pub(super) fn pause_body() -> Value {
    body(
        input_required(
            json!({ "until": { "type": "integer", "format": "int64", "description": "the end of the pause, epoch ms: in the future, within 366 days" } }),
            &["until"],
        ),
        true,
    )
}

/// What pausing or resuming a group's jobs answers.
pub(super) fn group_pause_answer() -> Value {
    exact(json!({ "group_id": int(), "jobs": int(), "paused_until": int() }))
}

/// A request object with only these keys, of which `required` must be there.
fn input_required(props: Value, required: &[&str]) -> Value {
    let mut o = input(props);
    o["required"] = json!(required);
    o
}

/// A workflow's alarm channels: comma-separated names of existing channels.
fn alarm_channel_list() -> Value {
    json!({ "type": "string", "maxLength": 255, "description": "alarm channels told when an instance fails (comma-separated names of existing channels)" })
}

/// The body that creates or changes a workflow.
pub(super) fn workflow_spec() -> Value {
    input(with_schedule(
        json!({
            "name": nullable(json!({ "type": "string", "minLength": 1, "maxLength": 128 })),
            "description": nullable(json!({ "type": "string", "maxLength": 255 })),
            "definition": nullable(workflow_definition()),
            "running": nullable(boolean()),
            "alarm_channels": nullable(alarm_channel_list()),
        }),
        nullable,
    ))
}

/// `props` with a workflow's schedule and instance limit, as the workflow body and the jobs
/// document both take them; `opt` makes each optional as the place needs.
fn with_schedule(mut props: Value, opt: impl Fn(Value) -> Value) -> Value {
    let schedule = [
        ("schedule_type", opt(schedule_types())),
        ("schedule_expr", opt(string())),
        ("time_zone", opt(string())),
        ("misfire_strategy", opt(misfire_strategies())),
        ("calendar", opt(business_calendar_ref())),
        ("max_instances", opt(int_range(0, 10_000))),
        ("on_limit", opt(string_enum(&["skip", "queue"]))),
    ];
    if let Some(map) = props.as_object_mut() {
        map.extend(schedule.map(|(k, v)| (k.to_owned(), v)));
    }
    props
}

/// A schedule's business calendar, by name ('' for none).
fn business_calendar_ref() -> Value {
    json!({ "type": "string", "maxLength": 64, "description": "the business calendar (/v1/calendars) whose business days it fires on; empty: every day" })
}

/// The states of a workflow instance.
pub(super) fn instance_states() -> Value {
    names_of(&crate::workflow::dag::InstanceState::ALL, |s| s.as_str())
}

/// A job key: 1 to 64 of `A-Z a-z 0-9 . _ -` (`.` and `..` are refused with 422).
pub(super) fn job_key() -> Value {
    json!({ "type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$" })
}

/// A field of a jobs document as exported (`out`: always there) or as applied (may be null).
fn doc_field(out: bool) -> impl Fn(Value) -> Value {
    move |v| if out { v } else { nullable(v) }
}

/// A jobs document's object: every field there when exported (`out`), else only `required`.
fn doc_object(out: bool, props: Value, required: &[&str]) -> Value {
    if out {
        exact(props)
    } else {
        input_required(props, required)
    }
}

/// A jobs document's job: the fields of a job, `key` required, children by key.
fn doc_job(out: bool) -> Value {
    let opt = doc_field(out);
    let props = json!({
        "key": job_key(),
        "description": opt(string()),
        "schedule_type": opt(schedule_types()),
        "schedule_expr": opt(string()),
        "time_zone": opt(string()),
        "misfire_strategy": opt(misfire_strategies()),
        "calendar": opt(business_calendar_ref()),
        "route_strategy": opt(route_strategies()),
        "handler": opt(string()),
        "param": opt(json!({ "type": "string", "maxLength": 65535 })),
        "block_strategy": opt(block_strategies()),
        "timeout_secs": opt(int_range(0, i32::MAX as i64)),
        "retry_count": opt(int_range(0, 100)),
        "children": opt(arr(json!({ "type": "string", "description": "`key` (same group) or `app_name/key`" }))),
        "glue_type": opt(glue_types()),
        "glue_source": opt(string()),
        "running": opt(boolean()),
    });
    let mut props = props;
    if let (Some(props), Some(info)) = (props.as_object_mut(), info_properties().as_object()) {
        props.extend(info.iter().map(|(k, v)| (k.clone(), opt(v.clone()))));
    }
    doc_object(out, props, &["key"])
}

/// The schemas of a job's descriptive fields ([`crate::api::JobInfo`]), by name.
fn info_properties() -> Value {
    crate::api::schema::body_schema::<crate::api::JobInfo>()["properties"].take()
}

/// A jobs document's group with its jobs. Its own access token is never part of it.
fn doc_group(out: bool) -> Value {
    let opt = doc_field(out);
    let props = json!({
        "app_name": app_name(),
        "title": opt(string()),
        "address_type": opt(address_types()),
        "addresses": opt(arr(string())),
        "protocol": opt(protocols()),
        "keep_logs": opt(boolean()),
        "alarm_channels": opt(json!({ "type": "string", "maxLength": 255, "description": "alarm channels of the group's jobs that name none (comma-separated names)" })),
        "access_token_set": opt(json!({ "type": "boolean", "description": "the group has its own access token (ignored by apply)" })),
        "insecure_no_token": opt(json!({ "type": "boolean", "description": "the group's executors work without an access token (ignored by apply: set through the group API)" })),
        "jobs": arr(doc_job(out)),
    });
    doc_object(out, props, &["app_name"])
}

/// The jobs document `GET /v1/export` answers.
/// A workflow of a jobs document (`out`: as exported, every field there).
fn doc_workflow(out: bool) -> Value {
    let opt = doc_field(out);
    let node = json!({
        "key": job_key(),
        "job": json!({ "type": "string", "description": "the node's job: app_name/key" }),
        "param": string(),
        "join": string_enum(&["all", "any"]),
    });
    let edge = json!({
        "from": job_key(),
        "to": job_key(),
        "when": string_enum(&["success", "failure", "always"]),
    });
    let props = json!({
        "name": json!({ "type": "string", "minLength": 1, "maxLength": 128 }),
        "description": opt(string()),
        "running": opt(boolean()),
        "alarm_channels": opt(alarm_channel_list()),
        "nodes": arr(input_required(node, &["key", "job"])),
        "edges": arr(input_required(edge, &["from", "to"])),
    });
    let props = with_schedule(props, opt);
    doc_object(out, props, &["name"])
}

pub(super) fn jobs_document() -> Value {
    let mut doc = exact(
        json!({ "groups": arr(doc_group(true)), "workflows": arr(doc_workflow(true)), "alarm_channels": arr(r("AlarmChannelSpec")), "calendars": arr(r("BusinessCalendarSpec")) }),
    );
    // Exported only when there are any (and for admins).
    doc["required"] = json!(["groups"]);
    doc
}

/// The body of `POST /v1/apply`: a jobs document and the flags.
pub(super) fn apply_request() -> Value {
    input(json!({
        "groups": arr(doc_group(false)),
        "workflows": arr(doc_workflow(false)),
        "alarm_channels": arr(r("AlarmChannelSpec")),
        "calendars": arr(r("BusinessCalendarSpec")),
        "dry_run": nullable(json!({ "type": "boolean", "description": "work out the plan, change nothing" })),
        "prune": nullable(json!({ "type": "boolean", "description": "delete the jobs of the named groups that the document does not list" })),
    }))
}

/// What `POST /v1/apply` did (or would do).
pub(super) fn apply_plan() -> Value {
    let entry = exact(json!({
        "kind": string_enum(&["group", "job", "workflow"]),
        "group": string(),
        "key": nullable(string()),
        "fields": arr(string()),
    }));
    exact(json!({
        "create": arr(entry.clone()), "update": arr(entry.clone()), "delete": arr(entry),
        "applied": boolean(),
    }))
}

/// A console user as the API shows it.
pub(super) fn user_out() -> Value {
    exact(json!({
        "id": int(), "username": string(), "role": string_enum(&["admin", "user"]),
        "can_write": boolean(), "group_ids": arr(int()), "group_roles": arr(r("GroupGrant")), "source": string(),
    }))
}

/// A console user's body: on create name and password are required.
pub(super) fn user_spec(create: bool) -> Value {
    let mut s = input(json!({
        "username": if create { username() } else { nullable(username()) },
        "password": if create { password() } else { nullable(password()) },
        "role": nullable(string_enum(&["admin", "user"])),
        "can_write": nullable(boolean()),
        "group_ids": nullable(arr(int())),
        "group_roles": nullable(arr(r("GroupGrant"))),
    }));
    if create {
        s["required"] = json!(["username", "password"]);
    }
    s
}

/// A list of fire times (`at`, `local`), each with `extra` fields.
pub(super) fn times(extra: Value) -> Value {
    let mut item = json!({ "at": int(), "local": { "type": "string", "description": "RFC 3339 in the zone" } });
    if let (Some(m), Some(e)) = (item.as_object_mut(), extra.as_object()) {
        m.extend(e.clone());
    }
    arr(exact(item))
}

/// The query parameters of the run list.
pub(super) fn runs_query() -> Value {
    let mut params = vec![
        query("job_id", int(), "only runs of this job"),
        query("group", string(), "only runs of this group (app name or id)"),
        query("group_id", int(), "only runs of this group"),
        query("status", run_statuses(), "only runs in this state"),
    ];
    params.extend(from_to("runs scheduled"));
    params.push(query(
        "before_id",
        int(),
        "paging: only runs with a smaller id (pass the last id of the previous page)",
    ));
    params.push(limit(10_000, 100));
    Value::Array(params)
}

/// The query parameters of the audit log.
pub(super) fn audit_query() -> Value {
    let mut params = vec![
        query("username", string(), "only entries of this user (exact)"),
        query("action", string(), "only entries whose action contains this (any case)"),
    ];
    params.extend(from_to("entries"));
    params.push(query("before_id", int(), "paging: only entries with a smaller id"));
    params.push(limit(1000, 100));
    Value::Array(params)
}

/// The executors of each group, as `/v1/executors` lists them.
pub(super) fn executors_out() -> Value {
    arr(exact(json!({
        "group_id": int(), "app_name": string(), "title": string(), "address_type": address_types(),
        "executors": arr(exact(json!({ "app_name": string(), "address": string(), "last_heartbeat": int(), "source": string_enum(&["registry", "manual"]), "handlers": arr(string()), "answers": nullable(boolean()), "linked": boolean() })))
    })))
}

/// The failure replies every operation refers to (`#/components/responses/E…`).
fn error_responses() -> serde_json::Map<String, Value> {
    [
        (
            400,
            "malformed request: bad JSON, a value of the wrong type, an unknown key, a bad query or path value",
        ),
        (
            401,
            "not authenticated: no or a wrong bearer token, or the console session has ended",
        ),
        (
            403,
            "not allowed: the caller's role, executor groups or read-only account, or a missing CSRF token",
        ),
        (404, "the target does not exist"),
        (
            409,
            "refused in the current state (a group that still has jobs, a run that is not running, …)",
        ),
        (413, "request body larger than 4 MiB"),
        (422, "a value is not acceptable; `field` names it"),
        (502, "the executor refused or could not be reached"),
        (
            503,
            "the database was momentarily busy; nothing changed, send the same request again",
        ),
    ]
    .into_iter()
    .map(|(code, desc)| (format!("E{code}"), error_response(code, desc)))
    .collect()
}

/// The document, with `operations` as its paths: `(method, path, operation)`, the method in
/// any case.
pub fn document<'a>(operations: impl IntoIterator<Item = (&'a str, &'a str, Value)>) -> Value {
    let schemas = component_schemas();
    let mut paths = serde_json::Map::new();
    for (method, path, operation) in operations {
        let ops = paths.entry(path.to_owned()).or_insert_with(|| json!({}));
        ops[method.to_ascii_lowercase()] = operation;
    }
    json!({
        "openapi": "3.1.0",
        "info": { "title": "Chime scheduling center REST API", "version": env!("CARGO_PKG_VERSION"),
                  "description": "Groups, jobs, runs and executors, and what the web console uses (users, audit log, dashboard). Authenticate with `Authorization: Bearer <api token>` (or a console session). Times are epoch milliseconds (UTC). Errors: `{\"error\": \"...\", \"field\": \"...\"}`. A method a path does not have is answered 405 with `Allow`." },
        "security": [{ "bearer": [] }],
        "paths": paths,
        "components": {
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } },
            "responses": error_responses(),
            "schemas": schemas,
        }
    })
}

/// The component schemas: the wire types' derived ones ([`crate::api::schema::components`])
/// and those still written here.
fn component_schemas() -> serde_json::Map<String, Value> {
    use chime_protocol::TriggerType;
    let mut schemas = crate::api::schema::components();
    schemas.extend(crate::api::schema::answer_components::<crate::model::Run>());
    let written = json!({
                "Error": { "type": "object", "additionalProperties": false, "required": ["error"], "properties": { "error": string(), "field": string() } },
                "Workflow": exact(json!({
                    "id": int(), "name": string(), "description": string(), "partition": int(),
                    "schedule_type": schedule_types(), "schedule_expr": string(), "time_zone": string(),
                    "misfire_strategy": misfire_strategies(), "calendar": business_calendar_ref(), "max_instances": int(), "on_limit": string_enum(&["skip", "queue"]),
                    "alarm_channels": alarm_channel_list(),
                    "definition": workflow_definition(),
                    "version": { "type": "integer", "format": "int64", "description": "the graph's version: a new one each time a changed graph is saved" },
                    "running": boolean(), "anchor_at": int(), "next_fire_at": int(),
                    "paused_until": { "type": "integer", "format": "int64", "description": "not fired before this time, epoch ms (0, or a time passed: not paused)" },
                    "last_fire_at": int(), "created_at": int(), "updated_at": int() })),
                "WorkflowInstance": exact(json!({
                    "id": int(), "workflow_id": int(), "scheduled_at": int(), "trigger_type": names_of(TriggerType::ALL, |v| v.as_str()),
                    "state": instance_states(), "stopped_by": string(), "created_at": int(), "finished_at": int(),
                    "definition": workflow_definition(),
                    "version": { "type": "integer", "format": "int64", "description": "the version of the workflow's graph it was fired from" },
                    "nodes": arr(exact(json!({
                        "node": string(), "state": string_enum(&["running", "succeeded", "failed", "skipped", "not_run", "stopped"]),
                        "run_id": int(), "result": string(), "started_at": int(), "finished_at": int() }))) }))

    });
    if let Value::Object(written) = written {
        schemas.extend(written);
    }
    schemas
}
