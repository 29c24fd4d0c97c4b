//! `/v1/jobs/{id}/backfills`: a job run once for every fire time its schedule had in a past
//! range (operators of the job's group start and cancel them; viewers see them). Access is
//! checked on the job of the path; a backfill named there must belong to it.

use super::access::Principal;
use super::error::ApiError;
use super::rest::{parse_body, path_id};
use crate::api::{Backfill, BackfillSpec};
use crate::center::{Admin, BackfillRequest};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use std::sync::Arc;

type ApiResult<T> = Result<T, ApiError>;

/// The backfills listed for a job: its newest ones.
const LISTED: i64 = 50;

/// Starts a backfill of the job; answers it.
pub(super) async fn create(
    State(admin): State<Arc<Admin>>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<Backfill>)> {
    let job = path_id(&id, "job")?;
    let spec: BackfillSpec = parse_body(&body)?;
    let req = BackfillRequest {
        from: spec.from,
        to: spec.to,
        at_once: spec.at_once.unwrap_or(1),
        newest_first: spec.newest_first.unwrap_or(false),
    };
    let backfill = admin.create_backfill(job, req, &who.username).await?;
    Ok((StatusCode::CREATED, Json(backfill)))
}

/// The job's newest backfills, newest first.
pub(super) async fn list(State(admin): State<Arc<Admin>>, Path(id): Path<String>) -> ApiResult<Json<Vec<Backfill>>> {
    let job = path_id(&id, "job")?;
    admin.store.job(job).await?;
    Ok(Json(admin.store.job_backfills(job, LISTED).await?))
}

/// One backfill of the job.
pub(super) async fn show(
    State(admin): State<Arc<Admin>>,
    Path((id, backfill)): Path<(String, String)>,
) -> ApiResult<Json<Backfill>> {
    let job = path_id(&id, "job")?;
    Ok(Json(admin.job_backfill(job, path_id(&backfill, "backfill")?).await?))
}

/// Cancels a backfill of the job; answers it.
pub(super) async fn cancel(
    State(admin): State<Arc<Admin>>,
    Path((id, backfill)): Path<(String, String)>,
) -> ApiResult<Json<Backfill>> {
    let job = path_id(&id, "job")?;
    Ok(Json(admin.cancel_backfill(job, path_id(&backfill, "backfill")?).await?))
}
