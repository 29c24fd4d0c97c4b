//! `/v1/workflows` and `/v1/workflow-instances`: workflows, their instances, and the
//! operations on them. A workflow runs jobs of any group, so all of it is for admins (and the
//! API token), as groups and users are.

use super::access::Principal;
use super::error::ApiError;
use super::rest::{author, int_param, limit_param, parse_body, parse_trigger, path_id, TriggerRequest};
use crate::center::Admin;
use crate::store::NodeChange;
use crate::workflow::dag::InstanceState;
use crate::workflow::spec::{Instance, Workflow, WorkflowSpec};
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

type ApiResult<T> = Result<T, ApiError>;

pub(super) async fn list_workflows(State(admin): State<Arc<Admin>>) -> ApiResult<Json<Vec<Workflow>>> {
    Ok(Json(admin.store.list_workflows().await?))
}

pub(super) async fn create_workflow(
    State(admin): State<Arc<Admin>>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<Workflow>)> {
    let spec: WorkflowSpec = parse_body(&body)?;
    Ok((StatusCode::CREATED, Json(admin.create_workflow(&spec).await?)))
}

pub(super) async fn show_workflow(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
) -> ApiResult<Json<Workflow>> {
    Ok(Json(admin.store.workflow(path_id(&id, "workflow")?).await?))
}

pub(super) async fn update_workflow(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Workflow>> {
    let id = path_id(&id, "workflow")?;
    let spec: WorkflowSpec = parse_body(&body)?;
    Ok(Json(admin.update_workflow(id, &spec).await?))
}

pub(super) async fn delete_workflow(State(admin): State<Arc<Admin>>, Path(id): Path<String>) -> ApiResult<StatusCode> {
    admin.delete_workflow(path_id(&id, "workflow")?).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub(super) async fn start_workflow(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
) -> ApiResult<Json<Workflow>> {
    Ok(Json(admin.start_workflow(path_id(&id, "workflow")?).await?))
}

pub(super) async fn stop_workflow(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
) -> ApiResult<Json<Workflow>> {
    Ok(Json(admin.stop_workflow(path_id(&id, "workflow")?).await?))
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct TriggerBody {
    /// `API` (default) or `MANUAL`.
    trigger_type: Option<String>,
}

impl TriggerRequest for TriggerBody {
    fn trigger_type(&self) -> Option<&str> {
        self.trigger_type.as_deref()
    }
}

pub(super) async fn trigger_workflow(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let (id, _, trigger_type) = parse_trigger::<TriggerBody>(&id, "workflow", &body)?;
    let instance = admin.trigger_workflow(id, trigger_type).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "instance_id": instance, "workflow_id": id })),
    ))
}

/// Most instances one list answers.
pub(super) const MAX_INSTANCES: i64 = 1_000;

pub(super) async fn list_instances(
    State(admin): State<Arc<Admin>>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<Vec<Instance>>> {
    let state = match q.get("state") {
        None => None,
        Some(s) => Some(InstanceState::parse(s).ok_or_else(|| {
            ApiError::bad_request(
                Some("state"),
                format!("'{s}' is not an instance state (queued, running, succeeded, failed, stopped, skipped)"),
            )
        })?),
    };
    let limit = limit_param(&q, 100, MAX_INSTANCES)?;
    let instances = admin
        .store
        .list_instances(int_param(&q, "workflow_id")?, state, int_param(&q, "before_id")?, limit)
        .await?;
    Ok(Json(instances))
}

pub(super) async fn show_instance(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
) -> ApiResult<Json<Instance>> {
    Ok(Json(admin.store.instance(path_id(&id, "instance")?).await?))
}

/// Stops an instance: its running nodes are stopped and their runs killed on their executors
/// (a run its executor cannot be reached for is left to finish, and is not followed).
pub(super) async fn stop_instance(
    State(admin): State<Arc<Admin>>,
    who: Option<Extension<Principal>>,
    Path(id): Path<String>,
) -> ApiResult<Json<Instance>> {
    let id = path_id(&id, "instance")?;
    admin.stop_instance(id, &author(who.as_deref())).await?;
    Ok(Json(admin.store.instance(id).await?))
}

/// `retry`, `skip` or `succeed` one node of an instance.
pub(super) async fn change_node(
    State(admin): State<Arc<Admin>>,
    Path((id, node, action)): Path<(String, String, String)>,
) -> ApiResult<Json<Instance>> {
    let id = path_id(&id, "instance")?;
    let change = match action.as_str() {
        "retry" => NodeChange::Retry,
        "skip" => NodeChange::Skip,
        "succeed" => NodeChange::MarkSucceeded,
        other => {
            return Err(ApiError::bad_request(
                Some("action"),
                format!("'{other}' is not a node action (retry, skip, succeed)"),
            ))
        }
    };
    if node.len() > crate::model::MAX_JOB_KEY_CHARS {
        return Err(ApiError::bad_request(
            Some("node"),
            "a node key is at most 64 characters",
        ));
    }
    admin.change_node(id, &node, change).await?;
    Ok(Json(admin.store.instance(id).await?))
}
