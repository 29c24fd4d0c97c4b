//! Workflows: their definitions, their instances and the nodes of those, and the operators'
//! changes to instances (stop, retry, skip, mark succeeded), each in one transaction that holds
//! the instance's row and raises its `revision`. Firing and moving instances on are in
//! `workflow_steps.rs`.

use super::bulk::Arg;
use super::jobs::BUMP_UPDATED_AT;
use super::rows;
use super::workflow_rows::{instance_row, node_row, workflow_row, INSTANCE_COLUMNS, INSTANCE_FROM, WORKFLOW_COLUMNS};
use super::workflow_steps::NodeTickets;
use super::{Store, StoreError, StoreResult, PARTITIONS};
use crate::business_days::BusinessDays;
use crate::model::{now_ms, Job};
use crate::run::RunTicket;
use crate::workflow::dag::{self, InstanceState, NodeState};
use crate::workflow::spec::{Instance, NodeRun, Workflow, WorkflowDraft};
pub use crate::workflow::step::NodeChange;
use crate::workflow::step::{self, node_run, ChangeAction, ChangeRefused};
use sqlx::any::{Any, AnyArguments};
use sqlx::query::Query;
use sqlx::Transaction;
use std::collections::HashMap;
use std::sync::Arc;

impl Store {
    /// The jobs among `ids` that exist, with what a workflow's check needs to know of each
    /// (whether it runs code).
    pub async fn node_jobs(&self, ids: &[i64]) -> StoreResult<HashMap<i64, dag::NodeJob>> {
        let mut conn = self.read.acquire().await?;
        self.node_jobs_in(&mut conn, ids).await
    }

    /// [`Store::node_jobs`] on `conn` (in a transaction that may have created some of them).
    pub(super) async fn node_jobs_in(
        &self,
        conn: &mut sqlx::AnyConnection,
        ids: &[i64],
    ) -> StoreResult<HashMap<i64, dag::NodeJob>> {
        let q = "SELECT id, glue_type, handler FROM job WHERE id IN ({in})";
        let mut out = HashMap::with_capacity(ids.len());
        for r in self.fetch_in(conn, q, ids, &[]).await? {
            // An unknown script type is a script all the same.
            let glue_type = rows::text(&r, "glue_type")?
                .parse()
                .unwrap_or(chime_protocol::GlueType::GlueShell);
            let kind = dag::NodeJob::of(glue_type, &rows::text(&r, "handler")?);
            out.insert(rows::int(&r, "id")?, kind);
        }
        Ok(out)
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
        let business = self.business_days_tx(tx, &d.calendar).await?;
        let first_fire = first_fire_of(d, business, now)?;
        let json = serde_json::to_string(&d.definition).unwrap_or_default();
        let q = self.sql(
            "INSERT INTO workflow (name, description, partition_no, schedule_type, schedule_expr, time_zone, \
             misfire_strategy, max_instances, on_limit, alarm_channels, calendar, definition, running, anchor_at, next_fire_at, \
             last_fire_at, created_at, updated_at) VALUES (?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?) RETURNING id",
        );
        let row = bind_settings(sqlx::query(&q), d)
            .bind(&json)
            .bind(i64::from(d.running))
            .bind(now)
            .bind(first_fire)
            .bind(now)
            .bind(now)
            .fetch_one(&mut **tx)
            .await
            .map_err(|e| name_taken(e, &d.name))?;
        let id = rows::int(&row, 0)?;
        let version = self.add_version(tx, id, &json, now).await?;
        let q = self.sql("UPDATE workflow SET partition_no = ?, version_id = ? WHERE id = ?");
        sqlx::query(&q)
            .bind(id % PARTITIONS)
            .bind(version)
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
        let business = self.business_days_tx(tx, &d.calendar).await?;
        let first_fire = first_fire_of(d, business, now)?;
        let json = serde_json::to_string(&d.definition).unwrap_or_default();
        // A changed graph is a new version; running instances keep theirs.
        let version = if json == serde_json::to_string(&old.definition).unwrap_or_default() && old.version > 0 {
            old.version
        } else {
            self.add_version(tx, old.id, &json, now).await?
        };
        let schedule_changed = old.schedule_type != d.schedule_type
            || old.schedule_expr != d.schedule_expr
            || old.time_zone != d.time_zone
            || old.calendar != d.calendar;
        let (anchor, next) = if !d.running {
            (old.anchor_at, 0)
        } else if schedule_changed || !old.running {
            (now, first_fire)
        } else {
            (old.anchor_at, old.next_fire_at)
        };
        let q = self.sql_text(format!(
            "UPDATE workflow SET name = ?, description = ?, schedule_type = ?, schedule_expr = ?, time_zone = ?, \
                 misfire_strategy = ?, max_instances = ?, on_limit = ?, alarm_channels = ?, calendar = ?, definition = ?, version_id = ?, running = ?, \
                 anchor_at = ?, next_fire_at = ?, updated_at = {BUMP_UPDATED_AT} WHERE id = ?"
        ));
        bind_settings(sqlx::query(&q), d)
            .bind(&json)
            .bind(version)
            .bind(i64::from(d.running))
            .bind(anchor)
            .bind(next)
            .bind(now)
            .bind(now)
            .bind(old.id)
            .execute(&mut **tx)
            .await
            .map_err(|e| name_taken(e, &d.name))?;
        if version != old.version {
            // Kept only while an instance fired from it is (retention deletes it then).
            let q = self.sql(
                "DELETE FROM workflow_version WHERE id = ? AND NOT EXISTS \
                 (SELECT 1 FROM workflow_instance i WHERE i.workflow_id = ? AND i.version_id = ?)",
            );
            sqlx::query(&q)
                .bind(old.version)
                .bind(old.id)
                .bind(old.version)
                .execute(&mut **tx)
                .await?;
        }
        Ok(())
    }

