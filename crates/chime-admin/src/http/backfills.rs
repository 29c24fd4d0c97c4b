//! `/v1/jobs/{id}/backfills` and `/v1/workflows/{id}/backfills`: a job or a workflow run once
//! for every fire time its schedule had in a past range (operators start and cancel them;
//! viewers see them). A job's access is checked by its route's rule on the job of the path, a
//! workflow's here on every node's group, as for its other operations; a backfill named in the
//! path must belong to that job or workflow.

use super::access::Principal;
use super::error::ApiError;
use super::rest::{parse_body, path_id};
use super::workflows::workflow_for;
use crate::api::{Backfill, BackfillSpec, GroupRole};
use crate::center::{Admin, BackfillRequest};
use crate::store::BackfillTarget;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use std::sync::Arc;

type ApiResult<T> = Result<T, ApiError>;

/// The backfills listed for a job or workflow: its newest ones.
const LISTED: i64 = 50;

/// The job of the path (its access checked by the route).
fn job(id: &str) -> ApiResult<BackfillTarget> {
    Ok(BackfillTarget::Job(path_id(id, "job")?))
}

/// The workflow of the path, once `who` holds `needed` for every node.
async fn workflow(admin: &Admin, who: &Principal, id: &str, needed: GroupRole) -> ApiResult<BackfillTarget> {
    Ok(BackfillTarget::Workflow(workflow_for(admin, who, id, needed).await?.id))
}

/// Starts a backfill of `target` from `body`; answers it.
async fn create(
    admin: &Admin,
    who: &Principal,
    target: BackfillTarget,
    body: &Bytes,
) -> ApiResult<(StatusCode, Json<Backfill>)> {
    let spec: BackfillSpec = parse_body(body)?;
    let req = BackfillRequest {
        from: spec.from,
        to: spec.to,
        at_once: spec.at_once.unwrap_or(1),
        newest_first: spec.newest_first.unwrap_or(false),
    };
    let backfill = admin.create_backfill(target, req, &who.username).await?;
    Ok((StatusCode::CREATED, Json(backfill)))
}

/// Starts a backfill of the job; answers it.
pub(super) async fn create_for_job(
    State(admin): State<Arc<Admin>>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<Backfill>)> {
    create(&admin, &who, job(&id)?, &body).await
}

/// The job's newest backfills, newest first.
pub(super) async fn list_for_job(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<Backfill>>> {
    let target = job(&id)?;
    admin.store.job(target.id()).await?;
    Ok(Json(admin.store.backfills_of(target, LISTED).await?))
}

/// One backfill of the job.
pub(super) async fn show_for_job(
    State(admin): State<Arc<Admin>>,
    Path((id, backfill)): Path<(String, String)>,
) -> ApiResult<Json<Backfill>> {
    Ok(Json(
        admin.backfill_of(job(&id)?, path_id(&backfill, "backfill")?).await?,
    ))
}

/// Cancels a backfill of the job; answers it.
pub(super) async fn cancel_for_job(
    State(admin): State<Arc<Admin>>,
    Path((id, backfill)): Path<(String, String)>,
) -> ApiResult<Json<Backfill>> {
    Ok(Json(
        admin
            .cancel_backfill(job(&id)?, path_id(&backfill, "backfill")?)
            .await?,
    ))
}

/// Starts a backfill of the workflow (operators of every node's group); answers it.
pub(super) async fn create_for_workflow(
    State(admin): State<Arc<Admin>>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<Backfill>)> {
    let target = workflow(&admin, &who, &id, GroupRole::Operator).await?;
    create(&admin, &who, target, &body).await
}

/// The workflow's newest backfills, newest first.
pub(super) async fn list_for_workflow(
    State(admin): State<Arc<Admin>>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<Backfill>>> {
    let target = workflow(&admin, &who, &id, GroupRole::Viewer).await?;
    Ok(Json(admin.store.backfills_of(target, LISTED).await?))
}

/// One backfill of the workflow.
pub(super) async fn show_for_workflow(
    State(admin): State<Arc<Admin>>,
    Extension(who): Extension<Principal>,
    Path((id, backfill)): Path<(String, String)>,
) -> ApiResult<Json<Backfill>> {
    let target = workflow(&admin, &who, &id, GroupRole::Viewer).await?;
    Ok(Json(admin.backfill_of(target, path_id(&backfill, "backfill")?).await?))
}

/// Cancels a backfill of the workflow; answers it.
pub(super) async fn cancel_for_workflow(
    State(admin): State<Arc<Admin>>,
    Extension(who): Extension<Principal>,
    Path((id, backfill)): Path<(String, String)>,
) -> ApiResult<Json<Backfill>> {
    let target = workflow(&admin, &who, &id, GroupRole::Operator).await?;
    Ok(Json(
        admin.cancel_backfill(target, path_id(&backfill, "backfill")?).await?,
    ))
}
