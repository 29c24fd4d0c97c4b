//! Chime's REST API, `/v1/…`: groups, jobs, runs, executors. JSON in and out, bearer-token
//! authentication, proper HTTP statuses, and errors that name the field at fault.

use super::access::{forbidden, AuditContext, Audited, Principal};
use super::error::ApiError;
use crate::center::{Admin, ApplyMode};
use crate::dispatch::client::Target;
use crate::model::{now_ms, ExecutorEntry, Group, GroupSpec, Job, JobSpec, Run, RunFilter, RunStatus};
use crate::store::{ApplyPlan, JobQuery, JobSort, JobsDocument};
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use chime_protocol::TriggerType;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

type ApiResult<T> = Result<T, ApiError>;
type Params = Query<HashMap<String, String>>;

/// Parses a JSON body, naming the field that does not fit (`serde_path_to_error`).
pub(super) fn parse_body<T: DeserializeOwned>(body: &Bytes) -> ApiResult<T> {
    if body.is_empty() {
        return Err(ApiError::bad_request(None, "request body must be a JSON object"));
    }
    let de = &mut serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let msg = inner.to_string();
        // Unknown keys: name the key itself.
        let field = if let Some(rest) = msg.strip_prefix("unknown field `") {
            rest.split('`').next().map(str::to_owned)
        } else if path != "." && !path.is_empty() {
            Some(path)
        } else {
            failing_key::<T>(body)
        };
        ApiError::bad_request(field.as_deref(), format!("invalid JSON body: {msg}"))
    })
}

/// How many of a body's keys [`failing_key`] reads on their own at the most.
const MAX_KEYS_SEARCHED: usize = 256;

/// The key of an object body whose value, read on its own, does not fit `T`. A value inside a
/// flattened group (`#[serde(flatten)]`: a job's task, descriptive fields, schedule) fails
/// without a path, because serde reads the group from a buffer the path tracker does not see;
/// reading each key alone finds it. `None` when the body is no object, or no key fails alone
/// (a missing required field fails every key alike, and names none).
fn failing_key<T: DeserializeOwned>(body: &[u8]) -> Option<String> {
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) else {
        return None;
    };
    map.into_iter().take(MAX_KEYS_SEARCHED).find_map(|(key, value)| {
        let alone = Value::Object(serde_json::Map::from_iter([(key.clone(), value)]));
        match serde_json::from_value::<T>(alone) {
            Err(e) if !e.to_string().starts_with("missing field") => Some(key),
            _ => None,
        }
    })
}

/// Parses a JSON body that may be left out: an empty (or blank) body is `T::default()`.
pub(super) fn parse_optional_body<T: DeserializeOwned + Default>(body: &Bytes) -> ApiResult<T> {
    if body.iter().all(u8::is_ascii_whitespace) {
        Ok(T::default())
    } else {
        parse_body(body)
    }
}

/// An optional integer query parameter: `None` when absent. A value that is given must be an
/// integer; an empty one (`?limit=`) is refused like any other, rather than quietly taken as
/// absent, so the API takes what its OpenAPI document says and nothing else.
pub(crate) fn int_param(q: &HashMap<String, String>, name: &str) -> ApiResult<Option<i64>> {
    match q.get(name) {
        None => Ok(None),
        Some(raw) => raw
            .parse::<i64>()
            .map(Some)
            .map_err(|_| ApiError::bad_request(Some(name), format!("'{raw}' is not an integer"))),
    }
}

/// An optional boolean query parameter: `None` when absent, else exactly `true` or `false`.
pub(crate) fn bool_param(q: &HashMap<String, String>, name: &str) -> ApiResult<Option<bool>> {
    match q.get(name).map(String::as_str) {
        None => Ok(None),
        Some("true") => Ok(Some(true)),
        Some("false") => Ok(Some(false)),
        Some(other) => Err(ApiError::bad_request(
            Some(name),
            format!("'{other}' is not true or false"),
        )),
    }
}

pub(super) fn path_id(raw: &str, what: &str) -> ApiResult<i64> {
    raw.parse::<i64>()
        .map_err(|_| ApiError::bad_request(Some("id"), format!("{what} id '{raw}' is not an integer")))
}

pub(super) fn limit_param(q: &HashMap<String, String>, default: i64, max: i64) -> ApiResult<i64> {
    let l = int_param(q, "limit")?.unwrap_or(default);
    if !(1..=max).contains(&l) {
        return Err(ApiError::bad_request(
            Some("limit"),
            format!("must be between 1 and {max}"),
        ));
    }
    Ok(l)
}