    /// Keeps graph `json` as a new version of workflow `id`; returns the version's id.
    async fn add_version(&self, tx: &mut Transaction<'static, Any>, id: i64, json: &str, now: i64) -> StoreResult<i64> {
        let q = self
            .sql("INSERT INTO workflow_version (workflow_id, definition, created_at) VALUES (?, ?, ?) RETURNING id");
        let row = sqlx::query(&q)
            .bind(id)
            .bind(json)
            .bind(now)
            .fetch_one(&mut **tx)
            .await?;
        Ok(rows::int(&row, 0)?)
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
        let dependents = [
            "workflow_node_run WHERE instance_id IN (SELECT id FROM workflow_instance WHERE workflow_id = ?)",
            "workflow_instance WHERE workflow_id = ?",
            "workflow_version WHERE workflow_id = ?",
            "backfill WHERE target = 'workflow' AND target_id = ?",
            "backfill_fire WHERE target = 'workflow' AND target_id = ?",
            "workflow WHERE id = ?",
        ];
        self.delete_rows_of(&mut tx, &dependents, id).await?;
        tx.commit().await?;
        Ok(())
    }

    /// A workflow.
    pub async fn workflow(&self, id: i64) -> StoreResult<Workflow> {
        let q = format!("SELECT {WORKFLOW_COLUMNS} FROM workflow WHERE id = ?");
        self.read_by_id(&q, id, "workflow", workflow_row).await
    }

    pub(super) async fn workflow_tx(&self, tx: &mut Transaction<'static, Any>, id: i64) -> StoreResult<Workflow> {
        let q = format!(
            "SELECT {WORKFLOW_COLUMNS} FROM workflow WHERE id = ?{}",
            self.backend.for_update()
        );
        self.row_by_id(tx, &q, id, "workflow", workflow_row).await
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
            let first_fire = super::jobs::first_fire(w.calendar(now), now)?;
            self.set_scheduled("workflow", id, Some(first_fire), now).await?;
        } else {
            self.set_scheduled("workflow", id, None, now).await?;
        }
        self.workflow(id).await
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
        let q = self.sql_text(format!("SELECT {INSTANCE_COLUMNS} FROM {INSTANCE_FROM} WHERE i.id = ?"));
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
        let q = self.instance_list_sql(workflow_id.is_some(), state.is_some(), before_id.is_some());
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

