//! Workflows in a jobs document: exported with their nodes naming jobs by `app_name/key`, and
//! applied in the same transaction as the groups and jobs, matched by name, after the jobs (a
//! node may run a job the same document creates).

use super::plan_fields::differing;
use super::workflow_rows::{workflow_row, WORKFLOW_COLUMNS};
use super::{rows, Store, StoreError, StoreResult};
use crate::api::{JobFlowPatch, SchedulePatch};
use crate::model::{validate_job_key, Invalid};
use crate::workflow::dag::{Definition, Edge, Join, Node};
use crate::workflow::spec::{OnLimit, Workflow, WorkflowDraft, WorkflowSpec};
use serde::{Deserialize, Serialize};
use sqlx::any::Any;
use sqlx::Transaction;
use std::collections::{HashMap, HashSet};

/// A workflow of a jobs document: its settings as the workflow API takes them, with nodes
/// naming their jobs by `app_name/key` instead of id. Fields left out take their defaults.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct DocWorkflow {
    /// Unique name: what the workflow is known by.
    pub name: String,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Schedule type (`CRON`, `FIX_RATE` or `NONE`), expression, zone and misfire strategy.
    #[serde(flatten)]
    pub schedule: SchedulePatch,
    /// Most instances at once (0: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_instances: Option<i64>,
    /// `skip` or `queue`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_limit: Option<OnLimit>,
    /// Alarm channels told when an instance fails (`a,b`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alarm_channels: Option<String>,
    /// Scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<bool>,
    /// The nodes.
    #[serde(default)]
    pub nodes: Vec<DocNode>,
    /// The edges.
    #[serde(default)]
    pub edges: Vec<Edge>,
}

/// A node of a [`DocWorkflow`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct DocNode {
    /// The node's key.
    pub key: String,
    /// Its job: `app_name/key`.
    pub job: String,
    /// Parameter override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param: Option<String>,
    /// `all` or `any`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join: Option<Join>,
    /// Priority and concurrency key over its job's.
    #[serde(flatten)]
    pub flow: JobFlowPatch,
}

fn wf_err(name: &str, e: Invalid) -> Invalid {
    let field = e.field.strip_prefix("definition.").unwrap_or(&e.field).to_owned();
    Invalid {
        field: format!("workflows[{name}].{field}"),
        message: format!("workflow '{name}': {}", e.message),
    }
}

/// `app_name/key` of a node's job.
fn job_ref(name: &str, node: &DocNode) -> Result<(String, String), Invalid> {
    let bad = || {
        wf_err(
            name,
            Invalid::new(
                format!("nodes[{}].job", node.key),
                format!("node '{}': job '{}' is not app_name/key", node.key, node.job),
            ),
        )
    };
    let (app, key) = node.job.rsplit_once('/').ok_or_else(bad)?;
    if app.trim().is_empty() || validate_job_key(key.trim()).is_err() {
        return Err(bad());
    }
    Ok((app.trim().to_owned(), key.trim().to_owned()))
}

/// Checks the document's workflows on their own: names once each, jobs named `app/key`.
pub(super) fn check(workflows: &[DocWorkflow]) -> Result<(), Invalid> {
    let mut names = HashSet::new();
    for w in workflows {
        let name = w.name.trim();
        if !names.insert(name.to_owned()) {
            return Err(Invalid::new(
                format!("workflows[{name}]"),
                format!("workflow '{name}' appears twice in the document"),
            ));
        }
        for n in &w.nodes {
            job_ref(name, n)?;
        }
    }
    Ok(())
}

impl Store {
    /// Every workflow as a document entry, nodes naming their jobs by `app_name/key`.
    pub(super) async fn export_workflows(&self) -> StoreResult<Vec<DocWorkflow>> {
        let workflows = self.list_workflows().await?;
        let ids: Vec<i64> = workflows
            .iter()
            .flat_map(|w| w.definition.nodes.iter().map(|n| n.job_id))
            .collect();
        let mut conn = self.read.acquire().await?;
        let sql = "SELECT j.id AS id, g.app_name AS app_name, j.job_key AS job_key FROM job j \
                   JOIN executor_group g ON g.id = j.group_id WHERE j.id IN ({in})";
        let names: HashMap<i64, String> = self
            .fetch_in_as(&mut conn, sql, &ids, &[], |r| {
                let name = format!("{}/{}", rows::text(r, "app_name")?, rows::text(r, "job_key")?);
                Ok((rows::int(r, "id")?, name))
            })
            .await?;
        Ok(workflows
            .into_iter()
            .map(|w| DocWorkflow {
                schedule: SchedulePatch::of(w.schedule()),
                nodes: w
                    .definition
                    .nodes
                    .iter()
                    .map(|n| DocNode {
                        key: n.key.clone(),
                        job: names
                            .get(&n.job_id)
                            .cloned()
                            .unwrap_or_else(|| format!("?/{}", n.job_id)),
                        param: n.param.clone(),
                        join: Some(n.join),
                        flow: n.flow.clone(),
                    })
                    .collect(),
                edges: w.definition.edges.clone(),
                name: w.name,
                description: Some(w.description),
                max_instances: Some(w.max_instances),
                on_limit: Some(w.on_limit),
                alarm_channels: Some(w.alarm_channels),
                running: Some(w.running),
            })
            .collect())
    }