pub(super) async fn group_by_key(admin: &Admin, key: &str) -> ApiResult<Group> {
    match key.parse::<i64>() {
        Ok(id) => Ok(admin.store.group(id).await?),
        Err(_) => admin
            .store
            .group_by_app_name(key)
            .await?
            .ok_or_else(|| ApiError::not_found(format!("group '{key}'"))),
    }
}

/// The group a list is filtered to: `group_id`, else `group` (an id or an app name).
async fn group_filter(admin: &Admin, q: &HashMap<String, String>) -> ApiResult<Option<i64>> {
    match (int_param(q, "group_id")?, q.get("group")) {
        (Some(id), _) => Ok(Some(id)),
        (None, Some(app)) => Ok(Some(group_by_key(admin, app).await?.id)),
        (None, None) => Ok(None),
    }
}

pub(super) async fn list_groups(State(admin): State<Arc<Admin>>) -> ApiResult<Json<Vec<Group>>> {
    Ok(Json(admin.store.list_groups().await?))
}

pub(super) async fn create_group(State(admin): State<Arc<Admin>>, body: Bytes) -> ApiResult<(StatusCode, Json<Group>)> {
    let spec: GroupSpec = parse_body(&body)?;
    Ok((StatusCode::CREATED, Json(admin.create_group(&spec).await?)))
}

pub(super) async fn show_group(State(admin): State<Arc<Admin>>, Path(key): Path<String>) -> ApiResult<Json<Group>> {
    Ok(Json(group_by_key(&admin, &key).await?))
}

