//! `POST /v1/jobs/{id}/pause|resume` and `POST /v1/groups/{key}/pause|resume`: a job, or every
//! job of a group (maintenance), held back until a time (operators of the group).

use super::error::ApiError;
use super::rest::{group_by_key, parse_body, path_id};
use crate::center::Admin;
use crate::model::Job;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

type ApiResult<T> = Result<T, ApiError>;

/// The body of a pause: until when, epoch ms (in the future, within 366 days).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PauseBody {
    pub(super) until: i64,
}

/// Pauses a job; answers it.
pub(super) async fn pause_job(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Job>> {
    let id = path_id(&id, "job")?;
    let body: PauseBody = parse_body(&body)?;
    Ok(Json(admin.pause_job(id, body.until).await?))
}

/// Ends a job's pause; answers it.
pub(super) async fn resume_job(State(admin): State<Arc<Admin>>, Path(id): Path<String>) -> ApiResult<Json<Job>> {
    Ok(Json(admin.resume_job(path_id(&id, "job")?).await?))
}

/// Pauses every job of a group; answers how many.
pub(super) async fn pause_group(
    State(admin): State<Arc<Admin>>,
    Path(key): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let group = group_by_key(&admin, &key).await?;
    let body: PauseBody = parse_body(&body)?;
    let jobs = admin.pause_group(group.id, body.until).await?;
    Ok(Json(
        json!({ "group_id": group.id, "jobs": jobs, "paused_until": body.until }),
    ))
}

/// Ends the pause of every job of a group; answers how many.
pub(super) async fn resume_group(State(admin): State<Arc<Admin>>, Path(key): Path<String>) -> ApiResult<Json<Value>> {
    let group = group_by_key(&admin, &key).await?;
    let now = crate::model::now_ms();
    let jobs = admin.resume_group(group.id).await?;
    Ok(Json(json!({ "group_id": group.id, "jobs": jobs, "paused_until": now })))
}
