//! XXL-JOB 3.5's job API on the executor endpoint: `/api/addJob`, `/api/updateJob`,
//! `/api/removeJob`, `/api/startJob`, `/api/stopJob`, `/api/triggerJob`. Tools that create
//! their jobs at start-up call it with an executor's credentials.
//!
//! Access, as XXL-JOB 3.5 has it and no looser: the call names an executor's app name
//! (`XXL-JOB-APPNAME`) and carries an access token (`XXL-JOB-ACCESS-TOKEN`); the group of that
//! app name must exist and the token must be its own (or, for a group without one, the
//! admin's). A setup without any token is refused: an unset token would otherwise let anyone
//! who can reach the admin write jobs. Beyond XXL-JOB, a caller acts on the jobs of its own
//! group only: an executor's token cannot create, change or run another group's jobs.
//!
//! Calls are limited to 100 per 30 s per admin, as XXL-JOB limits them (`code` 502); a call
//! beyond is answered at once rather than held. Every reply is HTTP 200 with XXL-JOB 3.5's
//! envelope, `{"code":200,"msg":null,"data":"7"}`; every call past the access check is
//! written to the audit log as user `openapi:<app name>`.

use super::{count_refusal, token_matches, Admin, Body, Bytes, HeaderMap, Response, SocketAddr, ACCESS_TOKEN_HEADER};
use super::{APPNAME_HEADER, JOB_API_BODY_LIMIT};
use crate::api::{JobInfoPatch, SchedulePatch};
use crate::center::OpError;
use crate::model::{Group, Invalid, Job, JobSpec};
use axum::body::to_bytes;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use chime_protocol::{
    messages, JobAddRequest, JobFields, JobOperateRequest, JobTriggerRequest, JobUpdateRequest, ReturnT, TriggerType,
};
use serde::de::DeserializeOwned;
use std::sync::Arc;
use std::time::Instant;

/// Who a job the job API creates or changes was saved by (recorded with its GLUE versions).
const AUTHOR: &str = "openapi";

/// `code` of a reply refused by the rate limit (XXL-JOB's).
const RATE_LIMITED_CODE: i32 = 502;

/// Characters of an app name header read at most: longer names are no group's.
const MAX_APP_NAME_CHARS: usize = chime_protocol::MAX_APP_NAME_CHARS;

/// Writes `r` as XXL-JOB 3.5 does: HTTP 200, payload under `data`, nulls written out.
fn reply(r: ReturnT<String>) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        r.to_data_json(),
    )
        .into_response()
}

/// Why a job API call failed: a body that is not the call's request, or the operation's
/// failure. The status it is audited with is [`OpError::status`]'s (the reply itself is always
/// HTTP 200, as XXL-JOB's).
enum Failure {
    /// The body is not a request of this call, or the call is unknown.
    Request(String),
    /// The operation refused or failed.
    Op(OpError),
}