    /// Creates the document's workflows that do not exist and updates those that differ, in
    /// `tx`, after the jobs: `job_ids` are the ids of the document's jobs by `(app, key)`;
    /// other jobs a node names are looked up. Returns what changed, for the plan.
    pub(super) async fn apply_workflows_in(
        &self,
        tx: &mut Transaction<'static, Any>,
        workflows: &[DocWorkflow],
        job_ids: &HashMap<(String, String), i64>,
        default_zone: &str,
        now: i64,
    ) -> StoreResult<Vec<WorkflowChange>> {
        let mut changes = Vec::new();
        for w in workflows {
            let name = w.name.trim();
            let nodes = self.resolve_nodes_in(tx, name, &w.nodes, job_ids).await?;
            let ids: Vec<i64> = nodes.iter().map(|n| n.job_id).collect();
            let jobs = self.node_jobs_in(tx, &ids).await?;
            // Every node's job was resolved above; whether it runs code is the job's (some made
            // by this document, in this transaction).
            let draft = w
                .spec(name, nodes, default_zone)
                .validate(None, default_zone, |id| {
                    Some(jobs.get(&id).copied().unwrap_or(crate::workflow::dag::NodeJob::Data))
                })
                .map_err(|e| StoreError::Invalid(wf_err(name, e)))?;
            match self.workflow_by_name_in(tx, name).await? {
                None => {
                    self.insert_workflow_tx(tx, &draft, now).await?;
                    changes.push(WorkflowChange::Created(name.to_owned()));
                }
                Some(old) => {
                    let fields = changed_fields(&old, &draft);
                    if !fields.is_empty() {
                        self.update_workflow_tx(tx, &old, &draft, now).await?;
                        changes.push(WorkflowChange::Updated(name.to_owned(), fields));
                    }
                }
            }
        }
        Ok(changes)
    }

    /// The nodes of workflow `name`, their jobs resolved to ids: the document's own from
    /// `job_ids`, others looked up in `tx`.
    async fn resolve_nodes_in(
        &self,
        tx: &mut Transaction<'static, Any>,
        name: &str,
        doc_nodes: &[DocNode],
        job_ids: &HashMap<(String, String), i64>,
    ) -> StoreResult<Vec<Node>> {
        let mut nodes = Vec::with_capacity(doc_nodes.len());
        for n in doc_nodes {
            let (app, key) = job_ref(name, n)?;
            let id = match job_ids.get(&(app.clone(), key.clone())) {
                Some(id) => *id,
                None => {
                    let q = self.sql(
                        "SELECT j.id AS id FROM job j JOIN executor_group g ON g.id = j.group_id \
                         WHERE g.app_name = ? AND j.job_key = ?",
                    );
                    let row = sqlx::query(&q).bind(&app).bind(&key).fetch_optional(&mut **tx).await?;
                    match row {
                        Some(r) => rows::int(&r, "id")?,
                        None => {
                            return Err(wf_err(
                                name,
                                Invalid::new(
                                    format!("nodes[{}].job", n.key),
                                    format!("node '{}': no job '{key}' in group '{app}'", n.key),
                                ),
                            )
                            .into())
                        }
                    }
                }
            };
            nodes.push(Node {
                key: n.key.clone(),
                job_id: id,
                param: n.param.clone(),
                join: n.join.unwrap_or_default(),
                flow: n.flow.clone(),
            });
        }
        Ok(nodes)
    }

    /// The workflow named `name`, its row locked in `tx`.
    async fn workflow_by_name_in(
        &self,
        tx: &mut Transaction<'static, Any>,
        name: &str,
    ) -> StoreResult<Option<Workflow>> {
        let q = self.sql_text(format!(
            "SELECT {WORKFLOW_COLUMNS} FROM workflow WHERE name = ?{}",
            self.backend.for_update()
        ));
        Ok(sqlx::query(&q)
            .bind(name)
            .fetch_optional(&mut **tx)
            .await?
            .map(|r| workflow_row(&r))
            .transpose()?)
    }
}

impl DocWorkflow {
    /// The workflow as the workflow API would take it, with `nodes` (this entry's, resolved):
    /// what the entry leaves out takes its default.
    fn spec(&self, name: &str, nodes: Vec<Node>, default_zone: &str) -> WorkflowSpec {
        WorkflowSpec {
            name: Some(name.to_owned()),
            description: Some(self.description.clone().unwrap_or_default()),
            schedule: self.schedule.or_defaults(default_zone),
            max_instances: Some(self.max_instances.unwrap_or(0)),
            on_limit: Some(self.on_limit.unwrap_or_default()),
            alarm_channels: Some(self.alarm_channels.clone().unwrap_or_default()),
            definition: Some(Definition {
                nodes,
                edges: self.edges.clone(),
            }),
            running: Some(self.running.unwrap_or(false)),
        }
    }
}

/// The fields in which `draft` differs from the workflow `old`, in the plan's order.
fn changed_fields(old: &Workflow, draft: &WorkflowDraft) -> Vec<String> {
    let mut fields = differing!(old, draft;
        description, schedule_type, schedule_expr, time_zone, misfire_strategy, max_instances, on_limit,
        alarm_channels);
    fields.extend(differing!(old.definition, draft.definition; nodes, edges));
    fields.extend(differing!(old, draft; running));
    fields
}

/// What applying a document did to one workflow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum WorkflowChange {
    /// Created, by name.
    Created(String),
    /// Updated, by name, with the fields that changed.
    Updated(String, Vec<String>),
}