pub(super) async fn update_group(
    State(admin): State<Arc<Admin>>,
    Path(key): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Group>> {
    let spec: GroupSpec = parse_body(&body)?;
    let current = group_by_key(&admin, &key).await?;
    Ok(Json(admin.update_group(&current, &spec).await?))
}

pub(super) async fn delete_group(State(admin): State<Arc<Admin>>, Path(key): Path<String>) -> ApiResult<StatusCode> {
    let g = group_by_key(&admin, &key).await?;
    admin.delete_group(g.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Jobs by id. `who` is the caller the access middleware found; a console user limited to some
/// groups gets a page of jobs from those groups only.
pub(super) async fn list_jobs(
    State(admin): State<Arc<Admin>>,
    Extension(who): Extension<Principal>,
    Query(q): Params,
) -> ApiResult<Json<Vec<Job>>> {
    let group_id = group_filter(&admin, &q).await?;
    let running = bool_param(&q, "running")?;
    let sort = match q.get("sort") {
        None => JobSort::Id,
        Some(name) => JobSort::parse(name).ok_or_else(|| {
            ApiError::bad_request(
                Some("sort"),
                format!("unknown sort '{name}' (expected one of: {})", JobSort::NAMES.join(", ")),
            )
        })?,
    };
    let descending = match q.get("order").map(String::as_str) {
        None | Some("asc") => false,
        Some("desc") => true,
        Some(other) => {
            return Err(ApiError::bad_request(
                Some("order"),
                format!("'{other}' is not asc or desc"),
            ))
        }
    };
    let offset = int_param(&q, "offset")?.unwrap_or(0);
    if !(0..=MAX_JOB_OFFSET).contains(&offset) {
        return Err(ApiError::bad_request(
            Some("offset"),
            format!("must be between 0 and {MAX_JOB_OFFSET}"),
        ));
    }
    let query = JobQuery {
        group_id,
        scope: who.group_scope().map(<[i64]>::to_vec),
        running,
        text: text_param(&q, "q")?,
        handler: text_param(&q, "handler")?,
        description: text_param(&q, "description")?,
        owner: text_param(&q, "owner")?,
        sort,
        descending,
        after_id: int_param(&q, "after_id")?.unwrap_or(0),
        offset,
        limit: limit_param(&q, 1000, 10_000)?,
    };
    Ok(Json(admin.store.search_jobs(&query).await?))
}

/// The largest `offset` of the job list: deep pages cost the database a scan of every job
/// skipped; `after_id` pages without that cost.
pub(crate) const MAX_JOB_OFFSET: i64 = 100_000;
/// The longest text a job list filter takes (longer would match nothing a job can hold).
pub(crate) const MAX_FILTER_CHARS: usize = 200;

/// An optional text filter: `None` when absent or blank, refused when longer than
/// [`MAX_FILTER_CHARS`].
fn text_param(q: &HashMap<String, String>, name: &str) -> ApiResult<Option<String>> {
    match q.get(name).map(|v| v.trim()) {
        None | Some("") => Ok(None),
        Some(v) if v.chars().count() > MAX_FILTER_CHARS => Err(ApiError::bad_request(
            Some(name),
            format!("must be at most {MAX_FILTER_CHARS} characters"),
        )),
        Some(v) => Ok(Some(v.to_owned())),
    }
}

pub(super) async fn create_job(
    State(admin): State<Arc<Admin>>,
    who: Option<Extension<Principal>>,
    audit: Option<Extension<AuditContext>>,
    body: Bytes,
) -> ApiResult<(StatusCode, Extension<Audited>, Json<Job>)> {
    let spec: JobSpec = parse_body(&body)?;
    let group_id = admin.job_group(&spec, None).await?;
    if let Some(who) = who.as_deref() {
        who.check_write(group_id)?;
    }
    // The create's audit entry goes into the create's own transaction.
    let entry = audit.map(|a| a.entry(StatusCode::CREATED, &body));
    let job = admin
        .create_job(&spec, group_id, &author(who.as_deref()), entry)
        .await?;
    Ok((StatusCode::CREATED, Extension(Audited), Json(job)))
}

/// Who saved a job (recorded with GLUE versions): the console user, `api-token` for the bearer
/// token, or `api` when no caller is known.
pub(super) fn author(who: Option<&Principal>) -> String {
    who.map_or_else(|| "api".to_owned(), |p| p.username.clone())
}

pub(super) async fn show_job(State(admin): State<Arc<Admin>>, Path(id): Path<String>) -> ApiResult<Json<Job>> {
    Ok(Json(admin.store.job(path_id(&id, "job")?).await?))
}

pub(super) async fn update_job(
    State(admin): State<Arc<Admin>>,
    who: Option<Extension<Principal>>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Job>> {
    let id = path_id(&id, "job")?;
    let spec: JobSpec = parse_body(&body)?;
    let current = admin.store.job(id).await?;
    let group_id = admin.job_group(&spec, Some(&current)).await?;
    if let Some(who) = who.as_deref() {
        // Both ends of a move: the group the job leaves and the group it joins.
        who.check_write(current.group_id)?;
        who.check_write(group_id)?;
    }
    let job = admin
        .update_job(&current, &spec, group_id, &author(who.as_deref()))
        .await?;
    Ok(Json(job))
}

pub(super) async fn delete_job(State(admin): State<Arc<Admin>>, Path(id): Path<String>) -> ApiResult<StatusCode> {
    admin.delete_job(path_id(&id, "job")?).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub(super) async fn start_job(State(admin): State<Arc<Admin>>, Path(id): Path<String>) -> ApiResult<Json<Job>> {
    Ok(Json(admin.start_job(path_id(&id, "job")?).await?))
}

pub(super) async fn stop_job(State(admin): State<Arc<Admin>>, Path(id): Path<String>) -> ApiResult<Json<Job>> {
    Ok(Json(admin.stop_job(path_id(&id, "job")?).await?))
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct TriggerBody {
    param: Option<String>,
    address: Option<String>,
    /// `API` (default) or `MANUAL` (a person, e.g. through the CLI).
    trigger_type: Option<String>,
}

impl TriggerRequest for TriggerBody {
    fn trigger_type(&self) -> Option<&str> {
        self.trigger_type.as_deref()
    }
}

pub(super) async fn trigger_job(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let (id, body, trigger_type) = parse_trigger::<TriggerBody>(&id, "job", &body)?;
    let run_id = admin.trigger_job(id, trigger_type, body.param, body.address).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "run_id": run_id, "job_id": id }))))
}

/// The body of a trigger request (of a job or of a workflow), which may name its trigger type.
pub(super) trait TriggerRequest: DeserializeOwned + Default {
    /// The trigger type the caller asks for, if any.
    fn trigger_type(&self) -> Option<&str>;
}

/// A trigger request's path id (of a `what`), its optional body and the trigger type it asks
/// for, each checked.
pub(super) fn parse_trigger<T: TriggerRequest>(
    raw_id: &str,
    what: &str,
    body: &Bytes,
) -> ApiResult<(i64, T, TriggerType)> {
    let id = path_id(raw_id, what)?;
    let body: T = parse_optional_body(body)?;
    let trigger_type = requested_trigger_type(body.trigger_type())?;
    Ok((id, body, trigger_type))
}

/// The trigger type a trigger request names: `API` (the default) or `MANUAL` (a person, e.g.
/// through the CLI); nothing else may be claimed by a caller.
fn requested_trigger_type(named: Option<&str>) -> ApiResult<TriggerType> {
    match named {
        None | Some("API") => Ok(TriggerType::Api),
        Some("MANUAL") => Ok(TriggerType::Manual),
        Some(other) => Err(crate::model::Invalid::new(
            "trigger_type",
            format!("'{other}' is not allowed here (expected one of: API, MANUAL)"),
        )
        .into()),
    }
}

pub(super) async fn next_fires(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
    Query(q): Params,
) -> ApiResult<Json<Value>> {
    let job = admin.store.job(path_id(&id, "job")?).await?;
    let count = int_param(&q, "count")?.unwrap_or(5);
    if !(1..=1000).contains(&count) {
        return Err(ApiError::bad_request(Some("count"), "must be between 1 and 1000"));
    }
    let now = now_ms();
    let anchor = if job.running { job.anchor_at } else { now };
    let cal = job
        .calendar(anchor)
        .map_err(|e| crate::model::Invalid::new("schedule_expr", e))?;
    let zone: chrono_tz::Tz = job.time_zone.parse().unwrap_or(chrono_tz::UTC);
    // A fixed delay knows one fire at most: the next, unless its run is still under way.
    let fixed_delay = cal.fixed_delay_ms().is_some();
    let count = if fixed_delay { 1 } else { count };
    let mut out = Vec::new();
    let mut t = now;
    while out.len() < count as usize {
        let n = if fixed_delay && job.running {
            Some(job.next_fire_at).filter(|n| *n != crate::model::WAITING_FOR_RUN_END)
        } else {
            cal.next_after(t)
        };
        let Some(n) = n else { break };
        let local = chrono::DateTime::from_timestamp_millis(n)
            .map(|d| d.with_timezone(&zone).to_rfc3339())
            .unwrap_or_default();
        // The parameter a run of this fire would be sent with (its date placeholders filled).
        let param = crate::run::resolve_param(&job.param, n, &job.time_zone, job.business_days.as_deref());
        out.push(json!({ "at": n, "local": local, "param": param }));
        t = n;
    }
    // Days the job's business calendar leaves out, up to the last fire listed.
    let until = out.last().and_then(|f| f["at"].as_i64()).unwrap_or(now);
    let skipped = skipped_days(&cal, now, until, zone);
    Ok(Json(
        json!({ "job_id": job.id, "time_zone": job.time_zone, "calendar": job.calendar, "next": out, "skipped": skipped }),
    ))
}

/// The days between `after` and `until` on which `cal`'s business calendar leaves fires out
/// (at most a month of them), each with its first left-out fire, that time in `zone` and why:
/// the `skipped` of a preview.
pub(super) fn skipped_days(cal: &crate::calendar::Calendar, after: i64, until: i64, zone: chrono_tz::Tz) -> Vec<Value> {
    cal.skipped_between(after, until, 31)
        .into_iter()
        .map(|(at, why)| {
            let local = chrono::DateTime::from_timestamp_millis(at)
                .map(|d| d.with_timezone(&zone).to_rfc3339())
                .unwrap_or_default();
            json!({ "at": at, "local": local, "why": why })
        })
        .collect()
}

/// Runs, newest first, of the caller's groups (see [`list_jobs`]), optionally scheduled within
/// `[from, to)`, paged with `before_id`.
pub(super) async fn list_runs(
    State(admin): State<Arc<Admin>>,
    Extension(who): Extension<Principal>,
    Query(q): Params,
) -> ApiResult<Json<Vec<Run>>> {
    let group_id = group_filter(&admin, &q).await?;
    let status = q.get("status").map(|s| RunStatus::parse(s)).transpose()?;
    let (from, to) = (int_param(&q, "from")?, int_param(&q, "to")?);
    if let (Some(from), Some(to)) = (from, to) {
        if from >= to {
            return Err(ApiError::bad_request(Some("to"), "must be later than 'from'"));
        }
    }
    let filter = RunFilter {
        job_id: int_param(&q, "job_id")?,
        group_id,
        group_ids: who.group_scope().map(<[i64]>::to_vec),
        status,
        from,
        to,
        before_id: int_param(&q, "before_id")?,
        limit: limit_param(&q, 100, 10_000)?,
    };
    Ok(Json(admin.store.list_runs(&filter).await?))
}

pub(super) async fn show_run(State(admin): State<Arc<Admin>>, Path(id): Path<String>) -> ApiResult<Json<Run>> {
    Ok(Json(admin.store.run(path_id(&id, "run")?).await?))
}

pub(super) async fn run_log(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
    Query(q): Params,
) -> ApiResult<Json<Value>> {
    let id = path_id(&id, "run")?;
    let from = int_param(&q, "from_line")?.unwrap_or(1);
    if !(1..=i32::MAX as i64).contains(&from) {
        return Err(ApiError::bad_request(Some("from_line"), "must be a line number from 1"));
    }
    let log = admin.run_log(id, from as i32).await?;
    Ok(Json(json!({
        "run_id": id,
        "from_line": log.page.from_line_num,
        "to_line": log.page.to_line_num,
        "content": log.page.log_content,
        "is_end": log.page.is_end,
        "stored": log.stored,
    })))
}

pub(super) async fn kill_run(
    State(admin): State<Arc<Admin>>,
    who: Option<Extension<Principal>>,
    Path(id): Path<String>,
) -> ApiResult<Json<Run>> {
    let id = path_id(&id, "run")?;
    Ok(Json(admin.kill_run(id, &author(who.as_deref())).await?))
}

pub(super) async fn list_executors(State(admin): State<Arc<Admin>>, Query(q): Params) -> ApiResult<Json<Value>> {
    let group_id = match q.get("group") {
        Some(key) => Some(group_by_key(&admin, key).await?.id),
        None => None,
    };
    let mut listing = admin.directory.executors(group_id);
    ask_manual_addresses(&admin, &mut listing).await;
    let out: Vec<Value> = listing
        .into_iter()
        .map(|(g, entries)| json!({ "group_id": g.id, "app_name": g.app_name, "title": g.title, "address_type": g.address_type, "executors": entries }))
        .collect();
    Ok(Json(Value::Array(out)))
}

/// How long a listed manual address has to answer `/beat`.
const MANUAL_BEAT_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Manual addresses asked at once.
const MANUAL_BEATS_AT_ONCE: usize = 16;

/// Asks each manual address of `listing` whether it answers `/beat`, and notes the answer on
/// its entry: a manual address has no heartbeat, so without this a mistyped or dead address
/// shows up only as runs that fail on it.
pub(super) async fn ask_manual_addresses(admin: &Admin, listing: &mut [(Group, Vec<ExecutorEntry>)]) {
    use futures::StreamExt;
    let asks: Vec<(usize, usize)> = listing
        .iter()
        .enumerate()
        .flat_map(|(g, (_, entries))| {
            entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.source == "manual")
                .map(move |(e, _)| (g, e))
        })
        .collect();
    let shared: &[(Group, Vec<ExecutorEntry>)] = listing;
    let answers: Vec<((usize, usize), bool)> = futures::stream::iter(asks)
        .map(|(g, e)| {
            let target = Target::of(&shared[g].0, &shared[g].1[e].address);
            async move {
                let beat = tokio::time::timeout(MANUAL_BEAT_WAIT, admin.client.beat(target)).await;
                ((g, e), beat.is_ok_and(|reply| reply.is_success()))
            }
        })
        .buffer_unordered(MANUAL_BEATS_AT_ONCE)
        .collect()
        .await;
    for ((g, e), answers) in answers {
        listing[g].1[e].answers = Some(answers);
    }
}