impl Failure {
    fn status(&self) -> StatusCode {
        match self {
            Failure::Request(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Failure::Op(e) => e.status(),
        }
    }

    /// The reply's `msg`: a refused field as XXL-JOB names it.
    fn message(&self) -> String {
        match self {
            Failure::Request(m) => m.clone(),
            Failure::Op(e) => match e.invalid() {
                Some(i) => format!("{}: {}", xxl_field(&i.field), i.message),
                None => e.public_message(),
            },
        }
    }
}

impl<E: Into<OpError>> From<E> for Failure {
    fn from(e: E) -> Failure {
        Failure::Op(e.into())
    }
}

/// Chime's field names (of the REST API) as XXL-JOB's job API spells them, so a refusal
/// names the field the caller sent.
fn xxl_field(field: &str) -> &str {
    match field {
        "description" => "name",
        "owner" => "author",
        "alarm_contacts" => "alarmEmail",
        "schedule_type" | "running" => "scheduleType",
        "schedule_expr" => "scheduleConf",
        "misfire_strategy" => "misfireStrategy",
        "route_strategy" => "executorRouteStrategy",
        "handler" => "executorHandler",
        "param" => "executorParam",
        "block_strategy" => "executorBlockStrategy",
        "timeout_secs" => "executorTimeout",
        "retry_count" => "executorFailRetryCount",
        "glue_type" => "glueType",
        "glue_source" => "glueSource",
        "address" => "addressList",
        "group_id" | "group" => "jobGroup",
        other => other,
    }
}

/// Serves one job API call: access, rate limit, body, operation, audit.
pub(super) async fn job_api(
    admin: &Arc<Admin>,
    uri: &str,
    headers: &HeaderMap,
    declared: Option<u64>,
    peer: Option<SocketAddr>,
    body: Body,
) -> Response {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("").trim();
    let (given, app) = (text(ACCESS_TOKEN_HEADER), text(APPNAME_HEADER));
    let shown_app = || Some(app.chars().take(MAX_APP_NAME_CHARS).collect::<String>());
    if given.is_empty() || app.is_empty() {
        count_refusal(admin, uri, peer, shown_app, "access token or app name missing");
        return reply(ReturnT::fail(messages::TOKEN_OR_APPNAME_EMPTY));
    }
    let Some(group) = caller_group(admin, app, given) else {
        count_refusal(admin, uri, peer, shown_app, "wrong access token for the app name");
        return reply(ReturnT::fail(messages::TOKEN_OR_APPNAME_INVALID));
    };
    // Counted per group: one group's tool looping cannot use up the calls of the others.
    if !admin.job_api_permits.try_take(&group.id, Instant::now()) {
        return reply(ReturnT {
            code: RATE_LIMITED_CODE,
            msg: Some(messages::TOO_MANY_REQUESTS.to_owned()),
            content: None,
        });
    }
    if declared.is_some_and(|n| n > JOB_API_BODY_LIMIT as u64) {
        return reply(too_large());
    }
    let Ok(body) = to_bytes(body, JOB_API_BODY_LIMIT).await else {
        return reply(too_large());
    };
    let user = format!("openapi:{app}");
    let action = format!("POST /api/{uri}");
    let (target, done) = operate(admin, uri, &group, &body).await;
    let target = target.map_or_else(|| "/v1/jobs".to_owned(), |id| format!("/v1/jobs/{id}"));
    match done {
        Ok(data) => {
            super::super::access::audit(admin, &user, &action, &target, StatusCode::OK, None, &body).await;
            reply(match data {
                Some(d) => ReturnT::with_content(d),
                None => ReturnT::success(),
            })
        }
        Err(failure) => {
            if matches!(failure, Failure::Op(OpError::Forbidden(_))) {
                count_refusal(admin, uri, peer, shown_app, "a job of another group");
            }
            let msg = failure.message();
            super::super::access::audit(admin, &user, &action, &target, failure.status(), Some(&msg), &body).await;
            reply(ReturnT::fail(msg))
        }
    }
}

fn too_large() -> ReturnT<String> {
    ReturnT::fail(format!(
        "invalid request, requestBody is larger than {} KiB",
        JOB_API_BODY_LIMIT / 1024
    ))
}

/// The group of app name `app` when `given` is its token (its own, else the admin's). A group
/// without any token is no caller's: XXL-JOB 3.5 requires one.
fn caller_group(admin: &Admin, app: &str, given: &str) -> Option<Group> {
    let group = admin.directory.group_by_app(app)?;
    let global = admin.config.access_token.as_deref().filter(|t| !t.trim().is_empty());
    let expected = group.effective_token(global).filter(|t| !t.trim().is_empty())?;
    token_matches(given, expected).then_some(group)
}

/// Parses a job API body: a JSON object, with the field at fault named.
fn parse<T: DeserializeOwned>(body: &Bytes) -> Result<T, Failure> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(Failure::Request("invalid request, requestBody empty.".to_owned()));
    }
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| Failure::Request(format!("invalid request, requestBody is not JSON: {e}")))?;
    if !value.is_object() {
        return Err(Failure::Request(
            "invalid request, requestBody must be a JSON object".to_owned(),
        ));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        Failure::Request(format!("{path}: {}", e.into_inner()))
    })
}

/// Runs the operation of `uri` for a caller of `group`; returns the job acted on (for the
/// audit) and the reply's `data`.
async fn operate(
    admin: &Admin,
    uri: &str,
    group: &Group,
    body: &Bytes,
) -> (Option<i64>, Result<Option<String>, Failure>) {
    match uri {
        "addJob" => match add(admin, group, body).await {
            Ok(id) => (Some(id), Ok(Some(id.to_string()))),
            Err(e) => (None, Err(e)),
        },
        "updateJob" => {
            let req: JobUpdateRequest = match parse(body) {
                Ok(r) => r,
                Err(e) => return (None, Err(e)),
            };
            (Some(req.id), update(admin, group, req).await.map(|()| None))
        }
        "removeJob" | "startJob" | "stopJob" => {
            let req: JobOperateRequest = match parse(body) {
                Ok(r) => r,
                Err(e) => return (None, Err(e)),
            };
            (Some(req.id), switch(admin, group, uri, req.id).await.map(|()| None))
        }
        "triggerJob" => {
            let req: JobTriggerRequest = match parse(body) {
                Ok(r) => r,
                Err(e) => return (None, Err(e)),
            };
            (Some(req.id), trigger(admin, group, &req).await.map(|()| None))
        }
        other => (None, Err(Failure::Request(messages::uri_not_found(other)))),
    }
}

