//! `/v1/workflows` and `/v1/workflow-instances`: workflows, their instances, and the
//! operations on them. A workflow runs jobs of several groups, so a caller below administrator
//! needs a role in every one of them: viewer to see it and its instances, operator to start,
//! stop, trigger and stop an instance, editor to create, change or delete it. An instance's node
//! action (retry, skip, mark succeeded) follows the node's own group.

use super::access::{forbidden, Principal};
use super::error::ApiError;
use super::rest::{author, int_param, limit_param, parse_body, parse_trigger, path_id, TriggerRequest};
use crate::api::GroupRole;
use crate::center::Admin;
use crate::store::NodeChange;
use crate::workflow::dag::{Definition, InstanceState};
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

/// The group of each job `definition`'s nodes run, by job id; `None` for a job that is gone.
async fn node_groups(admin: &Admin, definitions: &[&Definition]) -> ApiResult<HashMap<i64, Option<i64>>> {
    let mut ids: Vec<i64> = definitions
        .iter()
        .flat_map(|d| d.nodes.iter().map(|n| n.job_id))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let jobs = admin.store.jobs_by_ids(&ids).await?;
    Ok(ids
        .into_iter()
        .map(|id| (id, jobs.iter().find(|j| j.id == id).map(|j| j.group_id)))
        .collect())
}

/// 403 unless `p` holds `needed` in the group of every node of `definition` (by `groups`). A
/// node whose job is gone leaves the workflow to administrators.
fn check_nodes(
    p: &Principal,
    definition: &Definition,
    groups: &HashMap<i64, Option<i64>>,
    needed: GroupRole,
) -> ApiResult<()> {
    if p.admin {
        return Ok(());
    }
    for node in &definition.nodes {
        match groups.get(&node.job_id).copied().flatten() {
            Some(group) => p.check_role(group, needed).map_err(|e| ApiError {
                error: format!("node {}: {}", node.key, e.error),
                ..e
            })?,
            None => {
                return Err(forbidden(&format!(
                    "node {}: its job {} no longer exists, so only administrators act on this workflow",
                    node.key, node.job_id
                )))
            }
        }
    }
    Ok(())
}

/// 403 unless `p` holds `needed` for every node of `definition`.
async fn check_definition(admin: &Admin, p: &Principal, definition: &Definition, needed: GroupRole) -> ApiResult<()> {
    if p.admin {
        return Ok(());
    }
    let groups = node_groups(admin, &[definition]).await?;
    check_nodes(p, definition, &groups, needed)
}

/// Workflow `id`, once `p` holds `needed` for every node.
pub(super) async fn workflow_for(admin: &Admin, p: &Principal, id: &str, needed: GroupRole) -> ApiResult<Workflow> {
    let workflow = admin.store.workflow(path_id(id, "workflow")?).await?;
    check_definition(admin, p, &workflow.definition, needed).await?;
    Ok(workflow)
}

/// Those of `all` (workflows or instances, their graph by `definition`) whose every node `p`
/// sees: one lookup of the nodes' groups for the whole list.
async fn visible<T>(admin: &Admin, p: &Principal, all: Vec<T>, definition: fn(&T) -> &Definition) -> ApiResult<Vec<T>> {
    if p.admin {
        return Ok(all);
    }
    let groups = node_groups(admin, &all.iter().map(definition).collect::<Vec<_>>()).await?;
    Ok(all
        .into_iter()
        .filter(|x| check_nodes(p, definition(x), &groups, GroupRole::Viewer).is_ok())
        .collect())
}

/// The workflow input in `body`, once `p` edits the group of every node of the graph it gives
/// (without one the graph is kept, and was checked as the workflow's).
async fn edit_spec(admin: &Admin, p: &Principal, body: &Bytes) -> ApiResult<WorkflowSpec> {
    let spec: WorkflowSpec = parse_body(body)?;
    if let Some(definition) = &spec.definition {
        check_definition(admin, p, definition, GroupRole::Editor).await?;
    }
    Ok(spec)
}

/// The workflows whose every node `p` sees.
pub(super) async fn list_workflows(
    State(admin): State<Arc<Admin>>,
    Extension(p): Extension<Principal>,
) -> ApiResult<Json<Vec<Workflow>>> {
    let all = admin.store.list_workflows().await?;
    Ok(Json(visible(&admin, &p, all, |w| &w.definition).await?))
}

pub(super) async fn create_workflow(
    State(admin): State<Arc<Admin>>,
    Extension(p): Extension<Principal>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<Workflow>)> {
    let spec = edit_spec(&admin, &p, &body).await?;
    Ok((StatusCode::CREATED, Json(admin.create_workflow(&spec).await?)))
}

pub(super) async fn show_workflow(
    State(admin): State<Arc<Admin>>,
    Extension(p): Extension<Principal>,
    Path(id): Path<String>,
) -> ApiResult<Json<Workflow>> {
    Ok(Json(workflow_for(&admin, &p, &id, GroupRole::Viewer).await?))
}