/// The jobs document (`?group=APP`: of one group) of the groups the caller may read.
pub(super) async fn export_jobs(
    State(admin): State<Arc<Admin>>,
    Extension(who): Extension<Principal>,
    Query(q): Params,
) -> ApiResult<Json<JobsDocument>> {
    let only = text_param(&q, "group")?;
    Ok(Json(admin.store.export_jobs(only.as_deref(), who.group_scope()).await?))
}

/// The body of `POST /v1/apply`: a jobs document and how to apply it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ApplyRequest {
    #[serde(default)]
    groups: Vec<crate::store::DocGroup>,
    #[serde(default)]
    workflows: Vec<crate::store::DocWorkflow>,
    #[serde(default)]
    alarm_channels: Vec<crate::model::AlarmChannelSpec>,
    #[serde(default)]
    calendars: Vec<crate::api::BusinessCalendarSpec>,
    #[serde(default)]
    dry_run: Option<bool>,
    #[serde(default)]
    prune: Option<bool>,
}

/// Applies a jobs document: answers the plan, written unless `dry_run`. Administrators apply
/// anything; an editor (a user, or a service's API key) applies the jobs of groups they edit
/// ([`check_apply_rights`]).
pub(super) async fn apply_jobs(
    State(admin): State<Arc<Admin>>,
    who: Option<Extension<Principal>>,
    body: Bytes,
) -> ApiResult<Json<ApplyPlan>> {
    let req: ApplyRequest = parse_body(&body)?;
    let doc = JobsDocument {
        groups: req.groups,
        workflows: req.workflows,
        alarm_channels: req.alarm_channels,
        calendars: req.calendars,
    };
    let mode = ApplyMode {
        dry_run: req.dry_run.unwrap_or(false),
        prune: req.prune.unwrap_or(false),
    };
    if let Some(p) = who.as_deref() {
        check_apply_rights(&admin, p, &doc, mode).await?;
    }
    Ok(Json(admin.apply_jobs(&doc, mode, &author(who.as_deref())).await?))
}

