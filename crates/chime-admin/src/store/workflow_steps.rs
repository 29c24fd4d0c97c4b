//! The workflow engine's steps: firing workflows and moving their instances on, each in one
//! transaction that holds the instances' rows.
//!
//! A step writes the finished nodes' states and the next nodes' rows and runs together, for
//! up to [`ADVANCE_BATCH`] instances, in a few multi-row statements, as a claim writes its
//! fires. `(instance_id, node)` is unique, so a node cannot start twice. What to do next is
//! decided by `workflow::dag::Graph::step`; this reads the states and writes its answer. The
//! loop's [`LiveInstances`] spare a step reading again what the loop's last step wrote: an
//! instance is taken from there while its row's `revision` is the one kept, read from the
//! database when not. Operators' changes raise the revision (they may move a node back, from
//! failed to running); the engine's steps do not (they only move nodes forward, and an admin
//! that could have missed another admin's steps has let go of what it kept).
//!
//! The rows a step writes and reads besides its decisions (new instances, node rows, how runs
//! ended) are `store/workflow_instances.rs`'s.

use super::bulk::sized_query;
use super::rows;
use super::runs::UPDATE_ROWS;
use super::sqlite_ids::{IdCursor, KNOWN_IDS};
use super::{Backend, Store, StoreError, StoreResult, PARTITIONS};
use crate::model::{now_ms, Job, SKIPPED_CODE};
use crate::run::{capped, FirePlan, NewRun, RunTicket};
use crate::workflow::dag::{self, InstanceState, NodeState};
use crate::workflow::live::{LiveInstance, LiveInstances};
use crate::workflow::spec::{NodeRun, Workflow};
use crate::workflow::Reported;
use chime_protocol::TriggerType;
use rustc_hash::{FxHashMap, FxHashSet};
use sqlx::any::Any;
use sqlx::AnyConnection;
use sqlx::Transaction;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::workflow_instances::{NewInstance, RunEnd};
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