    /// The statement [`Store::list_instances`] runs with these filters, in this backend's
    /// syntax; its parameters are the workflow, the state, the cursor (each when filtered on)
    /// and the page's length. Public so that how each list is read can be checked
    /// (`EXPLAIN`).
    ///
    /// Each filter has an index that holds its instances in id order (migration 0018), so a
    /// page reads its own rows, however many instances are kept. SQLite and MariaDB are told
    /// which one: left to itself SQLite, which has no statistics to go by, took the unique
    /// `(workflow, fire)` index and sorted every instance of the workflow for each page (0.24 s
    /// for 900,000), and MariaDB intersected the workflow's and the state's indexes and sorted
    /// what both held.
    pub fn instance_list_sql(&self, workflow: bool, state: bool, before: bool) -> String {
        let index = match (workflow, state) {
            (true, false) => Some("workflow_instance_list"),
            (false, true) => Some("workflow_instance_state_list"),
            (true, true) => Some("workflow_instance_state"),
            (false, false) => None,
        };
        let mut q = format!(
            "SELECT {INSTANCE_COLUMNS} FROM {INSTANCE_FROM}{} WHERE 1 = 1",
            index.map(|ix| self.backend.use_index(ix)).unwrap_or_default(),
        );
        if workflow {
            q.push_str(" AND i.workflow_id = ?");
        }
        if state {
            q.push_str(" AND i.state = ?");
        }
        if before {
            q.push_str(" AND i.id < ?");
        }
        q.push_str(" ORDER BY i.id DESC LIMIT ?");
        self.sql(&q).into_owned()
    }

