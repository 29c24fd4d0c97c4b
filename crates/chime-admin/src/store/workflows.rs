//! Workflows: their definitions, their instances and the nodes of those, kept so that every
//! node runs once across crashes and several admins.
//!
//! Each step is one transaction that holds the instance's row: firing (the instance, its first
//! nodes' runs and the workflow's next fire time together), moving an instance on after its
//! nodes' runs finished (the finished nodes' states and the next nodes' runs together), and
//! each operation (stop, retry, skip, mark succeeded). A node's row is written with its run,
//! and `(instance_id, node)` is unique: a node cannot start twice. What to do next is decided
//! by `workflow::dag::step`; this only reads the states and writes its answer.

use super::rows;
use super::{Store, StoreError, StoreResult, PARTITIONS};
use crate::model::{now_ms, Job, SKIPPED_CODE};
use crate::run::{capped, FirePlan, NewRun, RunTicket};
use crate::workflow::dag::{self, Definition, InstanceState, NodeState};
use crate::workflow::spec::{Instance, NodeRun, OnLimit, Workflow, WorkflowDraft};
use chime_protocol::TriggerType;
use sqlx::any::{Any, AnyRow};
use sqlx::Transaction;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

pub(super) const WORKFLOW_COLUMNS: &str =
    "id, name, description, partition_no, schedule_type, schedule_expr, time_zone, \
     misfire_strategy, max_instances, on_limit, definition, running, anchor_at, next_fire_at, last_fire_at, \
     created_at, updated_at";

const INSTANCE_COLUMNS: &str =
    "id, workflow_id, scheduled_at, trigger_type, state, definition, stopped_by, created_at, finished_at";

/// Node rows written per multi-row update.
const UPDATE_ROWS: usize = 500;
/// Instances moved on per round at most.
const ADVANCE_BATCH: i64 = 200;
/// Workflows fired per round at most.
const FIRE_BATCH: i64 = 200;

fn decode_err(col: &str, e: impl std::fmt::Display) -> sqlx::Error {
    sqlx::Error::ColumnDecode {
        index: col.to_owned(),
        source: e.to_string().into(),
    }
}

fn definition(row: &AnyRow) -> Result<Definition, sqlx::Error> {
    serde_json::from_str(&rows::text(row, "definition")?).map_err(|e| decode_err("definition", e))
}

pub(super) fn workflow_row(row: &AnyRow) -> Result<Workflow, sqlx::Error> {
    Ok(Workflow {
        id: rows::int(row, "id")?,
        name: rows::text(row, "name")?,
        description: rows::text(row, "description")?,
        partition: rows::int(row, "partition_no")?,
        schedule_type: rows::text(row, "schedule_type")?
            .parse()
            .map_err(|e| decode_err("schedule_type", e))?,
        schedule_expr: rows::text(row, "schedule_expr")?,
        time_zone: rows::text(row, "time_zone")?,
        misfire_strategy: rows::text(row, "misfire_strategy")?
            .parse()
            .map_err(|e| decode_err("misfire_strategy", e))?,
        max_instances: rows::int(row, "max_instances")?,
        on_limit: OnLimit::parse(&rows::text(row, "on_limit")?),
        definition: definition(row)?,
        running: rows::int(row, "running")? != 0,
        anchor_at: rows::int(row, "anchor_at")?,
        next_fire_at: rows::int(row, "next_fire_at")?,
        last_fire_at: rows::int(row, "last_fire_at")?,
        created_at: rows::int(row, "created_at")?,
        updated_at: rows::int(row, "updated_at")?,
    })
}

fn instance_row(row: &AnyRow) -> Result<Instance, sqlx::Error> {
    Ok(Instance {
        id: rows::int(row, "id")?,
        workflow_id: rows::int(row, "workflow_id")?,
        scheduled_at: rows::int(row, "scheduled_at")?,
        trigger_type: rows::text(row, "trigger_type")?,
        state: InstanceState::parse(&rows::text(row, "state")?).ok_or_else(|| decode_err("state", "unknown"))?,
        stopped_by: rows::text(row, "stopped_by")?,
        created_at: rows::int(row, "created_at")?,
        finished_at: rows::int(row, "finished_at")?,
        definition: definition(row)?,
        nodes: Vec::new(),
    })
}

fn node_row(row: &AnyRow) -> Result<NodeRun, sqlx::Error> {
    Ok(NodeRun {
        node: rows::text(row, "node")?,
        state: NodeState::parse(&rows::text(row, "state")?).ok_or_else(|| decode_err("state", "unknown"))?,
        run_id: rows::int(row, "run_id")?,
        result: rows::text(row, "result")?,
        started_at: rows::int(row, "started_at")?,
        finished_at: rows::int(row, "finished_at")?,
    })
}

/// Runs created by a workflow step, each with its job, to put on the timer.
pub type NodeTickets = Vec<(Arc<Job>, RunTicket)>;

/// What one round of moving instances on did.
#[derive(Debug, Default)]
pub struct Advanced {
    /// The runs of the nodes that started.
    pub tickets: NodeTickets,
    /// Instances that finished, by their end.
    pub finished: Vec<InstanceState>,
    /// For each node that finished: ms from its run's result to the step that took it up.
    pub lateness_ms: Vec<i64>,
}

impl Store {
    /// The ids among `ids` that are jobs.
    pub async fn existing_job_ids(&self, ids: &[i64]) -> StoreResult<HashSet<i64>> {
        let mut conn = self.read.acquire().await?;
        Ok(self
            .fetch_in(&mut conn, "SELECT id FROM job WHERE id IN ({in})", ids, &[])
            .await?
            .iter()
            .map(|r| rows::int(r, "id"))
            .collect::<Result<_, _>>()?)
    }