/// A job of the caller's group, or why not.
async fn own_job(admin: &Admin, group: &Group, id: i64) -> Result<Job, Failure> {
    if id <= 0 {
        return Err(Invalid::new("id", "is required (the job's id)").into());
    }
    let job = admin.store.job(id).await?;
    if job.group_id != group.id {
        return Err(OpError::Forbidden(format!(
            "forbidden: job {id} is not of executor group '{}'; the job API acts on the caller's own group's jobs only",
            group.app_name
        ))
        .into());
    }
    Ok(job)
}

/// The common fields as Chime's job input. XXL-JOB requires a name and an author.
fn spec_of(fields: &JobFields, on_add: bool) -> Result<JobSpec, Failure> {
    for (field, value) in [("name", &fields.name), ("author", &fields.author)] {
        let blank = value.as_deref().is_none_or(|v| v.trim().is_empty());
        if blank && (on_add || value.is_some()) {
            return Err(Invalid::new(field, "must not be blank").into());
        }
    }
    let upper = |v: &Option<String>| v.as_deref().map(|s| s.trim().to_owned());
    Ok(JobSpec {
        description: fields.name.clone(),
        // Descriptive fields added later are left out (`..`): they take their default.
        #[allow(clippy::needless_update)]
        info: JobInfoPatch {
            owner: fields.author.clone(),
            alarm_contacts: fields.alarm_email.clone(),
            ..Default::default()
        },
        schedule: SchedulePatch {
            schedule_type: upper(&fields.schedule_type),
            schedule_expr: fields.schedule_conf.clone(),
            misfire_strategy: upper(&fields.misfire_strategy),
            ..SchedulePatch::default()
        },
        task: crate::api::JobTaskPatch {
            route_strategy: upper(&fields.executor_route_strategy),
            handler: fields.executor_handler.clone(),
            param: fields.executor_param.clone(),
            block_strategy: upper(&fields.executor_block_strategy),
            timeout_secs: fields.executor_timeout,
            retry_count: fields.executor_fail_retry_count,
            ..Default::default()
        },
        // XXL-JOB's rule for this API: no child jobs (`childJobId` is forced empty).
        child_job_ids: Some(Vec::new()),
        ..JobSpec::default()
    })
}

async fn add(admin: &Admin, group: &Group, body: &Bytes) -> Result<i64, Failure> {
    let req: JobAddRequest = parse(body)?;
    if req.job_group <= 0 {
        return Err(Invalid::new("jobGroup", format!("is required (the caller's group is {})", group.id)).into());
    }
    if req.job_group != group.id {
        return Err(OpError::Forbidden(format!(
            "forbidden: jobGroup {} is not the caller's executor group '{}' ({}); the job API creates jobs in the caller's own group only",
            req.job_group, group.app_name, group.id
        ))
        .into());
    }
    let mut spec = spec_of(&req.job, true)?;
    spec.task.glue_type = req.job.glue_type.as_deref().map(|s| s.trim().to_owned());
    spec.task.glue_source = req.job.glue_source.clone();
    // New jobs are created stopped, as XXL-JOB creates them: `startJob` schedules them.
    spec.running = Some(false);
    let job = admin.create_job(&spec, group.id, AUTHOR, None).await?;
    Ok(job.id)
}

async fn update(admin: &Admin, group: &Group, req: JobUpdateRequest) -> Result<(), Failure> {
    let current = own_job(admin, group, req.id).await?;
    // The group is kept and the GLUE fields are ignored, as XXL-JOB's update does.
    let spec = spec_of(&req.job, false)?;
    admin.update_job(&current, &spec, current.group_id, AUTHOR).await?;
    Ok(())
}

async fn switch(admin: &Admin, group: &Group, uri: &str, id: i64) -> Result<(), Failure> {
    let job = own_job(admin, group, id).await?;
    match uri {
        "removeJob" => admin.delete_job(job.id).await?,
        "startJob" => drop(admin.start_job(job.id).await?),
        _ => drop(admin.stop_job(job.id).await?),
    }
    Ok(())
}

async fn trigger(admin: &Admin, group: &Group, req: &JobTriggerRequest) -> Result<(), Failure> {
    let job = own_job(admin, group, req.id).await?;
    // Each address must be a current executor of the job's group, as for a REST trigger; the
    // run goes to the first (a manual trigger in Chime names one executor).
    let mut first = None;
    for a in req.addresses() {
        let checked = admin.check_trigger_address(job.group_id, a)?;
        first.get_or_insert(checked);
    }
    // XXL-JOB sends a trigger's own parameter, `""` when none is given, not the job's.
    let param = req.executor_param.clone().unwrap_or_default();
    admin
        .trigger_job(job.id, TriggerType::Manual, Some(param), first)
        .await?;
    Ok(())
}
