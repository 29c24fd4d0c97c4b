//! The routes of workflows and their instances. A workflow runs jobs of several groups: a caller
//! needs a role in every group of its nodes' jobs (viewer to read, operator to run, editor to change),
//! checked by the handlers on the one workflow or instance they act on.

use super::Route;
use crate::api::GroupRole;
use crate::http::access::Rule;
use crate::http::backfills;
use crate::http::openapi::{
    arr, backfill_id, body, change, exact, id, input, instance_states, int, job_key, limit, nullable, op, path,
    pause_body, query, r, string_enum, workflow_spec,
};
use crate::http::workflows as wf;
use serde_json::json;

/// The routes of workflows and their instances.
pub(super) const ROUTES: &[Route] = &[
    api!("GET" "/v1/workflows", Rule::Needs(GroupRole::Viewer), wf::list_workflows, op(
        "List workflows (within your roles in the groups of its nodes' jobs)",
        "workflows", json!([]), None, (200, Some(arr(r("Workflow")))), &[403],
    )),
    api!("POST" "/v1/workflows", Rule::Needs(GroupRole::Editor), wf::create_workflow, op(
        "Create a workflow: a schedule and a DAG of nodes, each running a job (within your roles in the groups of its nodes' jobs)",
        "workflows", json!([]), Some(body(workflow_spec(), true)), (201, Some(r("Workflow"))), &[400, 403, 413, 422],
    )),
    api!("GET" "/v1/workflows/{id}", Rule::Needs(GroupRole::Viewer), wf::show_workflow, op(
        "Show a workflow",
        "workflows", json!([id()]), None, (200, Some(r("Workflow"))), &[400, 403, 404],
    )),
    api!("PUT" "/v1/workflows/{id}", Rule::Needs(GroupRole::Editor), wf::update_workflow, change(
        "Change a workflow (fields left out keep their value; running instances keep the graph they started with)",
        "workflows", id(), workflow_spec(), "Workflow",
    )),
    api!("PATCH" "/v1/workflows/{id}", Rule::Needs(GroupRole::Editor), wf::update_workflow, change(
        "Change a workflow (same as PUT)",
        "workflows", id(), workflow_spec(), "Workflow",
    )),
    api!("DELETE" "/v1/workflows/{id}", Rule::Needs(GroupRole::Editor), wf::delete_workflow, op(
        "Delete a workflow and its finished instances (409 while one is queued or running)",
        "workflows", json!([id()]), None, (204, None), &[400, 403, 404, 409, 413],
    )),
    api!("POST" "/v1/workflows/{id}/start", Rule::Needs(GroupRole::Operator), wf::start_workflow, op(
        "Start scheduling a workflow",
        "workflows", json!([id()]), None, (200, Some(r("Workflow"))), &[400, 403, 404, 413, 422],
    )),
    api!("POST" "/v1/workflows/{id}/stop", Rule::Needs(GroupRole::Operator), wf::stop_workflow, op(
        "Stop scheduling a workflow (its instances go on)",
        "workflows", json!([id()]), None, (200, Some(r("Workflow"))), &[400, 403, 404, 413],
    )),
    api!("POST" "/v1/workflows/{id}/pause", Rule::Needs(GroupRole::Operator), wf::pause_workflow, op(
        "Pause a workflow until a time: fires due before then are handled by its misfire policy when the pause ends",
        "workflows", json!([id()]), Some(pause_body()), (200, Some(r("Workflow"))), &[400, 403, 404, 413, 422],
    )),
    api!("POST" "/v1/workflows/{id}/resume", Rule::Needs(GroupRole::Operator), wf::resume_workflow, op(
        "End a workflow's pause now",
        "workflows", json!([id()]), None, (200, Some(r("Workflow"))), &[400, 403, 404, 413],
    )),
    api!("POST" "/v1/workflows/{id}/backfills", Rule::Needs(GroupRole::Operator), backfills::create_for_workflow, op(
        "Backfill a workflow: one instance for every fire time its schedule had in a past range (both ends included), each scheduled at its fire time, at most `at_once` running; its `max_instances` applies; a fire time backfilled before is left out",
        "workflows", json!([id()]), Some(body(r("BackfillSpec"), true)), (201, Some(r("Backfill"))), &[400, 403, 404, 413, 422],
    )),
    api!("GET" "/v1/workflows/{id}/backfills", Rule::Needs(GroupRole::Viewer), backfills::list_for_workflow, op(
        "A workflow's 50 newest backfills, newest first, each with how far it got",
        "workflows", json!([id()]), None, (200, Some(arr(r("Backfill")))), &[400, 403, 404],
    )),
    api!("GET" "/v1/workflows/{id}/backfills/{backfill}", Rule::Needs(GroupRole::Viewer), backfills::show_for_workflow, op(
        "Show a backfill of a workflow, with how far it got",
        "workflows", json!([id(), backfill_id()]), None, (200, Some(r("Backfill"))), &[400, 403, 404],
    )),
    api!("POST" "/v1/workflows/{id}/backfills/{backfill}/cancel", Rule::Needs(GroupRole::Operator), backfills::cancel_for_workflow, op(
        "Cancel a running backfill of a workflow: its fire times not started are let go; its instances under way go on",
        "workflows", json!([id(), backfill_id()]), None, (200, Some(r("Backfill"))), &[400, 403, 404, 409, 413],
    )),
    api!("POST" "/v1/workflows/{id}/trigger", Rule::Needs(GroupRole::Operator), wf::trigger_workflow, op(
        "Fire a workflow now: a new instance",
        "workflows",
        json!([id()]),
        Some(body(input(json!({ "trigger_type": nullable(string_enum(&["API", "MANUAL"])) })), false)),
        (202, Some(exact(json!({ "instance_id": int(), "workflow_id": int() })))),
        &[400, 403, 404, 413, 422],
    )),
    api!("GET" "/v1/workflow-instances", Rule::Needs(GroupRole::Viewer), wf::list_instances, op(
        "List workflow instances, newest first (their nodes in /v1/workflow-instances/{id})",
        "workflows",
        json!([query("workflow_id", int(), "only instances of this workflow"), query("state", instance_states(), "only instances in this state"), query("before_id", int(), "paging: only instances with a smaller id"), limit(wf::MAX_INSTANCES, 100)]),
        None,
        (200, Some(arr(r("WorkflowInstance")))),
        &[400, 403],
    )),
    api!("GET" "/v1/workflow-instances/{id}", Rule::Needs(GroupRole::Viewer), wf::show_instance, op(
        "Show a workflow instance with the state, run and result of each node",
        "workflows", json!([id()]), None, (200, Some(r("WorkflowInstance"))), &[400, 403, 404],
    )),
    api!("POST" "/v1/workflow-instances/{id}/stop", Rule::Needs(GroupRole::Operator), wf::stop_instance, op(
        "Stop an instance: its running nodes are stopped and their runs killed",
        "workflows", json!([id()]), None, (200, Some(r("WorkflowInstance"))), &[400, 403, 404, 409, 413],
    )),
    api!("POST" "/v1/workflow-instances/{id}/nodes/{node}/{action}", Rule::Needs(GroupRole::Operator), wf::change_node, op(
        "Retry a failed node, skip a node (its children go on as after a success) or mark a failed node succeeded; the rest of the instance goes on",
        "workflows",
        json!([id(), path("node", job_key(), "the node's key"), path("action", string_enum(&["retry", "skip", "succeed"]), "what to do")]),
        None,
        (200, Some(r("WorkflowInstance"))),
        &[400, 403, 404, 409, 413],
    )),
];
