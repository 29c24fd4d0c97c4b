//! The workflow engine's steps: firing workflows and moving their instances on, each in one
//! transaction that holds the instances' rows.
//!
//! A step writes the finished nodes' states and the next nodes' rows and runs together, for
//! up to [`ADVANCE_BATCH`] instances, in a few multi-row statements, as a claim writes its
//! fires. `(instance_id, node)` is unique, so a node cannot start twice. What to do next is
//! decided without I/O by `workflow::step::plan_step`; this reads the facts it needs and writes
//! its plan. The loop's [`LiveInstances`] spare a step reading again what the loop's last step wrote: an
//! instance is taken from there while its row's `revision` is the one kept, read from the
//! database when not. Operators' changes raise the revision (they may move a node back, from
//! failed to running); the engine's steps do not (they only move nodes forward, and an admin
//! that could have missed another admin's steps has let go of what it kept).
//!
//! The rows a step writes and reads besides its decisions (new instances, node rows, how runs
//! ended) are `store/workflow_instances.rs`'s.

use super::bulk::sized_query;
use super::rows;
use super::runs::{DUE_COLUMNS, UPDATE_ROWS};
use super::sqlite_ids::{IdCursor, KNOWN_IDS};
use super::{Backend, Store, StoreError, StoreResult, PARTITIONS};
use crate::model::{now_ms, Job, SKIPPED_CODE};
use crate::run::{capped, FirePlan, NewRun, RunTicket};
use crate::workflow::dag::{self, InstanceState, NodeState};
use crate::workflow::live::{LiveInstance, LiveInstances};
use crate::workflow::spec::{NodeRun, Workflow};
use crate::workflow::step::{self, NewNode, RunEnd, RunFacts, StepPlan};
use crate::workflow::Reported;
use chime_protocol::TriggerType;
use rustc_hash::FxHashMap;
use sqlx::any::Any;
use sqlx::AnyConnection;
use sqlx::Transaction;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::workflow_instances::NewInstance;
use super::workflow_rows::{node_row, workflow_row_with, WORKFLOW_FIELDS};

/// Node rows inserted per multi-row statement (7 values each: 2,800, under every engine's
/// bound-parameter limit). A wave of nodes takes a few statements, not one per 200.
const NODE_ROWS: usize = 400;
/// Instances moved on per transaction at most: the loop puts each batch's runs on the timer
/// before the next, so the first nodes are not kept waiting for the last. With steps this
/// cheap, 500 takes up more results at once than 200 did (node lateness p99 0.1 s against
/// 0.17 s for 1,000 instances at once) and leaves the first runs waiting no longer.
pub const ADVANCE_BATCH: usize = 500;
/// Workflows fired per round at most.
const FIRE_BATCH: i64 = 200;

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
    /// The runs the stepped instances' running nodes now wait for.
    pub waiting: Vec<i64>,
    /// A round of fires took a full batch of workflows: more may be due.
    pub more: bool,
}

impl Advanced {
    fn absorb(&mut self, p: Progress, live: &mut LiveInstances) {
        self.tickets.extend(p.tickets);
        self.finished.extend(p.finished);
        self.lateness_ms.extend(p.lateness_ms);
        for i in p.live {
            self.waiting.extend(i.running_runs());
            live.put(i);
        }
    }

    /// Whether the round did anything.
    pub fn is_empty(&self) -> bool {
        self.tickets.is_empty() && self.finished.is_empty() && self.lateness_ms.is_empty()
    }
}

/// What [`Store::step_instances`] did.
#[derive(Debug, Default)]
pub(super) struct Progress {
    pub(super) tickets: NodeTickets,
    pub(super) finished: Vec<InstanceState>,
    pub(super) lateness_ms: Vec<i64>,
    /// The workflows whose instances finished (a queued one may start).
    pub(super) finished_workflows: Vec<i64>,
    /// The instances still running after the step, as they are now (for the loop to keep once
    /// the transaction committed).
    pub(super) live: Vec<LiveInstance>,
}

/// Which running nodes' runs a step looks at.
#[derive(Debug, Clone, Copy)]
enum Look<'a> {
    /// Every running node's.
    All,
    /// Only these runs' (reported finished by the results writer, with their results when it
    /// saw them written), and every running node's of an instance read from the database.
    Runs(&'a Reported),
}

