//! `/v1/limits` and `/v1/queue`: limits on running runs (set by administrators, read by any
//! caller) and the runs waiting for a slot (each caller sees its groups' runs), with "run now"
//! and "cancel" for a queued run (operators of its group).

use super::access::Principal;
use super::error::ApiError;
use super::rest::{author, parse_body, path_id};
use crate::api::{Limit, LimitSpec, QueuedRunEntry};
use crate::center::Admin;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde_json::{json, Value};
use std::sync::Arc;

type ApiResult<T> = Result<T, ApiError>;

/// Every limit with its running and queued runs.
pub(super) async fn list_limits(State(admin): State<Arc<Admin>>) -> ApiResult<Json<Vec<Limit>>> {
    Ok(Json(admin.limits().await?))
}

/// Sets a limit, new or not (a `PUT` of the whole rule: one answer, 200), answering it as
/// listed.
pub(super) async fn put_limit(
    State(admin): State<Arc<Admin>>,
    Path(name): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Limit>> {
    let spec: LimitSpec = parse_body(&body)?;
    admin.set_limit(&name, &spec).await?;
    let limit = admin.limits().await?.into_iter().find(|l| l.name == name);
    // Deleted again by another caller in between: answered as it was set.
    let limit = match limit {
        Some(limit) => limit,
        None => Limit::shown(name, spec.validate()?, 0, 0, crate::model::now_ms()),
    };
    Ok(Json(limit))
}

pub(super) async fn delete_limit(State(admin): State<Arc<Admin>>, Path(name): Path<String>) -> ApiResult<StatusCode> {
    admin.delete_limit(&name).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The queue in the order its runs will go (the access layer keeps the caller's groups').
pub(super) async fn queue(State(admin): State<Arc<Admin>>) -> ApiResult<Json<Vec<QueuedRunEntry>>> {
    Ok(Json(admin.queue(None).await?))
}

pub(super) async fn run_now(State(admin): State<Arc<Admin>>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let id = path_id(&id, "run")?;
    admin.run_now(id).await?;
    Ok(Json(json!({ "run_id": id, "skip_queue": true })))
}

pub(super) async fn cancel(
    State(admin): State<Arc<Admin>>,
    who: Option<Extension<Principal>>,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let id = path_id(&id, "run")?;
    admin.cancel_queued(id, &author(who.as_deref())).await?;
    Ok(Json(json!({ "run_id": id, "cancelled": true })))
}