/// Changes a workflow: the caller edits the groups of its nodes now and of the nodes it gets.
pub(super) async fn update_workflow(
    State(admin): State<Arc<Admin>>,
    Extension(p): Extension<Principal>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Workflow>> {
    let workflow = workflow_for(&admin, &p, &id, GroupRole::Editor).await?;
    let spec = edit_spec(&admin, &p, &body).await?;
    Ok(Json(admin.update_workflow(workflow.id, &spec).await?))
}

pub(super) async fn delete_workflow(
    State(admin): State<Arc<Admin>>,
    Extension(p): Extension<Principal>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let workflow = workflow_for(&admin, &p, &id, GroupRole::Editor).await?;
    admin.delete_workflow(workflow.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub(super) async fn start_workflow(
    State(admin): State<Arc<Admin>>,
    Extension(p): Extension<Principal>,
    Path(id): Path<String>,
) -> ApiResult<Json<Workflow>> {
    let workflow = workflow_for(&admin, &p, &id, GroupRole::Operator).await?;
    Ok(Json(admin.start_workflow(workflow.id).await?))
}

/// Pauses a workflow until a time (`{"until": epoch ms}`); answers it.
pub(super) async fn pause_workflow(
    State(admin): State<Arc<Admin>>,
    Extension(p): Extension<Principal>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Workflow>> {
    let workflow = workflow_for(&admin, &p, &id, GroupRole::Operator).await?;
    let body: super::pause::PauseBody = parse_body(&body)?;
    Ok(Json(admin.pause_workflow(workflow.id, body.until).await?))
}

/// Ends a workflow's pause; answers it.
pub(super) async fn resume_workflow(
    State(admin): State<Arc<Admin>>,
    Extension(p): Extension<Principal>,
    Path(id): Path<String>,
) -> ApiResult<Json<Workflow>> {
    let workflow = workflow_for(&admin, &p, &id, GroupRole::Operator).await?;
    Ok(Json(admin.resume_workflow(workflow.id).await?))
}

pub(super) async fn stop_workflow(
    State(admin): State<Arc<Admin>>,
    Extension(p): Extension<Principal>,
    Path(id): Path<String>,
) -> ApiResult<Json<Workflow>> {
    let workflow = workflow_for(&admin, &p, &id, GroupRole::Operator).await?;
    Ok(Json(admin.stop_workflow(workflow.id).await?))
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
    Extension(p): Extension<Principal>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let (id, _, trigger_type) = parse_trigger::<TriggerBody>(&id, "workflow", &body)?;
    workflow_for(&admin, &p, &id.to_string(), GroupRole::Operator).await?;
    let instance = admin.trigger_workflow(id, trigger_type).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "instance_id": instance, "workflow_id": id })),
    ))
}

/// Most instances one list answers.
pub(super) const MAX_INSTANCES: i64 = 1_000;

/// Instances, newest first; for a caller below administrator, those of workflows whose every
/// node they see (a page may then hold fewer than `limit`: page on with `before_id`).
pub(super) async fn list_instances(
    State(admin): State<Arc<Admin>>,
    Extension(p): Extension<Principal>,
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
    Ok(Json(visible(&admin, &p, instances, |i| &i.definition).await?))
}

/// Instance `id`, once `p` holds `needed` for every node of the definition it runs.
async fn instance_for(admin: &Admin, p: &Principal, id: &str, needed: GroupRole) -> ApiResult<Instance> {
    let instance = admin.store.instance(path_id(id, "instance")?).await?;
    check_definition(admin, p, &instance.definition, needed).await?;
    Ok(instance)
}

pub(super) async fn show_instance(
    State(admin): State<Arc<Admin>>,
    Extension(p): Extension<Principal>,
    Path(id): Path<String>,
) -> ApiResult<Json<Instance>> {
    Ok(Json(instance_for(&admin, &p, &id, GroupRole::Viewer).await?))
}

/// Stops an instance: its running nodes are stopped and their runs killed on their executors
/// (a run its executor cannot be reached for is left to finish, and is not followed).
pub(super) async fn stop_instance(
    State(admin): State<Arc<Admin>>,
    who: Option<Extension<Principal>>,
    Path(id): Path<String>,
) -> ApiResult<Json<Instance>> {
    if let Some(p) = who.as_deref() {
        instance_for(&admin, p, &id, GroupRole::Operator).await?;
    }
    let id = path_id(&id, "instance")?;
    admin.stop_instance(id, &author(who.as_deref())).await?;
    Ok(Json(admin.store.instance(id).await?))
}

/// `retry`, `skip` or `succeed` one node of an instance.
pub(super) async fn change_node(
    State(admin): State<Arc<Admin>>,
    Extension(p): Extension<Principal>,
    Path((id, node, action)): Path<(String, String, String)>,
) -> ApiResult<Json<Instance>> {
    // The node's own group decides: an operator there may retry, skip or pass it.
    let instance = instance_for(&admin, &p, &id, GroupRole::Viewer).await?;
    if let Some(n) = instance.definition.nodes.iter().find(|n| n.key == node) {
        let one = Definition {
            nodes: vec![n.clone()],
            edges: Vec::new(),
        };
        check_definition(&admin, &p, &one, GroupRole::Operator).await?;
    }
    let id = instance.id;
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