impl Store {
    /// Fires the due workflows of `partitions` up to `horizon`, as `plan` decides for each (the
    /// jobs' schedule engine): in one transaction, each fire's instance (one per fire time at
    /// most), its first nodes' runs, and the workflow's next fire time. Returns the runs; the
    /// new instances join `live`.
    pub async fn fire_workflows(
        &self,
        partitions: &[i64],
        horizon: i64,
        live: &mut LiveInstances,
        plan: impl FnMut(&Workflow) -> FirePlan,
    ) -> StoreResult<Advanced> {
        let mut out = Advanced::default();
        if partitions.is_empty() {
            return Ok(out);
        }
        let now = now_ms();
        let mut tx = self.write.begin().await?;
        let (due, more) = self.due_workflows(&mut tx, partitions, horizon, live).await?;
        out.more = more;
        if due.is_empty() {
            tx.rollback().await?;
            return Ok(out);
        }
        let (starts, next) = self.make_fires(&mut tx, &due, plan, now).await?;
        let mut fresh = LiveInstances::default();
        for (id, at, k) in &starts {
            let (w, graph) = &due[*k];
            // New, so nothing to read of it: its graph is the workflow's.
            fresh.put(LiveInstance {
                id: *id,
                workflow_id: w.id,
                revision: 0,
                scheduled_at: *at,
                definition: graph.clone(),
                nodes: Vec::new(),
            });
        }
        let starts: Vec<(i64, i64)> = starts.into_iter().map(|(id, at, _)| (id, at)).collect();
        self.write_next_fires(&mut tx, &next).await?;
        let mut progress = Progress::default();
        for chunk in starts.chunks(ADVANCE_BATCH) {
            let p = self.step_instances(&mut tx, chunk, now, &mut fresh, Look::All).await?;
            progress.tickets.extend(p.tickets);
            progress.finished.extend(p.finished);
            progress.live.extend(p.live);
        }
        tx.commit().await?;
        out.absorb(progress, live);
        Ok(out)
    }

    /// The due workflows of `partitions` up to `horizon` (a batch, their rows locked), each with
    /// its graph, and whether the batch was full (more may be due).
    async fn due_workflows(
        &self,
        tx: &mut Transaction<'static, Any>,
        partitions: &[i64],
        horizon: i64,
        live: &mut LiveInstances,
    ) -> StoreResult<(Vec<(Workflow, Arc<dag::Graph>)>, bool)> {
        // Only the fire times, as the claim reads jobs: the rest of each workflow is kept in
        // `live` while its `updated_at` holds, and read again when it moved.
        let filter = format!(
            " AND next_fire_at > 0 AND partition_no IN ({})",
            super::placeholders(partitions.len())
        );
        let q = self.due_rows_sql("workflow", &filter, &FIRE_BATCH.to_string());
        let binds: Vec<i64> = [horizon, horizon]
            .into_iter()
            .chain(partitions.iter().copied())
            .collect();
        let times = self.int_rows(tx, &q, DUE_COLUMNS, &binds).await?;
        let more = times.len() as i64 == FIRE_BATCH;
        let due_rows = self.workflows_of(tx, times, live).await?;
        // Each graph read and parsed once per version (`live`), not once per fire.
        let versions: Vec<i64> = due_rows.iter().map(|w| w.version).collect();
        let graphs = self.graphs(tx, &versions, live).await?;
        let due = due_rows
            .into_iter()
            .map(|w| {
                let graph = graphs[&w.version].clone();
                (w, graph)
            })
            .collect();
        Ok((due, more))
    }