/// What a caller below administrator may apply: the jobs of existing groups they edit, BEAN
/// jobs only, children within those groups; no group settings, workflows, alarm channels or
/// calendars,
/// and no `prune` (a document applied by a service never deletes what it did not declare).
async fn check_apply_rights(admin: &Admin, p: &Principal, doc: &JobsDocument, mode: ApplyMode) -> ApiResult<()> {
    if p.admin {
        return Ok(());
    }
    if !p.roles.iter().any(|g| g.role >= crate::api::GroupRole::Editor) {
        return Err(forbidden("applying jobs needs the role editor in their group"));
    }
    if !doc.workflows.is_empty() || !doc.alarm_channels.is_empty() || !doc.calendars.is_empty() {
        return Err(forbidden(
            "workflows, alarm channels and business calendars are applied by administrators only",
        ));
    }
    if mode.prune {
        return Err(forbidden(
            "prune deletes jobs a document does not list: administrators only",
        ));
    }
    let mut edited = Vec::with_capacity(doc.groups.len());
    for g in &doc.groups {
        let name = g.app_name.trim();
        let Some(group) = admin.store.group_by_app_name(name).await? else {
            return Err(forbidden(&format!(
                "there is no executor group '{name}': administrators create groups"
            )));
        };
        p.check_write(group.id)?;
        let settings = [
            g.title.is_some(),
            g.address_type.is_some(),
            g.addresses.is_some(),
            g.protocol.is_some(),
            g.keep_logs.is_some(),
            g.alarm_channels.is_some(),
        ];
        if settings.into_iter().any(|set| set) {
            return Err(forbidden(&format!(
                "group '{name}': only administrators change a group's settings; give its app_name and jobs only"
            )));
        }
        edited.push(name.to_owned());
    }
    for g in &doc.groups {
        for job in &g.jobs {
            let glue = job.task.glue_type.as_deref().is_some_and(|t| t != "BEAN") || job.task.glue_source.is_some();
            if glue {
                return Err(forbidden(&format!(
                    "job '{}': GLUE scripts are set by administrators only",
                    job.key
                )));
            }
            for child in job.children.iter().flatten() {
                if let Some((app, _)) = child.split_once('/') {
                    if !edited.iter().any(|e| e == app.trim()) {
                        return Err(forbidden(&format!(
                            "job '{}': child {child} is in a group this document does not apply",
                            job.key
                        )));
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused_field(body: &str) -> Option<String> {
        match parse_body::<JobSpec>(&Bytes::from(body.to_owned())) {
            Ok(_) => panic!("{body} was taken"),
            Err(e) => e.field,
        }
    }

    #[test]
    fn a_value_that_does_not_fit_is_named_inside_flattened_groups_too() {
        // A field of the body itself, of its task and of its descriptive fields.
        assert_eq!(refused_field(r#"{"key": 5}"#).as_deref(), Some("key"));
        assert_eq!(
            refused_field(r#"{"handler": "h", "timeout_secs": "soon"}"#).as_deref(),
            Some("timeout_secs")
        );
        assert_eq!(refused_field(r#"{"owner": 5}"#).as_deref(), Some("owner"));
        assert_eq!(refused_field(r#"{"surprise": 1}"#).as_deref(), Some("surprise"));
        // Not an object: nothing to name.
        assert_eq!(refused_field("[1, 2]"), None);
    }
}