    /// Deletes finished instances (and their node rows) that finished before `cutoff`, `batch`
    /// at a time, and the versions of graphs that no instance and no workflow uses any more;
    /// returns how many instances.
    pub async fn delete_finished_instances_before(&self, cutoff: i64, batch: i64) -> StoreResult<u64> {
        let mut total = 0;
        loop {
            let q = self.sql(
                "SELECT id, version_id FROM workflow_instance WHERE finished_at > 0 AND finished_at < ? \
                 AND state NOT IN ('queued', 'running') ORDER BY id LIMIT ?",
            );
            let mut ids: Vec<i64> = Vec::new();
            let mut versions: Vec<i64> = Vec::new();
            for r in sqlx::query(&q).bind(cutoff).bind(batch).fetch_all(&self.read).await? {
                ids.push(rows::int(&r, "id")?);
                versions.push(rows::int(&r, "version_id")?);
            }
            if ids.is_empty() {
                return Ok(total);
            }
            versions.sort_unstable();
            versions.dedup();
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
            // The instances' own workflow is searched, through its unique (workflow, fire) index.
            self.execute_in(
                &mut tx,
                "DELETE FROM workflow_version WHERE id IN ({in}) \
                 AND NOT EXISTS (SELECT 1 FROM workflow w WHERE w.version_id = workflow_version.id) \
                 AND NOT EXISTS (SELECT 1 FROM workflow_instance i \
                   WHERE i.workflow_id = workflow_version.workflow_id AND i.version_id = workflow_version.id)",
                &versions,
                &[],
            )
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

    /// How many instances are in each state; with `open_only`, only in the states not final
    /// (queued, running), which the state index counts in a range as long as the open instances
    /// are, where counting every state reads an entry for every instance kept (47 ms for a million
    /// on SQLite).
    pub async fn instance_counts(&self, open_only: bool) -> StoreResult<Vec<(InstanceState, i64)>> {
        let q = if open_only {
            "SELECT state, COUNT(*) AS n FROM workflow_instance WHERE state IN ('queued', 'running') GROUP BY state"
        } else {
            "SELECT state, COUNT(*) AS n FROM workflow_instance GROUP BY state"
        };
        let rows = sqlx::query(q).fetch_all(&self.read).await?;
        let mut out = Vec::new();
        for r in &rows {
            if let Some(s) = InstanceState::parse(&rows::text(r, "state")?) {
                out.push((s, rows::int(r, "n")?));
            }
        }
        Ok(out)
    }

    /// Stops an instance: its running nodes are stopped and it starts no more. A running node's
    /// run not yet being sent is withdrawn in the same transaction (recorded as killed by `by`,
    /// never sent: a run another admin marks for sending is not one, and the mark refuses a
    /// withdrawn run); the others are returned, to be killed at their executors. 409 when it is
    /// over already.
    pub async fn stop_instance(&self, id: i64, by: &str) -> StoreResult<StoppedInstance> {
        let now = now_ms();
        let by: String = by.chars().take(128).collect();
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
            .filter(|n| n.state == NodeState::Running && n.run_id > 0)
            .map(|n| n.run_id)
            .collect();
        let q = format!(
            "SELECT id FROM run WHERE id IN ({{in}}) AND trigger_code = 0 AND handle_code = 0 AND send_token = 0{}",
            self.backend.for_update()
        );
        let unsent: Vec<i64> = self
            .fetch_in(&mut tx, &q, &running, &[])
            .await?
            .iter()
            .map(|r| rows::int(r, "id"))
            .collect::<Result<_, _>>()?;
        let why = format!("not sent: its workflow instance {id} was stopped");
        self.execute_in(
            &mut tx,
            "UPDATE run SET trigger_code = 500, trigger_msg = ?, handle_code = 500, handle_msg = ?, handled_at = ?, \
             killed_by = ? WHERE id IN ({in}) AND trigger_code = 0 AND send_token = 0",
            &unsent,
            &[Arg::Text(&why), Arg::Text(&why), Arg::Int(now), Arg::Text(&by)],
        )
        .await?;
        let q = self.sql(
            "UPDATE workflow_node_run SET state = 'stopped', finished_at = ? WHERE instance_id = ? AND state = 'running'",
        );
        sqlx::query(&q).bind(now).bind(id).execute(&mut *tx).await?;
        let q = self.sql(
            "UPDATE workflow_instance SET state = 'stopped', stopped_by = ?, finished_at = ?, revision = revision + 1 \
             WHERE id = ?",
        );
        sqlx::query(&q).bind(&by).bind(now).bind(id).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(StoppedInstance {
            workflow_id: instance.workflow_id,
            to_kill: running.into_iter().filter(|r| !unsent.contains(r)).collect(),
            withdrawn: unsent,
        })
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
        let nodes = self.node_runs(&mut tx, id).await?;
        let plan =
            step::plan_change(id, instance.state, &instance.definition, &nodes, node, change).map_err(|e| match e {
                ChangeRefused::Conflict(why) => StoreError::Conflict(why),
                ChangeRefused::NotFound(what) => StoreError::NotFound(what),
            })?;
        for key in &plan.undecided {
            let q = self.sql("DELETE FROM workflow_node_run WHERE instance_id = ? AND node = ?");
            sqlx::query(&q).bind(id).bind(key).execute(&mut *tx).await?;
        }
        let mut tickets = Vec::new();
        match plan.action {
            ChangeAction::Retry { job_id } => {
                let retry = self.retry_node(&mut tx, &instance, &nodes, node, job_id, now);
                tickets.push(retry.await?);
            }
            ChangeAction::Set { state, has_row: true } => {
                let q = self
                    .sql("UPDATE workflow_node_run SET state = ?, finished_at = ? WHERE instance_id = ? AND node = ?");
                let query = sqlx::query(&q).bind(state.as_str()).bind(now).bind(id).bind(node);
                query.execute(&mut *tx).await?;
            }
            ChangeAction::Set { state, has_row: false } => {
                self.insert_node(&mut tx, id, node, state, 0, "", now).await?;
            }
        }
        // Running (again), and changed: whatever an admin kept of it is read again.
        let q = self.sql(
            "UPDATE workflow_instance SET state = 'running', finished_at = 0, revision = revision + 1 WHERE id = ?",
        );
        sqlx::query(&q).bind(id).execute(&mut *tx).await?;
        let step = self.progress(&mut tx, id, now, now).await?;
        tx.commit().await?;
        tickets.extend(step.tickets);
        Ok(tickets)
    }

    /// Runs node `node` of `instance` again: a new run of job `job_id` with the node's
    /// parameter and the upstream results of `nodes`, and the node's row running it.
    async fn retry_node(
        &self,
        tx: &mut Transaction<'static, Any>,
        instance: &Instance,
        nodes: &[NodeRun],
        node: &str,
        job_id: i64,
        now: i64,
    ) -> StoreResult<(Arc<Job>, RunTicket)> {
        let job = self
            .jobs_tx(tx, &[job_id])
            .await?
            .remove(&job_id)
            .ok_or_else(|| StoreError::Conflict(format!("job {job_id} no longer exists")))?;
        let results: dag::Results<'_> = nodes
            .iter()
            .filter(|n| n.state == NodeState::Succeeded)
            .map(|n| (n.node.as_str(), n.result.as_str()))
            .collect();
        let graph = dag::Graph::new(instance.definition.clone());
        let k = graph.index(node).unwrap_or_default();
        let run = node_run(&job, &graph, k, &results, now, instance.scheduled_at).map_err(StoreError::Conflict)?;
        let ticket = self
            .insert_runs_tx(tx, &[run])
            .await?
            .pop()
            .ok_or_else(|| StoreError::Conflict(format!("the run of node '{node}' was not created")))?;
        let q = self.sql(
            "UPDATE workflow_node_run SET state = 'running', run_id = ?, result = '', started_at = ?, \
             finished_at = 0 WHERE instance_id = ? AND node = ?",
        );
        let query = sqlx::query(&q).bind(ticket.id).bind(now).bind(instance.id).bind(node);
        query.execute(&mut **tx).await?;
        Ok((Arc::new(job), ticket))
    }

    async fn lock_instance(&self, tx: &mut Transaction<'static, Any>, id: i64) -> StoreResult<Instance> {
        let q = format!(
            "SELECT {INSTANCE_COLUMNS} FROM {INSTANCE_FROM} WHERE i.id = ?{}",
            self.backend.for_update()
        );
        self.row_by_id(tx, &q, id, "workflow instance", instance_row).await
    }
}

/// What stopping an instance did to its running nodes' runs.
#[derive(Debug)]
pub struct StoppedInstance {
    /// The instance's workflow (a queued instance of it may start now).
    pub workflow_id: i64,
    /// Runs sent (or being sent), to kill at their executors.
    pub to_kill: Vec<i64>,
    /// Runs not yet sent, recorded as killed: they must not go out.
    pub withdrawn: Vec<i64>,
}

/// When a workflow started now fires first (0 when it is not started), on the business days
/// of `business` (its calendar's, read in the writing transaction).
fn first_fire_of(d: &WorkflowDraft, business: Option<Arc<BusinessDays>>, now: i64) -> StoreResult<i64> {
    if !d.running {
        return Ok(0);
    }
    let cal = crate::calendar::Calendar::parse(d.schedule_type, &d.schedule_expr, &d.time_zone, now)
        .and_then(|c| c.with_business_days(business));
    Ok(super::jobs::first_fire(cal, now)?)
}

/// A unique-name violation as a 422 on `name`.
fn name_taken(e: sqlx::Error, name: &str) -> StoreError {
    StoreError::unique_violation_as(e, || {
        crate::model::Invalid::new("name", format!("a workflow named '{name}' exists already")).into()
    })
}

/// Binds a workflow's settings in the order its insert and update name them: name,
/// description, schedule type, expression and zone, misfire strategy, `max_instances`,
/// `on_limit`, `alarm_channels`, `calendar`.
fn bind_settings<'q>(
    query: Query<'q, Any, AnyArguments<'q>>,
    d: &'q WorkflowDraft,
) -> Query<'q, Any, AnyArguments<'q>> {
    query
        .bind(&d.name)
        .bind(&d.description)
        .bind(d.schedule_type.as_str())
        .bind(&d.schedule_expr)
        .bind(&d.time_zone)
        .bind(d.misfire_strategy.as_str())
        .bind(d.max_instances)
        .bind(d.on_limit.as_str())
        .bind(&d.alarm_channels)
        .bind(&d.calendar)
}