    /// The workflows of the fire times `times` (`id, updated_at, anchor_at, next_fire_at,
    /// last_fire_at, paused_until`): kept in `live` while their `updated_at` holds, read (and
    /// kept) when not.
    async fn workflows_of(
        &self,
        tx: &mut Transaction<'static, Any>,
        times: Vec<[i64; 6]>,
        live: &mut LiveInstances,
    ) -> StoreResult<Vec<Workflow>> {
        let kept: Vec<Option<Workflow>> = times
            .iter()
            .map(|[id, updated_at, ..]| live.workflow(*id, *updated_at).cloned())
            .collect();
        let changed: Vec<i64> = times
            .iter()
            .zip(&kept)
            .filter(|(_, k)| k.is_none())
            .map(|([id, ..], _)| *id)
            .collect();
        let q = format!("SELECT {WORKFLOW_FIELDS} FROM workflow WHERE id IN ({{in}})");
        let mut read: HashMap<i64, Workflow> = HashMap::with_capacity(changed.len());
        for row in self.fetch_in(tx, &q, &changed, &[]).await? {
            let w = workflow_row_with(&row, dag::Definition::default())?;
            live.keep_workflow(w.clone());
            read.insert(w.id, w);
        }
        let mut due_rows = Vec::with_capacity(times.len());
        for ([id, _, anchor_at, next_fire_at, last_fire_at, paused_until], kept) in times.into_iter().zip(kept) {
            let Some(w) = kept.or_else(|| read.remove(&id)) else {
                return Err(StoreError::Conflict(format!(
                    "workflow {id} was deleted while it was fired"
                )));
            };
            let running = true;
            due_rows.push(Workflow {
                running,
                anchor_at,
                next_fire_at,
                last_fire_at,
                paused_until,
                ..w
            });
        }
        Ok(due_rows)
    }

    /// Makes the instances of the fires `plan` decides for each of `due`. Returns the
    /// instances that start now (`id`, when their first runs are due, index in `due`) and
    /// each workflow's next and last fire times.
    async fn make_fires(
        &self,
        tx: &mut Transaction<'static, Any>,
        due: &[(Workflow, Arc<dag::Graph>)],
        mut plan: impl FnMut(&Workflow) -> FirePlan,
        now: i64,
    ) -> StoreResult<(Vec<(i64, i64, usize)>, Vec<(i64, i64, i64)>)> {
        let mut starts = Vec::new();
        let mut next = Vec::with_capacity(due.len());
        // Fires of workflows without a concurrency limit are made together, several per
        // statement; a limit is counted against the instances running, one fire at a time.
        let mut unlimited: Vec<NewInstance> = Vec::new();
        for (k, (w, _)) in due.iter().enumerate() {
            let fires = plan(w);
            for f in fires.runs.iter().filter(|f| f.trigger_code != SKIPPED_CODE) {
                if let (0, Some(fire_key)) = (w.max_instances, f.fire_key) {
                    let (scheduled_at, trigger_type) = (f.scheduled_at, f.trigger_type);
                    unlimited.push(NewInstance {
                        due: k,
                        fire_key,
                        scheduled_at,
                        trigger_type,
                    });
                    continue;
                }
                let made = self
                    .create_instance(tx, w, f.fire_key, f.scheduled_at, f.trigger_type, now)
                    .await?;
                if made.started {
                    starts.push((made.id, f.scheduled_at.max(now), k));
                }
            }
            next.push((w.id, fires.next_fire_at, fires.last_fire_at));
        }
        for (id, made) in self.create_instances(tx, due, &unlimited, now).await? {
            starts.push((id, made.scheduled_at.max(now), made.due));
        }
        Ok((starts, next))
    }

    /// Writes the workflows' next and last fire times (`id, next_fire_at, last_fire_at`).
    async fn write_next_fires(&self, tx: &mut Transaction<'static, Any>, next: &[(i64, i64, i64)]) -> StoreResult<()> {
        for chunk in next.chunks(UPDATE_ROWS) {
            let q = self
                .backend
                .update_by_id("workflow", &["next_fire_at", "last_fire_at"], chunk.len(), "");
            let mut query = sqlx::query(&q);
            for (id, next_fire_at, last_fire_at) in self.backend.padded(chunk) {
                query = query.bind(*id).bind(*next_fire_at).bind(*last_fire_at);
            }
            query.execute(&mut **tx).await?;
        }
        Ok(())
    }