    /// Creates a workflow (scheduled from now when the draft says so).
    pub async fn insert_workflow(&self, d: &WorkflowDraft) -> StoreResult<Workflow> {
        let mut tx = self.write.begin().await?;
        let id = self.insert_workflow_tx(&mut tx, d, now_ms()).await?;
        tx.commit().await?;
        self.workflow(id).await
    }

    /// [`Store::insert_workflow`] in `tx`; returns the new id.
    pub(super) async fn insert_workflow_tx(
        &self,
        tx: &mut Transaction<'static, Any>,
        d: &WorkflowDraft,
        now: i64,
    ) -> StoreResult<i64> {
        let first_fire = first_fire_of(d, now)?;
        let q = self.sql(
            "INSERT INTO workflow (name, description, partition_no, schedule_type, schedule_expr, time_zone, \
             misfire_strategy, max_instances, on_limit, definition, running, anchor_at, next_fire_at, last_fire_at, \
             created_at, updated_at) VALUES (?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?) RETURNING id",
        );
        let row = sqlx::query(&q)
            .bind(&d.name)
            .bind(&d.description)
            .bind(d.schedule_type.as_str())
            .bind(&d.schedule_expr)
            .bind(&d.time_zone)
            .bind(d.misfire_strategy.as_str())
            .bind(d.max_instances)
            .bind(d.on_limit.as_str())
            .bind(serde_json::to_string(&d.definition).unwrap_or_default())
            .bind(i64::from(d.running))
            .bind(now)
            .bind(first_fire)
            .bind(now)
            .bind(now)
            .fetch_one(&mut **tx)
            .await
            .map_err(|e| name_taken(e, &d.name))?;
        let id = rows::int(&row, 0)?;
        let q = self.sql("UPDATE workflow SET partition_no = ? WHERE id = ?");
        sqlx::query(&q)
            .bind(id % PARTITIONS)
            .bind(id)
            .execute(&mut **tx)
            .await?;
        Ok(id)
    }

    /// Replaces a workflow's definition. Its schedule restarts from now when it changed or the
    /// workflow is being started; running instances keep the graph they were fired with.
    pub async fn update_workflow(&self, id: i64, d: &WorkflowDraft) -> StoreResult<Workflow> {
        let mut tx = self.write.begin().await?;
        let old = self.workflow_tx(&mut tx, id).await?;
        self.update_workflow_tx(&mut tx, &old, d, now_ms()).await?;
        tx.commit().await?;
        self.workflow(id).await
    }

    /// [`Store::update_workflow`] in `tx`, `old` being the workflow as it is (locked).
    pub(super) async fn update_workflow_tx(
        &self,
        tx: &mut Transaction<'static, Any>,
        old: &Workflow,
        d: &WorkflowDraft,
        now: i64,
    ) -> StoreResult<()> {
        let first_fire = first_fire_of(d, now)?;
        let schedule_changed = old.schedule_type != d.schedule_type
            || old.schedule_expr != d.schedule_expr
            || old.time_zone != d.time_zone;
        let (anchor, next) = if !d.running {
            (old.anchor_at, 0)
        } else if schedule_changed || !old.running {
            (now, first_fire)
        } else {
            (old.anchor_at, old.next_fire_at)
        };
        let q = self.sql(
            "UPDATE workflow SET name = ?, description = ?, schedule_type = ?, schedule_expr = ?, time_zone = ?, \
             misfire_strategy = ?, max_instances = ?, on_limit = ?, definition = ?, running = ?, anchor_at = ?, \
             next_fire_at = ?, updated_at = ? WHERE id = ?",
        );
        sqlx::query(&q)
            .bind(&d.name)
            .bind(&d.description)
            .bind(d.schedule_type.as_str())
            .bind(&d.schedule_expr)
            .bind(&d.time_zone)
            .bind(d.misfire_strategy.as_str())
            .bind(d.max_instances)
            .bind(d.on_limit.as_str())
            .bind(serde_json::to_string(&d.definition).unwrap_or_default())
            .bind(i64::from(d.running))
            .bind(anchor)
            .bind(next)
            .bind(now)
            .bind(old.id)
            .execute(&mut **tx)
            .await
            .map_err(|e| name_taken(e, &d.name))?;
        Ok(())
    }