/// What [`Store::progress_many`] did.
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
        mut plan: impl FnMut(&Workflow) -> FirePlan,
    ) -> StoreResult<Advanced> {
        let mut out = Advanced::default();
        if partitions.is_empty() {
            return Ok(out);
        }
        let now = now_ms();
        let mut tx = self.write.begin().await?;
        // Only the fire times, as the claim reads jobs: the rest of each workflow is kept in
        // `live` while its `updated_at` holds, and read again when it moved.
        let q = format!(
            "SELECT id, updated_at, anchor_at, next_fire_at, last_fire_at FROM workflow \
             WHERE running = 1 AND next_fire_at > 0 AND next_fire_at <= ? \
             AND partition_no IN ({}) ORDER BY next_fire_at LIMIT {FIRE_BATCH}{}",
            super::placeholders(partitions.len()),
            self.backend.for_update()
        );
        let q = self.sql(&q).into_owned();
        let binds: Vec<i64> = std::iter::once(horizon).chain(partitions.iter().copied()).collect();
        let cols = ["id", "updated_at", "anchor_at", "next_fire_at", "last_fire_at"];
        let times = self.int_rows(&mut tx, &q, cols, &binds).await?;
        out.more = times.len() as i64 == FIRE_BATCH;
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
        for row in self.fetch_in(&mut tx, &q, &changed, &[]).await? {
            let w = workflow_row_with(&row, dag::Definition::default())?;
            live.keep_workflow(w.clone());
            read.insert(w.id, w);
        }
        let mut due_rows = Vec::with_capacity(times.len());
        for ([id, _, anchor_at, next_fire_at, last_fire_at], kept) in times.into_iter().zip(kept) {
            let Some(w) = kept.or_else(|| read.remove(&id)) else {
                return Err(StoreError::Conflict(format!(
                    "workflow {id} was deleted while it was fired"
                )));
            };
            due_rows.push(Workflow {
                running: true,
                anchor_at,
                next_fire_at,
                last_fire_at,
                ..w
            });
        }
        // Each graph read and parsed once per version (`live`), not once per fire.
        let versions: Vec<i64> = due_rows.iter().map(|w| w.version).collect();
        let graphs = self.graphs(&mut tx, &versions, live).await?;
        let due: Vec<(Workflow, Arc<dag::Graph>)> = due_rows
            .into_iter()
            .map(|w| {
                let graph = graphs[&w.version].clone();
                (w, graph)
            })
            .collect();
        if due.is_empty() {
            tx.rollback().await?;
            return Ok(out);
        }
        let mut fresh = LiveInstances::default();
        let mut starts = Vec::new();
        let mut next = Vec::with_capacity(due.len());
        // Fires of workflows without a concurrency limit are made together, several per
        // statement; a limit is counted against the instances running, one fire at a time.
        let mut unlimited: Vec<NewInstance> = Vec::new();
        for (k, (w, _)) in due.iter().enumerate() {
            let fires = plan(w);
            for f in &fires.runs {
                if f.trigger_code == SKIPPED_CODE {
                    continue;
                }
                if let (0, Some(fire_key)) = (w.max_instances, f.fire_key) {
                    unlimited.push(NewInstance {
                        due: k,
                        fire_key,
                        scheduled_at: f.scheduled_at,
                        trigger_type: f.trigger_type,
                    });
                    continue;
                }
                let made = self
                    .create_instance(&mut tx, w, f.fire_key, f.scheduled_at, f.trigger_type, now)
                    .await?;
                if made.started {
                    starts.push((made.id, f.scheduled_at.max(now), k));
                }
            }
            next.push((w.id, fires.next_fire_at, fires.last_fire_at));
        }
        for (id, made) in self.create_instances(&mut tx, &due, &unlimited, now).await? {
            starts.push((id, made.scheduled_at.max(now), made.due));
        }
        for (id, _, k) in &starts {
            let (w, graph) = &due[*k];
            // New, so nothing to read of it: its graph is the workflow's.
            fresh.put(LiveInstance {
                id: *id,
                workflow_id: w.id,
                revision: 0,
                definition: graph.clone(),
                nodes: Vec::new(),
            });
        }
        let starts: Vec<(i64, i64)> = starts.into_iter().map(|(id, at, _)| (id, at)).collect();
        for chunk in next.chunks(UPDATE_ROWS) {
            let q = self
                .backend
                .update_by_id("workflow", &["next_fire_at", "last_fire_at"], chunk.len(), "");
            let mut query = sqlx::query(&q);
            for (id, next_fire_at, last_fire_at) in self.backend.padded(chunk) {
                query = query.bind(*id).bind(*next_fire_at).bind(*last_fire_at);
            }
            query.execute(&mut *tx).await?;
        }
        let mut progress = Progress::default();
        for chunk in starts.chunks(ADVANCE_BATCH) {
            let p = self.progress_many(&mut tx, chunk, now, &mut fresh, Look::All).await?;
            progress.tickets.extend(p.tickets);
            progress.finished.extend(p.finished);
            progress.live.extend(p.live);
        }
        tx.commit().await?;
        out.absorb(progress, live);
        Ok(out)
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
        let q = self
            .sql(&format!(
                "SELECT DISTINCT n.instance_id AS instance_id FROM workflow_node_run n \
                 JOIN run r ON r.id = n.run_id{join} \
                 WHERE n.state = 'running' AND (r.handle_code <> 0 OR r.trigger_code NOT IN (0, 200)){held} \
                 LIMIT {ADVANCE_BATCH}"
            ))
            .into_owned();
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
        let mut step = self.progress_many(&mut tx, &starts, now, live, look).await?;
        tx.commit().await?;
        // Each workflow once (`progress_many` lists it once).
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
    /// trigger): [`Store::progress_many`] for one instance.
    pub(super) async fn progress(
        &self,
        tx: &mut Transaction<'static, Any>,
        id: i64,
        start_at: i64,
        now: i64,
    ) -> StoreResult<Progress> {
        self.progress_many(tx, &[(id, start_at)], now, &mut LiveInstances::default(), Look::All)
            .await
    }

    /// Moves instances on, in `tx`, holding their rows: each `(id, start_at)` one instance and
    /// when its new runs are due. Finished runs become node states (a failed run that a retry
    /// follows hands its node to the retry), then `Graph::step` decides for each instance, until
    /// nothing more follows, and its answers are written together: the node rows and runs of
    /// all instances in a few multi-row statements.
    async fn progress_many(
        &self,
        tx: &mut Transaction<'static, Any>,
        starts: &[(i64, i64)],
        now: i64,
        live: &mut LiveInstances,
        look: Look<'_>,
    ) -> StoreResult<Progress> {
        let mut out = Progress::default();
        let mut ids: Vec<i64> = starts.iter().map(|(id, _)| *id).collect();
        // One order for every admin's locks.
        ids.sort_unstable();
        let start_at: FxHashMap<i64, i64> = starts.iter().copied().collect();
        // Integers only, so that SQLite hands them over packed (`int_rows`).
        let q = format!(
            "SELECT id, workflow_id, CASE WHEN state = 'running' THEN 1 ELSE 0 END AS running, revision \
             FROM workflow_instance WHERE id IN ({{in}}) ORDER BY id{}",
            self.backend.for_update()
        );
        let mut instances: Vec<Stepping> = Vec::with_capacity(ids.len());
        let mut unknown: Vec<i64> = Vec::new();
        let cols = ["id", "workflow_id", "running", "revision"];
        for [id, workflow_id, running, revision] in self.int_rows_in(tx, &q, cols, &ids).await? {
            let kept = live.take(id);
            if running == 0 {
                continue;
            }
            match kept {
                Some(k) if k.revision == revision => instances.push(Stepping { live: k, read: false }),
                _ => {
                    unknown.push(id);
                    instances.push(Stepping {
                        live: LiveInstance {
                            id,
                            workflow_id,
                            revision,
                            definition: Arc::default(),
                            nodes: Vec::new(),
                        },
                        read: true,
                    });
                }
            }
        }
        if instances.is_empty() {
            return Ok(out);
        }
        let at: FxHashMap<i64, usize> = instances.iter().enumerate().map(|(k, s)| (s.live.id, k)).collect();
        if !unknown.is_empty() {
            self.read_instances(tx, &unknown, &at, &mut instances, live).await?;
        }

        // The runs of running nodes, followed to their retries: (instance index, node index).
        let mut asking: FxHashMap<i64, (usize, usize)> = FxHashMap::default();
        for (i, s) in instances.iter().enumerate() {
            for (k, (_, n)) in s.live.nodes.iter().enumerate() {
                let looked_at = match look {
                    Look::All => true,
                    Look::Runs(runs) => s.read || runs.contains_key(&n.run_id),
                };
                if n.state == NodeState::Running && n.run_id > 0 && looked_at {
                    asking.insert(n.run_id, (i, k));
                }
            }
        }
        // The node rows to write again.
        let mut changed: FxHashSet<(usize, usize)> = FxHashSet::default();
        // Runs reported with their results are not read (a written result is final).
        let mut reported: FxHashMap<i64, RunEnd> = FxHashMap::default();
        if let Look::Runs(runs) = look {
            reported.extend(
                asking
                    .keys()
                    .filter_map(|id| runs.get(id)?.as_ref())
                    .map(|w| (w.run_id, RunEnd::written(w))),
            );
        }
        while !asking.is_empty() {
            let run_ids: Vec<i64> = asking.keys().filter(|id| !reported.contains_key(id)).copied().collect();
            let mut found: FxHashMap<i64, RunEnd> = self
                .run_ends(tx, &run_ids)
                .await?
                .into_iter()
                .map(|r| (r.id, r))
                .collect();
            // Only the first round asks for reported runs; the retries asked for later are not.
            found.extend(reported.drain());
            let failed: Vec<i64> = found.values().filter(|r| r.failed()).map(|r| r.id).collect();
            let mut retries: FxHashMap<i64, i64> = FxHashMap::default();
            let q = "SELECT id, retry_of FROM run WHERE retry_of IN ({in})";
            for [id, of] in self.int_rows_in(tx, q, ["id", "retry_of"], &failed).await? {
                let e = retries.entry(of).or_insert(id);
                *e = (*e).min(id);
            }
            let mut next = FxHashMap::default();
            for (run_id, (i, k)) in asking {
                let n = &mut instances[i].live.nodes[k].1;
                let Some(r) = found.get(&run_id) else {
                    // The run was deleted (with its job): the node cannot finish by itself.
                    n.state = NodeState::Failed;
                    n.result = format!("run {run_id} no longer exists");
                    n.run_id = run_id;
                    n.finished_at = now;
                    changed.insert((i, k));
                    continue;
                };
                if r.in_flight() {
                    if run_id != n.run_id {
                        n.run_id = run_id;
                        changed.insert((i, k));
                    }
                    continue;
                }
                if let Some(retry) = retries.get(&run_id) {
                    next.insert(*retry, (i, k));
                    continue;
                }
                let done_at = r.handled_at.max(r.triggered_at);
                if done_at > 0 {
                    out.lateness_ms.push((now - done_at).max(0));
                }
                n.state = if r.handle_code == 200 {
                    NodeState::Succeeded
                } else {
                    NodeState::Failed
                };
                n.result = r.handle_msg.clone();
                n.run_id = run_id;
                n.finished_at = now;
                changed.insert((i, k));
            }
            asking = next;
        }
        let updates: Vec<(i64, &'static str, i64, &str, i64)> = changed
            .iter()
            .map(|(i, k)| {
                let (row_id, n) = &instances[*i].live.nodes[*k];
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

        // Then as far as each graph goes, all in memory: a node whose job is gone fails at
        // once, which may decide more nodes. Only the jobs of nodes not started yet are read.
        let mut states: Vec<Vec<Option<NodeState>>> = Vec::with_capacity(instances.len());
        let mut job_ids: FxHashSet<i64> = FxHashSet::default();
        for s in &instances {
            let graph = &s.live.definition;
            let mut of = vec![None; graph.len()];
            for (_, n) in &s.live.nodes {
                if let Some(k) = graph.index(&n.node) {
                    of[k] = Some(n.state);
                }
            }
            job_ids.extend(
                graph
                    .def
                    .nodes
                    .iter()
                    .zip(&of)
                    .filter(|(_, st)| st.is_none())
                    .map(|(n, _)| n.job_id),
            );
            states.push(of);
        }
        let job_ids: Vec<i64> = job_ids.into_iter().collect();
        let jobs: HashMap<i64, Arc<Job>> = self
            .jobs_tx(tx, &job_ids)
            .await?
            .into_iter()
            .map(|(id, j)| (id, Arc::new(j)))
            .collect();
        let no_results = HashMap::new();
        // At most every node without a row gets one now. Sized once: grown push by push, these
        // (thousands of runs in a wave) were copied a dozen times over, each time into memory
        // not touched before, which cost more than filling them.
        let room: usize = instances
            .iter()
            .map(|s| s.live.definition.len().saturating_sub(s.live.nodes.len()))
            .sum();
        // New node rows as (instance index, key, state, result); runs with their row's index.
        let mut new_nodes: Vec<(usize, String, NodeState, String)> = Vec::with_capacity(room);
        let mut new_runs: Vec<NewRun> = Vec::with_capacity(room);
        let mut run_owners: Vec<usize> = Vec::with_capacity(room);
        let mut ended: Vec<(usize, InstanceState)> = Vec::new();
        for (i, (s, states)) in instances.iter().zip(&mut states).enumerate() {
            let graph = s.live.definition.clone();
            // Upstream results, gathered only for a node that has parents or names a node.
            let mut results: Option<dag::Results<'_>> = None;
            let due = start_at.get(&s.live.id).copied().unwrap_or(now);
            loop {
                let step = graph.step(states);
                let mut again = !step.not_run.is_empty() && step.ready.is_empty() && step.finished.is_none();
                for k in step.not_run {
                    states[k] = Some(NodeState::NotRun);
                    new_nodes.push((i, graph.def.nodes[k].key.clone(), NodeState::NotRun, String::new()));
                }
                for k in step.ready {
                    let node = &graph.def.nodes[k];
                    let made = match jobs.get(&node.job_id) {
                        Some(job) => {
                            let named = node.param.as_deref().unwrap_or(&job.param).contains("{{");
                            let results = if named || graph.sources(k).next().is_some() {
                                results.get_or_insert_with(|| succeeded_results(&s.live.nodes))
                            } else {
                                &no_results
                            };
                            node_run(job, &graph, k, results, due)
                        }
                        None => Err(format!("job {} no longer exists", node.job_id)),
                    };
                    match made {
                        Ok(run) => {
                            run_owners.push(new_nodes.len());
                            new_runs.push(run);
                            states[k] = Some(NodeState::Running);
                            new_nodes.push((i, node.key.clone(), NodeState::Running, String::new()));
                        }
                        Err(why) => {
                            again = true;
                            states[k] = Some(NodeState::Failed);
                            new_nodes.push((i, node.key.clone(), NodeState::Failed, why));
                        }
                    }
                }
                if let Some(end) = step.finished {
                    ended.push((i, end));
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
        let mut run_of: FxHashMap<usize, i64> = FxHashMap::with_capacity_and_hasher(tickets.len(), Default::default());
        out.tickets.reserve(tickets.len());
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
        let mut cursor = IdCursor::new("workflow_node_run");
        for (offset, chunk) in self.backend.insert_slices(&new_nodes, NODE_ROWS) {
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
            for (k, (i, key, state, result)) in chunk.iter().enumerate() {
                let run_id = run_of.get(&(offset + k)).copied().unwrap_or(0);
                let instance = instances[*i].live.id;
                let finished_at = if *state == NodeState::Running { 0 } else { now };
                query = query
                    .bind(instance)
                    .bind(key.as_str())
                    .bind(state.as_str())
                    .bind(run_id)
                    .bind(result.as_str())
                    .bind(now)
                    .bind(finished_at);
                made.push((
                    instance,
                    NodeRun {
                        node: key.clone(),
                        state: *state,
                        run_id,
                        result: result.clone(),
                        started_at: now,
                        finished_at,
                    },
                ));
            }
            let keys: Vec<(i64, String)> = made.iter().map(|(i, n)| (*i, n.node.clone())).collect();
            for (id, (instance, node)) in self
                .insert_node_rows(tx, &mut cursor, query, &keys)
                .await?
                .into_iter()
                .zip(made)
            {
                instances[at[&instance]].live.nodes.push((id, node));
            }
        }

        // The instances that ended, with their ends.
        let mut by_end: HashMap<&'static str, Vec<i64>> = HashMap::new();
        for (i, end) in &ended {
            by_end.entry(end.as_str()).or_default().push(instances[*i].live.id);
            out.finished.push(*end);
            let w = instances[*i].live.workflow_id;
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
        // The revision of an instance that goes on is left as it is: a step only moves nodes
        // forward, which the unique `(instance_id, node)` keeps from being done twice, and an
        // admin that may have missed another's steps dropped what it kept when it lost the
        // partition (`LiveInstances::keep_partitions`). Operators' changes raise it.
        let ended_at: HashSet<usize> = ended.iter().map(|(i, _)| *i).collect();
        for (i, s) in instances.into_iter().enumerate() {
            if !ended_at.contains(&i) {
                out.live.push(s.live);
            }
        }
        Ok(out)
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

    /// Reads the graphs and node rows of instances `ids` into their places in `instances` (`at`:
    /// each instance's index there).
    async fn read_instances(
        &self,
        tx: &mut Transaction<'static, Any>,
        ids: &[i64],
        at: &FxHashMap<i64, usize>,
        instances: &mut [Stepping],
        live: &mut LiveInstances,
    ) -> StoreResult<()> {
        let q = "SELECT id, version_id FROM workflow_instance WHERE id IN ({in})";
        let versions = self.int_rows_in(tx, q, ["id", "version_id"], ids).await?;
        let graphs = self
            .graphs(tx, &versions.iter().map(|[_, v]| *v).collect::<Vec<_>>(), live)
            .await?;
        for [id, version] in versions {
            if let Some(k) = at.get(&id) {
                instances[*k].live.definition = graphs[&version].clone();
            }
        }
        let q = "SELECT id, instance_id, node, state, run_id, result, started_at, finished_at FROM workflow_node_run \
                 WHERE instance_id IN ({in}) ORDER BY id";
        for r in self.fetch_in(tx, q, ids, &[]).await? {
            if let Some(k) = at.get(&rows::int(&r, "instance_id")?) {
                instances[*k].live.nodes.push((rows::int(&r, "id")?, node_row(&r)?));
            }
        }
        Ok(())
    }
}

/// An instance being moved on.
#[derive(Debug)]
struct Stepping {
    live: LiveInstance,
    /// Read from the database in this step (nothing kept of it, or kept at another revision).
    read: bool,
}

/// The results of an instance's succeeded nodes, by node (for `{{node.result}}` and the
/// upstream results a run carries as data).
fn succeeded_results(nodes: &[(i64, NodeRun)]) -> dag::Results<'_> {
    nodes
        .iter()
        .filter(|(_, n)| n.state == NodeState::Succeeded)
        .map(|(_, n)| (n.node.as_str(), n.result.as_str()))
        .collect()
}

/// The run of node `k` of `graph`, due at `at`: its job's, with the node's parameter (or the
/// job's) and the upstream results it names filled in — each as one shell-quoted word when the
/// job runs code (`dag::runs_code`): a job may have become one since its workflow was checked
/// — and its sources' results beside it as data. `Err`: why the node fails instead.
pub(super) fn node_run(
    job: &Job,
    graph: &dag::Graph,
    k: usize,
    results: &dag::Results<'_>,
    at: i64,
) -> Result<NewRun, String> {
    let node = &graph.def.nodes[k];
    let paste = if dag::runs_code(job.glue_type, &job.handler) {
        dag::Paste::ShellQuoted
    } else {
        dag::Paste::Plain
    };
    let mut run = NewRun::of_job(job, TriggerType::Workflow, at, None);
    run.param = dag::resolve(node.param.as_deref().unwrap_or(&job.param), results, paste).map_err(|_| {
        format!(
            "its parameter with the upstream results quoted in is over {} bytes: job {} runs code, \
             so a result is not cut short (read them from CHIME_UPSTREAM_RESULTS instead)",
            dag::MAX_PARAM_BYTES,
            job.id
        )
    })?;
    run.upstream = dag::upstream_json(graph.sources(k), results);
    Ok(run)
}