    /// Fires a workflow now (manual or API). Returns the instance's id and its first runs.
    pub async fn trigger_workflow(&self, id: i64, trigger_type: TriggerType) -> StoreResult<(i64, NodeTickets)> {
        let now = now_ms();
        let mut tx = self.write.begin().await?;
        let w = self.workflow_tx(&mut tx, id).await?;
        let made = self.create_instance(&mut tx, &w, None, now, trigger_type, now).await?;
        let mut tickets = Vec::new();
        if made.started {
            tickets = self.progress(&mut tx, made.id, now, now).await?.tickets;
        }
        tx.commit().await?;
        Ok((made.id, tickets))
    }

    /// Moves on instances `ids` (at most [`ADVANCE_BATCH`]; the loop's, found through `live`)
    /// whose nodes' runs among `finished` were reported finished by the results writer; of an
    /// instance not kept in `live` (or changed since), every running node is looked at. A run
    /// reported with its result is not read again.
    pub async fn advance_reported(
        &self,
        ids: &[i64],
        finished: &Reported,
        live: &mut LiveInstances,
    ) -> StoreResult<Advanced> {
        self.advance(ids, live, Look::Runs(finished)).await
    }

    /// Looks in the database for instances of `partitions`' workflows with a node whose run
    /// has finished, whoever recorded it (another admin, the lost-run sweep), and moves them
    /// on, a batch at a time; returns after one batch (call again while it does something).
    pub async fn advance_found(&self, partitions: &[i64], live: &mut LiveInstances) -> StoreResult<Advanced> {
        if partitions.is_empty() {
            return Ok(Advanced::default());
        }
        // With every partition held, which workflow an instance belongs to does not matter.
        let all = partitions.len() as i64 == PARTITIONS;
        let (join, held) = if all {
            ("", String::new())
        } else {
            (
                " JOIN workflow_instance i ON i.id = n.instance_id",
                format!(
                    " AND (i.workflow_id % {PARTITIONS}) IN ({})",
                    super::placeholders(partitions.len())
                ),
            )
        };
        let q = self.sql_text(format!(
            "SELECT DISTINCT n.instance_id AS instance_id FROM workflow_node_run n \
                 JOIN run r ON r.id = n.run_id{join} \
                 WHERE n.state = 'running' AND (r.handle_code <> 0 OR r.trigger_code NOT IN (0, 200)){held} \
                 LIMIT {ADVANCE_BATCH}"
        ));
        let mut query = sqlx::query(&q);
        if !all {
            for p in partitions {
                query = query.bind(*p);
            }
        }
        let mut ids: Vec<i64> = query
            .fetch_all(&self.read)
            .await?
            .iter()
            .map(|r| rows::int(r, "instance_id"))
            .collect::<Result<_, _>>()?;
        ids.sort_unstable();
        self.advance(&ids, live, Look::All).await
    }