    /// Deletes a workflow with its finished instances; refused (409) while an instance is
    /// queued or running.
    pub async fn delete_workflow(&self, id: i64) -> StoreResult<()> {
        let mut tx = self.write.begin().await?;
        self.workflow_tx(&mut tx, id).await?;
        let q = self.sql(
            "SELECT COUNT(*) AS n FROM workflow_instance WHERE workflow_id = ? AND state IN ('queued', 'running')",
        );
        let open = rows::int(&sqlx::query(&q).bind(id).fetch_one(&mut *tx).await?, "n")?;
        if open > 0 {
            return Err(StoreError::Conflict(format!(
                "workflow {id} has {open} queued or running instances; stop them first"
            )));
        }
        let q = self.sql(
            "DELETE FROM workflow_node_run WHERE instance_id IN (SELECT id FROM workflow_instance WHERE workflow_id = ?)",
        );
        sqlx::query(&q).bind(id).execute(&mut *tx).await?;
        for table in ["workflow_instance WHERE workflow_id = ?", "workflow WHERE id = ?"] {
            let q = self.sql(&format!("DELETE FROM {table}")).into_owned();
            sqlx::query(&q).bind(id).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// A workflow.
    pub async fn workflow(&self, id: i64) -> StoreResult<Workflow> {
        let q = self
            .sql(&format!("SELECT {WORKFLOW_COLUMNS} FROM workflow WHERE id = ?"))
            .into_owned();
        let row = sqlx::query(&q).bind(id).fetch_optional(&self.read).await?;
        row.map(|r| workflow_row(&r))
            .transpose()?
            .ok_or_else(|| StoreError::NotFound(format!("workflow {id}")))
    }

    pub(super) async fn workflow_tx(&self, tx: &mut Transaction<'static, Any>, id: i64) -> StoreResult<Workflow> {
        let q = self
            .sql(&format!(
                "SELECT {WORKFLOW_COLUMNS} FROM workflow WHERE id = ?{}",
                self.backend.for_update()
            ))
            .into_owned();
        let row = sqlx::query(&q).bind(id).fetch_optional(&mut **tx).await?;
        row.map(|r| workflow_row(&r))
            .transpose()?
            .ok_or_else(|| StoreError::NotFound(format!("workflow {id}")))
    }

    /// Every workflow, by id.
    pub async fn list_workflows(&self) -> StoreResult<Vec<Workflow>> {
        let q = format!("SELECT {WORKFLOW_COLUMNS} FROM workflow ORDER BY id");
        Ok(sqlx::query(&q)
            .fetch_all(&self.read)
            .await?
            .iter()
            .map(workflow_row)
            .collect::<Result<_, _>>()?)
    }

    /// Starts (from `first_fire`) or stops scheduling a workflow. Starting a started one
    /// keeps its schedule.
    pub async fn set_workflow_running(&self, id: i64, running: bool) -> StoreResult<Workflow> {
        let now = now_ms();
        if running {
            let w = self.workflow(id).await?;
            if w.schedule_type == chime_protocol::ScheduleType::None {
                return Err(crate::model::Invalid::new(
                    "running",
                    "a workflow with schedule type NONE cannot be started; trigger it instead",
                )
                .into());
            }
            let first_fire = super::jobs::first_fire(w.schedule_type, &w.schedule_expr, &w.time_zone, now, now)?;
            let q = self.sql(
                "UPDATE workflow SET running = 1, anchor_at = ?, next_fire_at = ?, updated_at = ? WHERE id = ? AND running = 0",
            );
            sqlx::query(&q)
                .bind(now)
                .bind(first_fire)
                .bind(now)
                .bind(id)
                .execute(&self.write)
                .await?;
        } else {
            let q = self.sql("UPDATE workflow SET running = 0, next_fire_at = 0, updated_at = ? WHERE id = ?");
            sqlx::query(&q).bind(now).bind(id).execute(&self.write).await?;
        }
        self.workflow(id).await
    }

    /// Fires the due workflows of `partitions` up to `horizon`, as `plan` decides for each (the
    /// jobs' schedule engine): in one transaction, each fire's instance (one per fire time at
    /// most), its first nodes' runs, and the workflow's next fire time. Returns the runs.
    pub async fn fire_workflows(
        &self,
        partitions: &[i64],
        horizon: i64,
        mut plan: impl FnMut(&Workflow) -> FirePlan,
    ) -> StoreResult<NodeTickets> {
        if partitions.is_empty() {
            return Ok(Vec::new());
        }
        let now = now_ms();
        let mut tx = self.write.begin().await?;
        let q = format!(
            "SELECT {WORKFLOW_COLUMNS} FROM workflow WHERE running = 1 AND next_fire_at > 0 AND next_fire_at <= ? \
             AND partition_no IN ({}) ORDER BY next_fire_at LIMIT {FIRE_BATCH}{}",
            super::placeholders(partitions.len()),
            self.backend.for_update()
        );
        let q = self.sql(&q).into_owned();
        let mut query = sqlx::query(&q).bind(horizon);
        for p in partitions {
            query = query.bind(*p);
        }
        let due: Vec<Workflow> = query
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(workflow_row)
            .collect::<Result<_, _>>()?;
        let mut tickets = Vec::new();
        for w in &due {
            let fires = plan(w);
            for f in &fires.runs {
                if f.trigger_code == SKIPPED_CODE {
                    continue;
                }
                tickets.extend(
                    self.create_instance(&mut tx, w, f.fire_key, f.scheduled_at, f.trigger_type, now)
                        .await?
                        .1,
                );
            }
            let q = self.sql("UPDATE workflow SET next_fire_at = ?, last_fire_at = ? WHERE id = ?");
            sqlx::query(&q)
                .bind(fires.next_fire_at)
                .bind(fires.last_fire_at)
                .bind(w.id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(tickets)
    }

    /// Fires a workflow now (manual or API). Returns the instance's id and its first runs.
    pub async fn trigger_workflow(&self, id: i64, trigger_type: TriggerType) -> StoreResult<(i64, NodeTickets)> {
        let now = now_ms();
        let mut tx = self.write.begin().await?;
        let w = self.workflow_tx(&mut tx, id).await?;
        let out = self.create_instance(&mut tx, &w, None, now, trigger_type, now).await?;
        tx.commit().await?;
        Ok(out)
    }

    /// Creates an instance of `w` (none when `fire_key` made one already): running with its
    /// first nodes, or queued or skipped at the workflow's concurrency limit.
    async fn create_instance(
        &self,
        tx: &mut Transaction<'static, Any>,
        w: &Workflow,
        fire_key: Option<i64>,
        scheduled_at: i64,
        trigger_type: TriggerType,
        now: i64,
    ) -> StoreResult<(i64, NodeTickets)> {
        if let Some(key) = fire_key {
            let q = self.sql("SELECT id FROM workflow_instance WHERE workflow_id = ? AND fire_key = ?");
            if let Some(r) = sqlx::query(&q).bind(w.id).bind(key).fetch_optional(&mut **tx).await? {
                return Ok((rows::int(&r, "id")?, Vec::new()));
            }
        }
        let mut state = InstanceState::Running;
        if w.max_instances > 0 {
            let q = self.sql("SELECT COUNT(*) AS n FROM workflow_instance WHERE workflow_id = ? AND state = 'running'");
            let running = rows::int(&sqlx::query(&q).bind(w.id).fetch_one(&mut **tx).await?, "n")?;
            if running >= w.max_instances {
                state = match w.on_limit {
                    OnLimit::Skip => InstanceState::Skipped,
                    OnLimit::Queue => InstanceState::Queued,
                };
            }
        }
        let q = self.sql(
            "INSERT INTO workflow_instance (workflow_id, fire_key, scheduled_at, trigger_type, state, definition, \
             created_at, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        );
        let row = sqlx::query(&q)
            .bind(w.id)
            .bind(fire_key)
            .bind(scheduled_at)
            .bind(trigger_type.as_str())
            .bind(state.as_str())
            .bind(serde_json::to_string(&w.definition).unwrap_or_default())
            .bind(now)
            .bind(if state == InstanceState::Skipped { now } else { 0 })
            .fetch_one(&mut **tx)
            .await?;
        let id = rows::int(&row, 0)?;
        if state != InstanceState::Running {
            return Ok((id, Vec::new()));
        }
        let step = self.progress(tx, id, scheduled_at.max(now), now).await?;
        Ok((id, step.tickets))
    }

    /// Instances of `partitions`' workflows with a node whose run has finished: moved on, one
    /// transaction each.
    pub async fn advance_workflows(&self, partitions: &[i64]) -> StoreResult<Advanced> {
        let mut out = Advanced::default();
        if partitions.is_empty() {
            return Ok(out);
        }
        let q = format!(
            "SELECT DISTINCT n.instance_id AS instance_id FROM workflow_node_run n \
             JOIN run r ON r.id = n.run_id \
             JOIN workflow_instance i ON i.id = n.instance_id \
             JOIN workflow w ON w.id = i.workflow_id \
             WHERE n.state = 'running' AND (r.handle_code <> 0 OR r.trigger_code NOT IN (0, 200)) \
             AND w.partition_no IN ({}) LIMIT {ADVANCE_BATCH}",
            super::placeholders(partitions.len())
        );
        let q = self.sql(&q).into_owned();
        let mut query = sqlx::query(&q);
        for p in partitions {
            query = query.bind(*p);
        }
        let ids: Vec<i64> = query
            .fetch_all(&self.read)
            .await?
            .iter()
            .map(|r| rows::int(r, "instance_id"))
            .collect::<Result<_, _>>()?;
        if ids.is_empty() {
            return Ok(out);
        }
        let now = now_ms();
        let mut tx = self.write.begin().await?;
        let step = self.progress_many(&mut tx, &ids, now, now).await?;
        tx.commit().await?;
        out.tickets.extend(step.tickets);
        out.finished.extend(step.finished);
        out.lateness_ms.extend(step.lateness_ms);
        // Only workflows with a queued instance have one to start (most have no limit).
        let mut conn = self.read.acquire().await?;
        let waiting: Vec<i64> = self
            .fetch_in(
                &mut conn,
                "SELECT DISTINCT workflow_id FROM workflow_instance WHERE state = 'queued' AND workflow_id IN ({in})",
                &step.finished_workflows,
                &[],
            )
            .await?
            .iter()
            .map(|r| rows::int(r, "workflow_id"))
            .collect::<Result<_, _>>()?;
        drop(conn);
        for w in waiting {
            out.tickets.extend(self.start_queued(w).await?);
        }
        Ok(out)
    }

    /// Starts the oldest queued instance of workflow `id` if it is under its limit.
    async fn start_queued(&self, id: i64) -> StoreResult<NodeTickets> {
        let now = now_ms();
        let mut tx = self.write.begin().await?;
        let w = self.workflow_tx(&mut tx, id).await?;
        let q = self.sql("SELECT COUNT(*) AS n FROM workflow_instance WHERE workflow_id = ? AND state = 'running'");
        let running = rows::int(&sqlx::query(&q).bind(id).fetch_one(&mut *tx).await?, "n")?;
        if w.max_instances > 0 && running >= w.max_instances {
            tx.rollback().await?;
            return Ok(Vec::new());
        }
        let q =
            self.sql("SELECT id FROM workflow_instance WHERE workflow_id = ? AND state = 'queued' ORDER BY id LIMIT 1");
        let Some(row) = sqlx::query(&q).bind(id).fetch_optional(&mut *tx).await? else {
            tx.rollback().await?;
            return Ok(Vec::new());
        };
        let instance = rows::int(&row, "id")?;
        let q = self.sql("UPDATE workflow_instance SET state = 'running' WHERE id = ?");
        sqlx::query(&q).bind(instance).execute(&mut *tx).await?;
        let step = self.progress(&mut tx, instance, now, now).await?;
        tx.commit().await?;
        Ok(step.tickets)
    }

    /// Moves instance `id` on, in `tx`: [`Store::progress_many`] for one instance.
    async fn progress(
        &self,
        tx: &mut Transaction<'static, Any>,
        id: i64,
        start_at: i64,
        now: i64,
    ) -> StoreResult<Progress> {
        self.progress_many(tx, &[id], start_at, now).await
    }

    /// Moves instances `ids` on, in `tx`, holding their rows: finished runs become node states
    /// (a failed run that a retry follows hands its node to the retry), then `dag::step`
    /// decides for each instance, until nothing more follows, and its answers are written
    /// together — the node rows and runs of all instances in a few multi-row statements, as a
    /// claim writes its fires, so a node costs about what a fire costs. New runs are due at
    /// `start_at`.
    async fn progress_many(
        &self,
        tx: &mut Transaction<'static, Any>,
        ids: &[i64],
        start_at: i64,
        now: i64,
    ) -> StoreResult<Progress> {
        let mut out = Progress::default();
        let q = format!(
            "SELECT {INSTANCE_COLUMNS} FROM workflow_instance WHERE id IN ({{in}}){}",
            self.backend.for_update()
        );
        let mut instances: Vec<Instance> = self
            .fetch_in(tx, &q, ids, &[])
            .await?
            .iter()
            .map(instance_row)
            .collect::<Result<_, _>>()?;
        instances.retain(|i| i.state == InstanceState::Running);
        if instances.is_empty() {
            return Ok(out);
        }
        let live: Vec<i64> = instances.iter().map(|i| i.id).collect();
        let mut nodes: HashMap<i64, Vec<(i64, NodeRun)>> = HashMap::new();
        let q = "SELECT id, instance_id, node, state, run_id, result, started_at, finished_at FROM workflow_node_run \
                 WHERE instance_id IN ({in}) ORDER BY id";
        for r in self.fetch_in(tx, q, &live, &[]).await? {
            nodes
                .entry(rows::int(&r, "instance_id")?)
                .or_default()
                .push((rows::int(&r, "id")?, node_row(&r)?));
        }

        // The runs of running nodes, followed to their retries.
        // The node rows to write again, as (instance, index in its list).
        let mut changed: HashSet<(i64, usize)> = HashSet::new();
        let mut asking: HashMap<i64, (i64, usize)> = HashMap::new();
        for (instance, list) in &nodes {
            for (k, (_, n)) in list.iter().enumerate() {
                if n.state == NodeState::Running && n.run_id > 0 {
                    asking.insert(n.run_id, (*instance, k));
                }
            }
        }
        while !asking.is_empty() {
            let run_ids: Vec<i64> = asking.keys().copied().collect();
            let q = "SELECT id, trigger_code, handle_code, handle_msg, handled_at, triggered_at FROM run WHERE id IN ({in})";
            let found: HashMap<i64, AnyRow> = self
                .fetch_in(tx, q, &run_ids, &[])
                .await?
                .into_iter()
                .map(|r| Ok((rows::int(&r, "id")?, r)))
                .collect::<Result<_, sqlx::Error>>()?;
            let failed: Vec<i64> = found
                .iter()
                .filter(|(_, r)| {
                    let (t, h) = (
                        rows::int(r, "trigger_code").unwrap_or(0),
                        rows::int(r, "handle_code").unwrap_or(0),
                    );
                    !(matches!(t, 0 | 200) && h == 0) && h != 200
                })
                .map(|(id, _)| *id)
                .collect();
            let mut retries: HashMap<i64, i64> = HashMap::new();
            let q = "SELECT id, retry_of FROM run WHERE retry_of IN ({in})";
            for r in self.fetch_in(tx, q, &failed, &[]).await? {
                let (id, of) = (rows::int(&r, "id")?, rows::int(&r, "retry_of")?);
                let e = retries.entry(of).or_insert(id);
                *e = (*e).min(id);
            }
            let mut next = HashMap::new();
            for (run_id, (instance, k)) in asking {
                let n = &mut nodes.get_mut(&instance).expect("asked for its nodes")[k].1;
                let Some(r) = found.get(&run_id) else {
                    // The run was deleted (with its job): the node cannot finish by itself.
                    n.state = NodeState::Failed;
                    n.result = format!("run {run_id} no longer exists");
                    n.run_id = run_id;
                    n.finished_at = now;
                    changed.insert((instance, k));
                    continue;
                };
                let (trigger_code, handle_code) = (rows::int(r, "trigger_code")?, rows::int(r, "handle_code")?);
                if matches!(trigger_code, 0 | 200) && handle_code == 0 {
                    if run_id != n.run_id {
                        n.run_id = run_id;
                        changed.insert((instance, k));
                    }
                    continue;
                }
                if let Some(retry) = retries.get(&run_id) {
                    next.insert(*retry, (instance, k));
                    continue;
                }
                let done_at = rows::int(r, "handled_at")?.max(rows::int(r, "triggered_at")?);
                if done_at > 0 {
                    out.lateness_ms.push((now - done_at).max(0));
                }
                n.state = if handle_code == 200 {
                    NodeState::Succeeded
                } else {
                    NodeState::Failed
                };
                n.result = rows::text(r, "handle_msg")?;
                n.run_id = run_id;
                n.finished_at = now;
                changed.insert((instance, k));
            }
            asking = next;
        }
        let updates: Vec<(i64, &'static str, i64, &str, i64)> = changed
            .iter()
            .map(|(instance, k)| {
                let (row_id, n) = &nodes[instance][*k];
                (*row_id, n.state.as_str(), n.run_id, capped(&n.result), n.finished_at)
            })
            .collect();
        for chunk in updates.chunks(UPDATE_ROWS) {
            let q = self.backend.update_by_id(
                "workflow_node_run",
                &["state", "run_id", "result", "finished_at"],
                chunk.len(),
                "",
            );
            let mut query = sqlx::query(&q);
            for (id, state, run_id, result, finished_at) in chunk {
                query = query
                    .bind(*id)
                    .bind(*state)
                    .bind(*run_id)
                    .bind(result)
                    .bind(*finished_at);
            }
            query.execute(&mut **tx).await?;
        }

        // Then as far as each graph goes, all in memory: a node whose job is gone fails at
        // once, which may decide more nodes.
        let job_ids: Vec<i64> = instances
            .iter()
            .flat_map(|i| i.definition.nodes.iter().map(|n| n.job_id))
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        let jobs: HashMap<i64, Arc<Job>> = self
            .jobs_tx(tx, &job_ids)
            .await?
            .into_iter()
            .map(|(id, j)| (id, Arc::new(j)))
            .collect();
        let mut new_nodes: Vec<(i64, String, NodeState, String)> = Vec::new();
        let mut new_runs: Vec<NewRun> = Vec::new();
        let mut run_owners: Vec<usize> = Vec::new();
        let mut ended: Vec<(i64, InstanceState)> = Vec::new();
        for instance in &instances {
            let def = &instance.definition;
            let mut states: HashMap<String, NodeState> = nodes
                .get(&instance.id)
                .into_iter()
                .flatten()
                .map(|(_, n)| (n.node.clone(), n.state))
                .collect();
            let results: HashMap<String, String> = nodes
                .get(&instance.id)
                .into_iter()
                .flatten()
                .filter(|(_, n)| n.state == NodeState::Succeeded)
                .map(|(_, n)| (n.node.clone(), n.result.clone()))
                .collect();
            loop {
                let step = dag::step(def, &states);
                let mut again = !step.not_run.is_empty() && step.ready.is_empty() && step.finished.is_none();
                for key in step.not_run {
                    states.insert(key.clone(), NodeState::NotRun);
                    new_nodes.push((instance.id, key, NodeState::NotRun, String::new()));
                }
                for key in step.ready {
                    let node = def.node(&key).expect("step names nodes of the graph");
                    match jobs.get(&node.job_id) {
                        Some(job) => {
                            let run = node_run(job, node, &results, start_at);
                            run_owners.push(new_nodes.len());
                            new_runs.push(run);
                            states.insert(key.clone(), NodeState::Running);
                            new_nodes.push((instance.id, key, NodeState::Running, String::new()));
                        }
                        None => {
                            again = true;
                            states.insert(key.clone(), NodeState::Failed);
                            let why = format!("job {} no longer exists", node.job_id);
                            new_nodes.push((instance.id, key, NodeState::Failed, why));
                        }
                    }
                }
                if let Some(end) = step.finished {
                    ended.push((instance.id, end));
                    break;
                }
                if !again {
                    break;
                }
            }
        }

        // The runs, then the node rows that name them, several per statement.
        let tickets = self.insert_runs_tx(tx, &new_runs).await?;
        if tickets.len() != new_runs.len() {
            return Err(StoreError::Conflict(format!(
                "{} of {} workflow node runs were created",
                tickets.len(),
                new_runs.len()
            )));
        }
        let mut run_of: HashMap<usize, i64> = HashMap::with_capacity(tickets.len());
        for ((owner, run), ticket) in run_owners.iter().zip(&new_runs).zip(tickets) {
            // RETURNING gives the rows in the order of VALUES; checked, not assumed.
            if ticket.job_id != run.job_id {
                return Err(StoreError::Conflict("workflow node runs came back out of order".into()));
            }
            run_of.insert(*owner, ticket.id);
            let job = jobs
                .get(&run.job_id)
                .expect("a run is made for a job that exists")
                .clone();
            out.tickets.push((job, ticket));
        }
        const NODE_ROWS: usize = 200;
        for (c, chunk) in new_nodes.chunks(NODE_ROWS).enumerate() {
            let row = "(?, ?, ?, ?, ?, ?, ?)";
            let q = format!(
                "INSERT INTO workflow_node_run (instance_id, node, state, run_id, result, started_at, finished_at) VALUES {}",
                vec![row; chunk.len()].join(", ")
            );
            let q = self.sql(&q).into_owned();
            let mut query = sqlx::query(&q);
            for (i, (instance, key, state, result)) in chunk.iter().enumerate() {
                let run_id = run_of.get(&(c * NODE_ROWS + i)).copied().unwrap_or(0);
                query = query
                    .bind(*instance)
                    .bind(key)
                    .bind(state.as_str())
                    .bind(run_id)
                    .bind(result)
                    .bind(now)
                    .bind(if *state == NodeState::Running { 0 } else { now });
            }
            query.execute(&mut **tx).await?;
        }
        for (id, end) in ended {
            let q = self.sql("UPDATE workflow_instance SET state = ?, finished_at = ? WHERE id = ?");
            sqlx::query(&q)
                .bind(end.as_str())
                .bind(now)
                .bind(id)
                .execute(&mut **tx)
                .await?;
            out.finished.push(end);
            if let Some(i) = instances.iter().find(|i| i.id == id) {
                if !out.finished_workflows.contains(&i.workflow_id) {
                    out.finished_workflows.push(i.workflow_id);
                }
            }
        }
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    async fn insert_node(
        &self,
        tx: &mut Transaction<'static, Any>,
        instance: i64,
        node: &str,
        state: NodeState,
        run_id: i64,
        result: &str,
        now: i64,
    ) -> StoreResult<()> {
        let q = self.sql(
            "INSERT INTO workflow_node_run (instance_id, node, state, run_id, result, started_at, finished_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?)",
        );
        sqlx::query(&q)
            .bind(instance)
            .bind(node)
            .bind(state.as_str())
            .bind(run_id)
            .bind(result)
            .bind(now)
            .bind(if state == NodeState::Running { 0 } else { now })
            .execute(&mut **tx)
            .await?;
        Ok(())
    }

    async fn node_runs(&self, tx: &mut Transaction<'static, Any>, id: i64) -> StoreResult<Vec<NodeRun>> {
        let q = self.sql(
            "SELECT node, state, run_id, result, started_at, finished_at FROM workflow_node_run \
             WHERE instance_id = ? ORDER BY id",
        );
        Ok(sqlx::query(&q)
            .bind(id)
            .fetch_all(&mut **tx)
            .await?
            .iter()
            .map(node_row)
            .collect::<Result<_, _>>()?)
    }

    /// An instance with its nodes.
    pub async fn instance(&self, id: i64) -> StoreResult<Instance> {
        let q = self
            .sql(&format!(
                "SELECT {INSTANCE_COLUMNS} FROM workflow_instance WHERE id = ?"
            ))
            .into_owned();
        let row = sqlx::query(&q).bind(id).fetch_optional(&self.read).await?;
        let mut instance = row
            .map(|r| instance_row(&r))
            .transpose()?
            .ok_or_else(|| StoreError::NotFound(format!("workflow instance {id}")))?;
        let q = self.sql(
            "SELECT node, state, run_id, result, started_at, finished_at FROM workflow_node_run \
             WHERE instance_id = ? ORDER BY id",
        );
        instance.nodes = sqlx::query(&q)
            .bind(id)
            .fetch_all(&self.read)
            .await?
            .iter()
            .map(node_row)
            .collect::<Result<_, _>>()?;
        Ok(instance)
    }

    /// Instances, newest first: of one workflow, in one state, older than `before_id`.
    pub async fn list_instances(
        &self,
        workflow_id: Option<i64>,
        state: Option<InstanceState>,
        before_id: Option<i64>,
        limit: i64,
    ) -> StoreResult<Vec<Instance>> {
        let mut q = format!("SELECT {INSTANCE_COLUMNS} FROM workflow_instance WHERE 1 = 1");
        if workflow_id.is_some() {
            q.push_str(" AND workflow_id = ?");
        }
        if state.is_some() {
            q.push_str(" AND state = ?");
        }
        if before_id.is_some() {
            q.push_str(" AND id < ?");
        }
        q.push_str(" ORDER BY id DESC LIMIT ?");
        let q = self.sql(&q).into_owned();
        let mut query = sqlx::query(&q);
        if let Some(w) = workflow_id {
            query = query.bind(w);
        }
        if let Some(s) = state {
            query = query.bind(s.as_str());
        }
        if let Some(b) = before_id {
            query = query.bind(b);
        }
        Ok(query
            .bind(limit)
            .fetch_all(&self.read)
            .await?
            .iter()
            .map(instance_row)
            .collect::<Result<_, _>>()?)
    }

    /// Deletes finished instances (and their node rows) that finished before `cutoff`, `batch`
    /// at a time; returns how many.
    pub async fn delete_finished_instances_before(&self, cutoff: i64, batch: i64) -> StoreResult<u64> {
        let mut total = 0;
        loop {
            let q = self.sql(
                "SELECT id FROM workflow_instance WHERE finished_at > 0 AND finished_at < ? \
                 AND state NOT IN ('queued', 'running') ORDER BY id LIMIT ?",
            );
            let ids: Vec<i64> = sqlx::query(&q)
                .bind(cutoff)
                .bind(batch)
                .fetch_all(&self.read)
                .await?
                .iter()
                .map(|r| rows::int(r, "id"))
                .collect::<Result<_, _>>()?;
            if ids.is_empty() {
                return Ok(total);
            }
            let mut tx = self.write.begin().await?;
            self.execute_in(
                &mut tx,
                "DELETE FROM workflow_node_run WHERE instance_id IN ({in})",
                &ids,
                &[],
            )
            .await?;
            total += self
                .execute_in(&mut tx, "DELETE FROM workflow_instance WHERE id IN ({in})", &ids, &[])
                .await?;
            tx.commit().await?;
        }
    }

    /// Whether some node of some instance is running (the workflow loop is woken by results
    /// only then).
    pub async fn has_running_nodes(&self) -> StoreResult<bool> {
        let row = sqlx::query(
            "SELECT COUNT(*) AS n FROM (SELECT 1 AS x FROM workflow_node_run WHERE state = 'running' LIMIT 1) t",
        )
        .fetch_one(&self.read)
        .await?;
        Ok(rows::int(&row, "n")? > 0)
    }

    /// How many instances are in each state.
    pub async fn instance_counts(&self) -> StoreResult<Vec<(InstanceState, i64)>> {
        let rows = sqlx::query("SELECT state, COUNT(*) AS n FROM workflow_instance GROUP BY state")
            .fetch_all(&self.read)
            .await?;
        let mut out = Vec::new();
        for r in &rows {
            if let Some(s) = InstanceState::parse(&rows::text(r, "state")?) {
                out.push((s, rows::int(r, "n")?));
            }
        }
        Ok(out)
    }

    /// Stops an instance: its running nodes are stopped (their runs are returned, to be killed)
    /// and it starts no more. 409 when it is over already.
    pub async fn stop_instance(&self, id: i64, by: &str) -> StoreResult<(i64, Vec<i64>)> {
        let now = now_ms();
        let mut tx = self.write.begin().await?;
        let instance = self.lock_instance(&mut tx, id).await?;
        if instance.state.is_final() {
            return Err(StoreError::Conflict(format!(
                "instance {id} is {} already",
                instance.state.as_str()
            )));
        }
        let nodes = self.node_runs(&mut tx, id).await?;
        let running: Vec<i64> = nodes
            .iter()
            .filter(|n| n.state == NodeState::Running)
            .map(|n| n.run_id)
            .collect();
        let q = self.sql(
            "UPDATE workflow_node_run SET state = 'stopped', finished_at = ? WHERE instance_id = ? AND state = 'running'",
        );
        sqlx::query(&q).bind(now).bind(id).execute(&mut *tx).await?;
        let q =
            self.sql("UPDATE workflow_instance SET state = 'stopped', stopped_by = ?, finished_at = ? WHERE id = ?");
        sqlx::query(&q)
            .bind(by.chars().take(128).collect::<String>())
            .bind(now)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok((instance.workflow_id, running))
    }

    /// Starts the oldest queued instance of `workflow_id` if there is room (after a stop).
    pub async fn start_queued_instance(&self, workflow_id: i64) -> StoreResult<NodeTickets> {
        self.start_queued(workflow_id).await
    }

    /// An operator's change to one node of an instance, and the instance moved on from there:
    /// retry a failed or stopped node (a new run), skip a node that has not started or failed
    /// (its children go on as after a success), or mark a failed or stopped node succeeded.
    /// Nodes that would not run because of the node's old state are decided again. A finished
    /// instance runs again; a stopped one is stopped for good (409).
    pub async fn change_node(&self, id: i64, node: &str, change: NodeChange) -> StoreResult<NodeTickets> {
        let now = now_ms();
        let mut tx = self.write.begin().await?;
        let instance = self.lock_instance(&mut tx, id).await?;
        if matches!(
            instance.state,
            InstanceState::Stopped | InstanceState::Skipped | InstanceState::Queued
        ) {
            return Err(StoreError::Conflict(format!(
                "instance {id} is {}",
                instance.state.as_str()
            )));
        }
        let def = &instance.definition;
        let Some(spec) = def.node(node) else {
            return Err(StoreError::NotFound(format!("node '{node}' in instance {id}")));
        };
        let nodes = self.node_runs(&mut tx, id).await?;
        let current = nodes.iter().find(|n| n.node == node).map(|n| n.state);
        let allowed = match change {
            NodeChange::Retry | NodeChange::MarkSucceeded => {
                matches!(current, Some(NodeState::Failed | NodeState::Stopped))
            }
            NodeChange::Skip => matches!(current, None | Some(NodeState::Failed | NodeState::NotRun)),
        };
        if !allowed {
            return Err(StoreError::Conflict(format!(
                "node '{node}' is {}: cannot {}",
                current.map_or("waiting", NodeState::as_str),
                change.as_str()
            )));
        }
        // What the old state decided downstream is decided again.
        let downstream = def.downstream(node);
        let undecided: Vec<&str> = nodes
            .iter()
            .filter(|n| n.state == NodeState::NotRun && downstream.contains(n.node.as_str()))
            .map(|n| n.node.as_str())
            .collect();
        for key in &undecided {
            let q = self.sql("DELETE FROM workflow_node_run WHERE instance_id = ? AND node = ?");
            sqlx::query(&q).bind(id).bind(*key).execute(&mut *tx).await?;
        }
        let mut tickets = Vec::new();
        match change {
            NodeChange::Retry => {
                let job = self
                    .jobs_tx(&mut tx, &[spec.job_id])
                    .await?
                    .remove(&spec.job_id)
                    .ok_or_else(|| StoreError::Conflict(format!("job {} no longer exists", spec.job_id)))?;
                let results: HashMap<String, String> = nodes
                    .iter()
                    .filter(|n| n.state == NodeState::Succeeded)
                    .map(|n| (n.node.clone(), n.result.clone()))
                    .collect();
                let run = node_run(&job, spec, &results, now);
                let ticket = self
                    .insert_runs_tx(&mut tx, &[run])
                    .await?
                    .pop()
                    .ok_or_else(|| StoreError::Conflict(format!("the run of node '{node}' was not created")))?;
                let q = self.sql(
                    "UPDATE workflow_node_run SET state = 'running', run_id = ?, result = '', started_at = ?, \
                     finished_at = 0 WHERE instance_id = ? AND node = ?",
                );
                sqlx::query(&q)
                    .bind(ticket.id)
                    .bind(now)
                    .bind(id)
                    .bind(node)
                    .execute(&mut *tx)
                    .await?;
                tickets.push((Arc::new(job), ticket));
            }
            NodeChange::Skip | NodeChange::MarkSucceeded => {
                let state = if change == NodeChange::Skip {
                    NodeState::Skipped
                } else {
                    NodeState::Succeeded
                };
                if current.is_some() {
                    let q = self.sql(
                        "UPDATE workflow_node_run SET state = ?, finished_at = ? WHERE instance_id = ? AND node = ?",
                    );
                    sqlx::query(&q)
                        .bind(state.as_str())
                        .bind(now)
                        .bind(id)
                        .bind(node)
                        .execute(&mut *tx)
                        .await?;
                } else {
                    self.insert_node(&mut tx, id, node, state, 0, "", now).await?;
                }
            }
        }
        if instance.state != InstanceState::Running {
            let q = self.sql("UPDATE workflow_instance SET state = 'running', finished_at = 0 WHERE id = ?");
            sqlx::query(&q).bind(id).execute(&mut *tx).await?;
        }
        let step = self.progress(&mut tx, id, now, now).await?;
        tx.commit().await?;
        tickets.extend(step.tickets);
        Ok(tickets)
    }

    async fn lock_instance(&self, tx: &mut Transaction<'static, Any>, id: i64) -> StoreResult<Instance> {
        let q = self
            .sql(&format!(
                "SELECT {INSTANCE_COLUMNS} FROM workflow_instance WHERE id = ?{}",
                self.backend.for_update()
            ))
            .into_owned();
        let row = sqlx::query(&q).bind(id).fetch_optional(&mut **tx).await?;
        row.map(|r| instance_row(&r))
            .transpose()?
            .ok_or_else(|| StoreError::NotFound(format!("workflow instance {id}")))
    }
}

/// What [`Store::progress`] did to one instance.
#[derive(Debug, Default)]
struct Progress {
    tickets: NodeTickets,
    finished: Vec<InstanceState>,
    lateness_ms: Vec<i64>,
    /// The workflows whose instances finished (a queued one may start).
    finished_workflows: Vec<i64>,
}

/// An operator's change to a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeChange {
    /// Run a failed or stopped node again.
    Retry,
    /// Do not run it; its children go on as after a success.
    Skip,
    /// Count a failed or stopped node as succeeded.
    MarkSucceeded,
}

impl NodeChange {
    /// How the API names it.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeChange::Retry => "retry",
            NodeChange::Skip => "skip",
            NodeChange::MarkSucceeded => "mark succeeded",
        }
    }
}

/// The run of `node`, due at `at`: its job's, with the node's parameter (or the job's) and the
/// upstream results it names filled in.
fn node_run(job: &Job, node: &dag::Node, results: &HashMap<String, String>, at: i64) -> NewRun {
    let mut run = NewRun::of_job(job, TriggerType::Workflow, at, None);
    run.param = dag::resolve(node.param.as_deref().unwrap_or(&job.param), results);
    run
}

/// When a workflow started now fires first (0 when it is not started).
fn first_fire_of(d: &WorkflowDraft, now: i64) -> StoreResult<i64> {
    if !d.running {
        return Ok(0);
    }
    Ok(super::jobs::first_fire(
        d.schedule_type,
        &d.schedule_expr,
        &d.time_zone,
        now,
        now,
    )?)
}

/// A unique-name violation as a 422 on `name`.
fn name_taken(e: sqlx::Error, name: &str) -> StoreError {
    match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => {
            crate::model::Invalid::new("name", format!("a workflow named '{name}' exists already")).into()
        }
        _ => e.into(),
    }
}