    /// Moves instances `ids` (one batch: at most [`ADVANCE_BATCH`]) on in one transaction,
    /// then starts queued instances of the workflows whose instances finished.
    async fn advance(&self, ids: &[i64], live: &mut LiveInstances, look: Look<'_>) -> StoreResult<Advanced> {
        let mut out = Advanced::default();
        if ids.is_empty() {
            return Ok(out);
        }
        let now = now_ms();
        let starts: Vec<(i64, i64)> = ids.iter().map(|id| (*id, now)).collect();
        let mut tx = self.write.begin().await?;
        let mut step = self.step_instances(&mut tx, &starts, now, live, look).await?;
        tx.commit().await?;
        // Each workflow once (`step_instances` lists it once).
        let finished_workflows = std::mem::take(&mut step.finished_workflows);
        out.absorb(step, live);
        if finished_workflows.is_empty() {
            return Ok(out);
        }
        // Only workflows with a queued instance have one to start (most have no limit).
        let mut conn = self.read.acquire().await?;
        let waiting: Vec<i64> = self
            .fetch_in(
                &mut conn,
                "SELECT DISTINCT workflow_id FROM workflow_instance WHERE state = 'queued' AND workflow_id IN ({in})",
                &finished_workflows,
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
    pub(super) async fn start_queued(&self, id: i64) -> StoreResult<NodeTickets> {
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
        let q = self.sql("UPDATE workflow_instance SET state = 'running', revision = revision + 1 WHERE id = ?");
        sqlx::query(&q).bind(instance).execute(&mut *tx).await?;
        let step = self.progress(&mut tx, instance, now, now).await?;
        tx.commit().await?;
        Ok(step.tickets)
    }

    /// Moves instance `id` on, in `tx`, from the database alone (an operator's change, a
    /// trigger): [`Store::step_instances`] for one instance.
    pub(super) async fn progress(
        &self,
        tx: &mut Transaction<'static, Any>,
        id: i64,
        start_at: i64,
        now: i64,
    ) -> StoreResult<Progress> {
        self.step_instances(tx, &[(id, start_at)], now, &mut LiveInstances::default(), Look::All)
            .await
    }

    /// Moves instances on, in `tx`, holding their rows: each `(id, start_at)` one instance and
    /// when its new runs are due. The step reads the instances' facts (graphs and node rows,
    /// how their running nodes' runs ended, followed through retries, the jobs of the nodes not
    /// started yet), `workflow::step::plan_step` decides, and its plan is written together: the
    /// node rows and runs of all instances in a few multi-row statements.
    async fn step_instances(
        &self,
        tx: &mut Transaction<'static, Any>,
        starts: &[(i64, i64)],
        now: i64,
        live: &mut LiveInstances,
        look: Look<'_>,
    ) -> StoreResult<Progress> {
        let (mut instances, read) = self.lock_instances(tx, starts, live).await?;
        if instances.is_empty() {
            return Ok(Progress::default());
        }
        let watched = watched_nodes(&instances, &read, look);
        let runs = self.follow_runs(tx, &instances, &watched, look).await?;
        let jobs: HashMap<i64, Arc<Job>> = self
            .jobs_tx(tx, &step::unstarted_jobs(&instances))
            .await?
            .into_iter()
            .map(|(id, j)| (id, Arc::new(j)))
            .collect();
        let start_at: FxHashMap<i64, i64> = starts.iter().copied().collect();
        let due: Vec<i64> = instances
            .iter()
            .map(|s| start_at.get(&s.id).copied().unwrap_or(now))
            .collect();
        let plan = step::plan_step(&mut instances, &watched, &runs, &jobs, &due, now);
        self.write_plan(tx, instances, plan, &jobs, now).await
    }

    /// Locks the rows of instances `starts` (in id order, one order for every admin) and takes
    /// each running one from `live` when kept at its row's revision, or reads it. Returns the
    /// running instances and, for each, whether it was read in this step.
    async fn lock_instances(
        &self,
        tx: &mut Transaction<'static, Any>,
        starts: &[(i64, i64)],
        live: &mut LiveInstances,
    ) -> StoreResult<(Vec<LiveInstance>, Vec<bool>)> {
        let mut ids: Vec<i64> = starts.iter().map(|(id, _)| *id).collect();
        ids.sort_unstable();
        // Integers only, so that SQLite hands them over packed (`int_rows`).
        let q = format!(
            "SELECT id, workflow_id, CASE WHEN state = 'running' THEN 1 ELSE 0 END AS running, revision, \
             scheduled_at FROM workflow_instance WHERE id IN ({{in}}) ORDER BY id{}",
            self.backend.for_update()
        );
        let (mut instances, mut read, mut unknown) = (Vec::with_capacity(ids.len()), Vec::new(), Vec::new());
        let cols = ["id", "workflow_id", "running", "revision", "scheduled_at"];
        for [id, workflow_id, running, revision, scheduled_at] in self.int_rows_in(tx, &q, cols, &ids).await? {
            let kept = live.take(id);
            if running == 0 {
                continue;
            }
            match kept {
                Some(k) if k.revision == revision => {
                    instances.push(k);
                    read.push(false);
                }
                _ => {
                    unknown.push(id);
                    instances.push(LiveInstance {
                        id,
                        workflow_id,
                        revision,
                        scheduled_at,
                        definition: Arc::default(),
                        nodes: Vec::new(),
                    });
                    read.push(true);
                }
            }
        }
        if !unknown.is_empty() {
            self.read_instances(tx, &unknown, &mut instances, live).await?;
        }
        Ok((instances, read))
    }

    /// How the runs of the `watched` nodes ended, followed through their retries: a failed run
    /// that a retry follows hands its node to the retry, whose end is read in turn. Runs the
    /// results writer reported with their results are not read (a written result is final).
    async fn follow_runs(
        &self,
        tx: &mut Transaction<'static, Any>,
        instances: &[LiveInstance],
        watched: &[step::Watched],
        look: Look<'_>,
    ) -> StoreResult<RunFacts> {
        let mut facts = RunFacts::default();
        let mut asking: Vec<i64> = watched.iter().map(|(i, k)| instances[*i].nodes[*k].1.run_id).collect();
        let mut reported: FxHashMap<i64, RunEnd> = FxHashMap::default();
        if let Look::Runs(runs) = look {
            reported.extend(
                asking
                    .iter()
                    .filter_map(|id| runs.get(id)?.as_ref())
                    .map(|w| (w.run_id, RunEnd::written(w))),
            );
        }
        while !asking.is_empty() {
            let run_ids: Vec<i64> = asking.iter().filter(|id| !reported.contains_key(id)).copied().collect();
            let mut found: FxHashMap<i64, RunEnd> = self
                .run_ends(tx, &run_ids)
                .await?
                .into_iter()
                .map(|r| (r.id, r))
                .collect();
            // Only the first round asks for reported runs; the retries asked for later are not.
            found.extend(reported.drain());
            let failed: Vec<i64> = found.values().filter(|r| r.failed()).map(|r| r.id).collect();
            let q = "SELECT id, retry_of FROM run WHERE retry_of IN ({in})";
            for [id, of] in self.int_rows_in(tx, q, ["id", "retry_of"], &failed).await? {
                let e = facts.retries.entry(of).or_insert(id);
                *e = (*e).min(id);
            }
            asking = found
                .values()
                .filter(|r| !r.in_flight())
                .filter_map(|r| facts.retries.get(&r.id).copied())
                .collect();
            facts.ends.extend(found);
        }
        Ok(facts)
    }

    /// Writes what a step decided for `instances`: the node rows it changed, the runs and node
    /// rows it made, the instances that ended. Returns the runs, the ends, and the instances
    /// still running as they are now.
    async fn write_plan(
        &self,
        tx: &mut Transaction<'static, Any>,
        mut instances: Vec<LiveInstance>,
        plan: StepPlan,
        jobs: &HashMap<i64, Arc<Job>>,
        now: i64,
    ) -> StoreResult<Progress> {
        let mut out = Progress {
            lateness_ms: plan.lateness_ms,
            ..Progress::default()
        };
        self.update_nodes(tx, &instances, &plan.changed).await?;
        let run_of = self
            .insert_node_runs(tx, &plan.new_runs, &plan.run_owners, jobs, &mut out)
            .await?;
        self.insert_nodes(tx, &mut instances, &plan.new_nodes, &run_of, now)
            .await?;
        self.end_instances(tx, &instances, &plan.ended, now, &mut out).await?;
        // The revision of an instance that goes on is left as it is: a step only moves nodes
        // forward, which the unique `(instance_id, node)` keeps from being done twice, and an
        // admin that may have missed another's steps dropped what it kept when it lost the
        // partition (`LiveInstances::keep_partitions`). Operators' changes raise it.
        let ended_at: HashSet<usize> = plan.ended.iter().map(|(i, _)| *i).collect();
        for (i, s) in instances.into_iter().enumerate() {
            if !ended_at.contains(&i) {
                out.live.push(s);
            }
        }
        Ok(out)
    }

    /// Writes the node rows `changed` (instance and node indexes) of `instances` again.
    async fn update_nodes(
        &self,
        tx: &mut Transaction<'static, Any>,
        instances: &[LiveInstance],
        changed: &[(usize, usize)],
    ) -> StoreResult<()> {
        let updates: Vec<(i64, &'static str, i64, &str, i64)> = changed
            .iter()
            .map(|(i, k)| {
                let (row_id, n) = &instances[*i].nodes[*k];
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
            let mut query = sized_query(&q, chunk.len() * 5);
            for (id, state, run_id, result, finished_at) in self.backend.padded(chunk) {
                query = query
                    .bind(*id)
                    .bind(*state)
                    .bind(*run_id)
                    .bind(result)
                    .bind(*finished_at);
            }
            query.execute(&mut **tx).await?;
        }
        Ok(())
    }

    /// Creates a step's `runs` (each for the new node at the same place in `owners`) and adds
    /// them to `out`'s tickets; returns each one's id by its node's index among the new nodes.
    async fn insert_node_runs(
        &self,
        tx: &mut Transaction<'static, Any>,
        runs: &[NewRun],
        owners: &[usize],
        jobs: &HashMap<i64, Arc<Job>>,
        out: &mut Progress,
    ) -> StoreResult<FxHashMap<usize, i64>> {
        let tickets = self.insert_runs_tx(tx, runs).await?;
        if tickets.len() != runs.len() {
            return Err(StoreError::Conflict(format!(
                "{} of {} workflow node runs were created",
                tickets.len(),
                runs.len()
            )));
        }
        let mut run_of: FxHashMap<usize, i64> = FxHashMap::with_capacity_and_hasher(tickets.len(), Default::default());
        out.tickets.reserve(tickets.len());
        for ((owner, run), ticket) in owners.iter().zip(runs).zip(tickets) {
            // RETURNING gives the rows in the order of VALUES; checked, not assumed.
            if ticket.job_id != run.job_id {
                return Err(StoreError::Conflict("workflow node runs came back out of order".into()));
            }
            run_of.insert(*owner, ticket.id);
            let Some(job) = jobs.get(&run.job_id) else {
                return Err(StoreError::Conflict(format!(
                    "job {} of a node run is gone",
                    run.job_id
                )));
            };
            out.tickets.push((job.clone(), ticket));
        }
        Ok(run_of)
    }

    /// Inserts a step's new node rows (`run_of`: the run of each, by its index), several per
    /// statement, and adds them to their instances.
    async fn insert_nodes(
        &self,
        tx: &mut Transaction<'static, Any>,
        instances: &mut [LiveInstance],
        new_nodes: &[NewNode],
        run_of: &FxHashMap<usize, i64>,
        now: i64,
    ) -> StoreResult<()> {
        let at: FxHashMap<i64, usize> = instances.iter().enumerate().map(|(k, s)| (s.id, k)).collect();
        let mut cursor = IdCursor::new("workflow_node_run");
        for (offset, chunk) in self.backend.insert_slices(new_nodes, NODE_ROWS) {
            let row = "(?, ?, ?, ?, ?, ?, ?)";
            let q =
                format!(
                "INSERT INTO workflow_node_run (instance_id, node, state, run_id, result, started_at, finished_at) \
                 VALUES {}{}",
                vec![row; chunk.len()].join(", "),
                if self.backend == Backend::Sqlite { KNOWN_IDS } else { " RETURNING id, instance_id, node" }
            );
            let q = self.sql(&q).into_owned();
            let mut query = sized_query(&q, chunk.len() * 7);
            let mut made: Vec<(i64, NodeRun)> = Vec::with_capacity(chunk.len());
            for (k, n) in chunk.iter().enumerate() {
                let run_id = run_of.get(&(offset + k)).copied().unwrap_or(0);
                let instance = instances[n.instance].id;
                let finished_at = if n.state == NodeState::Running { 0 } else { now };
                query = query
                    .bind(instance)
                    .bind(n.key.as_str())
                    .bind(n.state.as_str())
                    .bind(run_id)
                    .bind(n.result.as_str())
                    .bind(now)
                    .bind(finished_at);
                let node = NodeRun {
                    node: n.key.clone(),
                    state: n.state,
                    run_id,
                    result: n.result.clone(),
                    started_at: now,
                    finished_at,
                };
                made.push((instance, node));
            }
            let keys: Vec<(i64, String)> = made.iter().map(|(i, n)| (*i, n.node.clone())).collect();
            let ids = self.insert_node_rows(tx, &mut cursor, query, &keys).await?;
            for (id, (instance, node)) in ids.into_iter().zip(made) {
                instances[at[&instance]].nodes.push((id, node));
            }
        }
        Ok(())
    }

    /// Marks the instances that `ended` (indexes into `instances`) with their ends, and adds
    /// the ends and their workflows (each once) to `out`.
    async fn end_instances(
        &self,
        tx: &mut Transaction<'static, Any>,
        instances: &[LiveInstance],
        ended: &[(usize, InstanceState)],
        now: i64,
        out: &mut Progress,
    ) -> StoreResult<()> {
        let mut by_end: HashMap<&'static str, Vec<i64>> = HashMap::new();
        for (i, end) in ended {
            by_end.entry(end.as_str()).or_default().push(instances[*i].id);
            out.finished.push(*end);
            let w = instances[*i].workflow_id;
            if !out.finished_workflows.contains(&w) {
                out.finished_workflows.push(w);
            }
        }
        for (end, ids) in &by_end {
            self.execute_in(
                tx,
                "UPDATE workflow_instance SET state = ?, finished_at = ?, revision = revision + 1 WHERE id IN ({in})",
                ids,
                &[super::bulk::Arg::Text(end), super::bulk::Arg::Int(now)],
            )
            .await?;
        }
        Ok(())
    }

    /// The prepared graphs of workflow versions `versions`: kept in `live`, or read, prepared
    /// and kept there. A version never changes, so what is kept stays true.
    async fn graphs(
        &self,
        conn: &mut AnyConnection,
        versions: &[i64],
        live: &mut LiveInstances,
    ) -> StoreResult<HashMap<i64, Arc<dag::Graph>>> {
        let mut out = HashMap::new();
        let mut missing = Vec::new();
        for v in versions {
            match live.graph(*v) {
                Some(g) => {
                    out.insert(*v, g);
                }
                None => missing.push(*v),
            }
        }
        missing.sort_unstable();
        missing.dedup();
        let q = "SELECT id, definition FROM workflow_version WHERE id IN ({in})";
        for r in self.fetch_in(conn, q, &missing, &[]).await? {
            let id = rows::int(&r, "id")?;
            let graph = live
                .add_graph(id, &rows::text(&r, "definition")?)
                .map_err(|e| sqlx::Error::ColumnDecode {
                    index: "definition".into(),
                    source: e.to_string().into(),
                })?;
            out.insert(id, graph);
        }
        if let Some(v) = versions.iter().find(|v| !out.contains_key(v)) {
            return Err(StoreError::Conflict(format!("workflow version {v} is missing")));
        }
        Ok(out)
    }

    /// Reads the graphs and node rows of instances `ids` into their places in `instances`.
    async fn read_instances(
        &self,
        tx: &mut Transaction<'static, Any>,
        ids: &[i64],
        instances: &mut [LiveInstance],
        live: &mut LiveInstances,
    ) -> StoreResult<()> {
        let at: FxHashMap<i64, usize> = instances.iter().enumerate().map(|(k, s)| (s.id, k)).collect();
        let q = "SELECT id, version_id FROM workflow_instance WHERE id IN ({in})";
        let versions = self.int_rows_in(tx, q, ["id", "version_id"], ids).await?;
        let graphs = self
            .graphs(tx, &versions.iter().map(|[_, v]| *v).collect::<Vec<_>>(), live)
            .await?;
        for [id, version] in versions {
            if let Some(k) = at.get(&id) {
                instances[*k].definition = graphs[&version].clone();
            }
        }
        let q = "SELECT id, instance_id, node, state, run_id, result, started_at, finished_at FROM workflow_node_run \
                 WHERE instance_id IN ({in}) ORDER BY id";
        for r in self.fetch_in(tx, q, ids, &[]).await? {
            if let Some(k) = at.get(&rows::int(&r, "instance_id")?) {
                instances[*k].nodes.push((rows::int(&r, "id")?, node_row(&r)?));
            }
        }
        Ok(())
    }
}

/// The running nodes whose runs a step looks at: every one, or (`Look::Runs`) those whose runs
/// were reported finished and every one of an instance read in this step (`read`).
fn watched_nodes(instances: &[LiveInstance], read: &[bool], look: Look<'_>) -> Vec<step::Watched> {
    let mut out = Vec::new();
    for (i, s) in instances.iter().enumerate() {
        for (k, (_, n)) in s.nodes.iter().enumerate() {
            let looked_at = match look {
                Look::All => true,
                Look::Runs(runs) => read[i] || runs.contains_key(&n.run_id),
            };
            if n.state == NodeState::Running && n.run_id > 0 && looked_at {
                out.push((i, k));
            }
        }
    }
    out
}
