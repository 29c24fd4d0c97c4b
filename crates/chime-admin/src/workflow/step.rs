//! One step of the workflow engine, decided without I/O: from what the store read of a batch of
//! instances (their graphs and node rows, how their nodes' runs ended, the retries that follow
//! failed runs, the jobs of the nodes not started yet), which nodes finished, which start, with
//! what parameters, and which instances ended. `store/workflow_steps.rs` reads those facts in
//! the step's transaction, calls [`plan_step`] and writes its [`StepPlan`].

use super::dag::{self, InstanceState, NodeState};
use super::live::LiveInstance;
use super::spec::NodeRun;
use crate::model::Job;
use crate::run::{NewRun, WrittenResult};
use chime_protocol::TriggerType;
use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::sync::Arc;

/// How a node's run ended so far: the columns of `run` a step reads (in this order, which
/// SQLite's packed rows keep).
#[derive(Debug, Clone, serde::Deserialize)]
pub struct RunEnd {
    /// The run.
    pub id: i64,
    /// Its send's code (0: not sent yet).
    pub trigger_code: i64,
    /// Its result's code (0: none yet, 200: success).
    pub handle_code: i64,
    /// Its result's message.
    pub handle_msg: String,
    /// When its result was written (0: not yet).
    pub handled_at: i64,
    /// When it was sent (0: not yet).
    pub triggered_at: i64,
}

impl RunEnd {
    /// How a run ended, from the result the results writer wrote and saw written (a code other
    /// than 0, on a run that had none): the row says the same.
    pub fn written(w: &WrittenResult) -> Self {
        Self {
            id: w.run_id,
            // Any code the send had: with a result, the run is no longer in flight.
            trigger_code: 200,
            handle_code: w.code,
            handle_msg: w.msg.clone(),
            handled_at: w.at,
            // The result came after the send; only the later of the two is used.
            triggered_at: 0,
        }
    }

    /// Sent (or on its way) and no result yet.
    pub fn in_flight(&self) -> bool {
        matches!(self.trigger_code, 0 | 200) && self.handle_code == 0
    }

    /// Ended, and not in success.
    pub fn failed(&self) -> bool {
        !self.in_flight() && self.handle_code != 200
    }
}

/// How the runs a step looks at ended, followed through their retries.
#[derive(Debug, Default)]
pub struct RunFacts {
    /// The runs found, by id (a run not here was deleted, with its job).
    pub ends: FxHashMap<i64, RunEnd>,
    /// A failed run's retry (the first, when there are several), by the failed run's id: the
    /// node waits for the retry instead.
    pub retries: FxHashMap<i64, i64>,
}

/// What a step decided for a batch of instances, for the store to write.
#[derive(Debug, Default)]
pub struct StepPlan {
    /// Node rows whose state, run or result changed, as (instance, node) indexes into the
    /// instances and their `nodes`, which [`plan_step`] changed in place.
    pub changed: Vec<(usize, usize)>,
    /// For each node that finished: ms from its run's result to this step.
    pub lateness_ms: Vec<i64>,
    /// Node rows to insert, in this order.
    pub new_nodes: Vec<NewNode>,
    /// The runs to create, each for the new node at the same place in `run_owners`.
    pub new_runs: Vec<NewRun>,
    /// For each of `new_runs`: its node's index in `new_nodes`.
    pub run_owners: Vec<usize>,
    /// Instances that ended, by index, with their end.
    pub ended: Vec<(usize, InstanceState)>,
}

/// A node row to insert: a node that starts, fails without a run, or will not run.
#[derive(Debug, Clone, PartialEq)]
pub struct NewNode {
    /// Its instance's index.
    pub instance: usize,
    /// The node's key.
    pub key: String,
    /// Its state.
    pub state: NodeState,
    /// Why it failed without a run (empty otherwise).
    pub result: String,
}

/// A running node to settle: (instance index, node index). Its run is the node's `run_id`.
pub type Watched = (usize, usize);

/// Decides one step for `instances`: first the running nodes `watched` take their runs' ends
/// from `runs` (a failed run a retry follows hands its node to the retry; a run gone fails its
/// node), in place; then each instance's graph is stepped as far as it goes, its new nodes'
/// runs made from `jobs` (due at `due[i]`, with upstream results pasted in), a node whose job is
/// gone or whose parameter cannot be made failing at once.
pub fn plan_step(
    instances: &mut [LiveInstance],
    watched: &[Watched],
    runs: &RunFacts,
    jobs: &HashMap<i64, Arc<Job>>,
    due: &[i64],
    now: i64,
) -> StepPlan {
    let mut plan = StepPlan::default();
    for &(i, k) in watched {
        if settle(&mut instances[i].nodes[k].1, runs, now, &mut plan.lateness_ms) {
            plan.changed.push((i, k));
        }
    }
    // Sized once: a wave is thousands of nodes, and growing these push by push cost more than
    // filling them.
    let room: usize = instances
        .iter()
        .map(|s| s.definition.len().saturating_sub(s.nodes.len()))
        .sum();
    plan.new_nodes.reserve(room);
    plan.new_runs.reserve(room);
    plan.run_owners.reserve(room);
    for (i, s) in instances.iter().enumerate() {
        step_instance(i, s, jobs, due[i], &mut plan);
    }
    plan
}

/// Settles a running node by its run, following retries; returns whether its row changed.
fn settle(n: &mut NodeRun, runs: &RunFacts, now: i64, lateness_ms: &mut Vec<i64>) -> bool {
    let mut run_id = n.run_id;
    loop {
        let Some(r) = runs.ends.get(&run_id) else {
            // The run was deleted (with its job): the node cannot finish by itself.
            n.state = NodeState::Failed;
            n.result = format!("run {run_id} no longer exists");
            n.run_id = run_id;
            n.finished_at = now;
            return true;
        };
        if r.in_flight() {
            let changed = run_id != n.run_id;
            n.run_id = run_id;
            return changed;
        }
        if let Some(retry) = runs.retries.get(&run_id) {
            run_id = *retry;
            continue;
        }
        let done_at = r.handled_at.max(r.triggered_at);
        if done_at > 0 {
            lateness_ms.push((now - done_at).max(0));
        }
        n.state = if r.handle_code == 200 {
            NodeState::Succeeded
        } else {
            NodeState::Failed
        };
        n.result = r.handle_msg.clone();
        n.run_id = run_id;
        n.finished_at = now;
        return true;
    }
}

/// The states of `s`'s nodes by graph index (`None`: not started).
fn states_of(s: &LiveInstance) -> Vec<Option<NodeState>> {
    let graph = &s.definition;
    let mut of = vec![None; graph.len()];
    for (_, n) in &s.nodes {
        if let Some(k) = graph.index(&n.node) {
            of[k] = Some(n.state);
        }
    }
    of
}

/// The jobs a step of `instances` may start: those of the nodes not started yet.
pub fn unstarted_jobs(instances: &[LiveInstance]) -> Vec<i64> {
    let mut ids: Vec<i64> = instances
        .iter()
        .flat_map(|s| {
            let states = states_of(s);
            s.definition
                .def
                .nodes
                .iter()
                .zip(states)
                .filter(|(_, st)| st.is_none())
                .map(|(n, _)| n.job_id)
                .collect::<Vec<_>>()
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Steps instance `i` as far as its graph goes, all in memory: a node that cannot start fails
/// at once, which may decide more nodes.
fn step_instance(i: usize, s: &LiveInstance, jobs: &HashMap<i64, Arc<Job>>, due: i64, plan: &mut StepPlan) {
    let graph = &s.definition;
    let mut states = states_of(s);
    let no_results = HashMap::new();
    // Upstream results, gathered only for a node that has parents or names a node.
    let mut results: Option<dag::Results<'_>> = None;
    loop {
        let step = graph.step(&states);
        let mut again = !step.not_run.is_empty() && step.ready.is_empty() && step.finished.is_none();
        for k in step.not_run {
            states[k] = Some(NodeState::NotRun);
            plan.new_nodes
                .push(new_node(i, graph, k, NodeState::NotRun, String::new()));
        }
        for k in step.ready {
            let node = &graph.def.nodes[k];
            let made = match jobs.get(&node.job_id) {
                Some(job) => {
                    let named = node.param.as_deref().unwrap_or(&job.param).contains("{{");
                    let results = if named || graph.sources(k).next().is_some() {
                        results.get_or_insert_with(|| succeeded_results(&s.nodes))
                    } else {
                        &no_results
                    };
                    node_run(job, graph, k, results, due, s.scheduled_at)
                }
                None => Err(format!("job {} no longer exists", node.job_id)),
            };
            match made {
                Ok(run) => {
                    plan.run_owners.push(plan.new_nodes.len());
                    plan.new_runs.push(run);
                    states[k] = Some(NodeState::Running);
                    plan.new_nodes
                        .push(new_node(i, graph, k, NodeState::Running, String::new()));
                }
                Err(why) => {
                    again = true;
                    states[k] = Some(NodeState::Failed);
                    plan.new_nodes.push(new_node(i, graph, k, NodeState::Failed, why));
                }
            }
        }
        if let Some(end) = step.finished {
            plan.ended.push((i, end));
            return;
        }
        if !again {
            return;
        }
    }
}

fn new_node(instance: usize, graph: &dag::Graph, k: usize, state: NodeState, result: String) -> NewNode {
    NewNode {
        instance,
        key: graph.def.nodes[k].key.clone(),
        state,
        result,
    }
}

/// The results of an instance's succeeded nodes, by node (for `{{node.result}}` and the
/// upstream results a run carries as data).
pub fn succeeded_results(nodes: &[(i64, NodeRun)]) -> dag::Results<'_> {
    nodes
        .iter()
        .filter(|(_, n)| n.state == NodeState::Succeeded)
        .map(|(_, n)| (n.node.as_str(), n.result.as_str()))
        .collect()
}

/// The run of node `k` of `graph`, due at `at`: its job's, with the node's parameter (or the
/// job's) filled in — first its date placeholders, from the instance's fire time `fired_for` in
/// the job's zone (`${bizdate}` on the job's business calendar when it keeps to one), then the
/// upstream results it names, each as one shell-quoted word when the job runs code
/// (`dag::runs_code`): a job may have become one since its workflow was checked — and its
/// sources' results beside it as data. A result is pasted after the dates, so text
/// in a result is never read as a placeholder. `Err`: why the node fails instead.
pub fn node_run(
    job: &Job,
    graph: &dag::Graph,
    k: usize,
    results: &dag::Results<'_>,
    at: i64,
    fired_for: i64,
) -> Result<NewRun, String> {
    let node = &graph.def.nodes[k];
    let paste = if dag::runs_code(job.glue_type, &job.handler) {
        dag::Paste::ShellQuoted
    } else {
        dag::Paste::Plain
    };
    let mut run = NewRun::of_job(job, TriggerType::Workflow, at, None);
    let template = node.param.as_deref().unwrap_or(&job.param);
    let template = crate::run::resolve_param(template, fired_for, &job.time_zone, job.business_days.as_deref());
    run.payload.param = dag::resolve(&template, results, paste).map_err(|_| {
        format!(
            "its parameter with the upstream results quoted in is over {} bytes: job {} runs code, \
             so a result is not cut short (read them from CHIME_UPSTREAM_RESULTS instead)",
            dag::MAX_PARAM_BYTES,
            job.id
        )
    })?;
    run.payload.upstream = dag::upstream_json(graph.sources(k), results);
    run.payload.flow = node.flow.clone();
    Ok(run)
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

/// What an operator's change to a node does, for the store to write (then the instance runs
/// again and is stepped).
#[derive(Debug, Clone, PartialEq)]
pub struct ChangePlan {
    /// Rows of nodes downstream that the node's old state decided not to run: deleted, so that
    /// they are decided again.
    pub undecided: Vec<String>,
    /// What becomes of the node itself.
    pub action: ChangeAction,
}

/// What becomes of the changed node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeAction {
    /// It runs again: a new run of job `job_id`.
    Retry {
        /// Its job.
        job_id: i64,
    },
    /// It takes `state`; `has_row` says whether it has a row to update (else one is inserted).
    Set {
        /// Its new state.
        state: NodeState,
        /// Whether it has a row already.
        has_row: bool,
    },
}

/// Why a change is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeRefused {
    /// The instance or the node is not in a state the change applies to (409).
    Conflict(String),
    /// The instance's graph has no such node (404).
    NotFound(String),
}

/// Decides an operator's `change` to node `node` of instance `id` (in `state`, of graph `def`,
/// with node rows `nodes`): retry a failed or stopped node, skip one that has not started or
/// failed, mark a failed or stopped one succeeded; a stopped, skipped or queued instance takes
/// no change.
pub fn plan_change(
    id: i64,
    state: InstanceState,
    def: &dag::Definition,
    nodes: &[NodeRun],
    node: &str,
    change: NodeChange,
) -> Result<ChangePlan, ChangeRefused> {
    if matches!(
        state,
        InstanceState::Stopped | InstanceState::Skipped | InstanceState::Queued
    ) {
        return Err(ChangeRefused::Conflict(format!("instance {id} is {}", state.as_str())));
    }
    let Some(spec) = def.node(node) else {
        return Err(ChangeRefused::NotFound(format!("node '{node}' in instance {id}")));
    };
    let current = nodes.iter().find(|n| n.node == node).map(|n| n.state);
    let allowed = match change {
        NodeChange::Retry | NodeChange::MarkSucceeded => {
            matches!(current, Some(NodeState::Failed | NodeState::Stopped))
        }
        NodeChange::Skip => matches!(current, None | Some(NodeState::Failed | NodeState::NotRun)),
    };
    if !allowed {
        let now = current.map_or("waiting", NodeState::as_str);
        let why = format!("node '{node}' is {now}: cannot {}", change.as_str());
        return Err(ChangeRefused::Conflict(why));
    }
    // What the old state decided downstream is decided again.
    let downstream = def.downstream(node);
    let undecided = nodes
        .iter()
        .filter(|n| n.state == NodeState::NotRun && downstream.contains(n.node.as_str()))
        .map(|n| n.node.clone())
        .collect();
    let action = match change {
        NodeChange::Retry => ChangeAction::Retry { job_id: spec.job_id },
        NodeChange::Skip => ChangeAction::Set {
            state: NodeState::Skipped,
            has_row: current.is_some(),
        },
        NodeChange::MarkSucceeded => ChangeAction::Set {
            state: NodeState::Succeeded,
            has_row: current.is_some(),
        },
    };
    Ok(ChangePlan { undecided, action })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000_000;

    fn job(id: i64, param: &str) -> Arc<Job> {
        let mut job = crate::follow_up::tests::job(id, Vec::new());
        job.param = param.into();
        job.retry_count = 0;
        Arc::new(job)
    }

    /// An instance of the graph `json`, with node rows `(key, state, run_id, result)`.
    fn instance(json: &str, nodes: &[(&str, NodeState, i64, &str)]) -> LiveInstance {
        let def: dag::Definition = serde_json::from_str(json).unwrap();
        LiveInstance {
            id: 1,
            workflow_id: 3,
            revision: 1,
            scheduled_at: 0,
            definition: Arc::new(dag::Graph::new(def)),
            nodes: nodes
                .iter()
                .enumerate()
                .map(|(row, (key, state, run_id, result))| {
                    let node = NodeRun {
                        node: (*key).into(),
                        state: *state,
                        run_id: *run_id,
                        result: (*result).into(),
                        started_at: 0,
                        finished_at: 0,
                    };
                    (row as i64 + 10, node)
                })
                .collect(),
        }
    }

    fn ended(id: i64, code: i64, msg: &str) -> RunEnd {
        RunEnd {
            id,
            trigger_code: 200,
            handle_code: code,
            handle_msg: msg.into(),
            handled_at: NOW - 5,
            triggered_at: NOW - 10,
        }
    }

    fn facts(ends: Vec<RunEnd>, retries: &[(i64, i64)]) -> RunFacts {
        RunFacts {
            ends: ends.into_iter().map(|e| (e.id, e)).collect(),
            retries: retries.iter().copied().collect(),
        }
    }

    fn jobs(list: &[Arc<Job>]) -> HashMap<i64, Arc<Job>> {
        list.iter().map(|j| (j.id, j.clone())).collect()
    }

    /// The running nodes of `s`, as a step watches them.
    fn watched(s: &LiveInstance) -> Vec<Watched> {
        (0..s.nodes.len())
            .filter(|k| s.nodes[*k].1.state == NodeState::Running)
            .map(|k| (0, k))
            .collect()
    }

    /// One step of an instance of `json` whose node `a` runs run 100, its run ended as `runs` say.
    fn step_a(json: &str, runs: RunFacts, all: &HashMap<i64, Arc<Job>>) -> (Vec<LiveInstance>, StepPlan) {
        let mut s = vec![instance(json, &[("a", NodeState::Running, 100, "")])];
        let plan = plan_step(&mut s, &[(0, 0)], &runs, all, &[NOW], NOW);
        (s, plan)
    }

    fn new_keys(plan: &StepPlan) -> Vec<(&str, NodeState)> {
        plan.new_nodes.iter().map(|n| (n.key.as_str(), n.state)).collect()
    }

    const CHAIN: &str = r#"{"nodes":[{"key":"a","job_id":1},{"key":"b","job_id":2},{"key":"c","job_id":3}],
        "edges":[{"from":"a","to":"b"},{"from":"b","to":"c"}]}"#;

    #[test]
    fn a_chain_starts_its_first_node_then_the_next_as_each_succeeds() {
        let all = jobs(&[job(1, "p1"), job(2, "p2"), job(3, "p3")]);
        let mut s = vec![instance(CHAIN, &[])];
        assert_eq!(unstarted_jobs(&s), vec![1, 2, 3]);
        let plan = plan_step(&mut s, &[], &RunFacts::default(), &all, &[NOW + 1000], NOW);
        assert_eq!(new_keys(&plan), vec![("a", NodeState::Running)]);
        assert_eq!(plan.run_owners, vec![0]);
        assert_eq!(plan.new_runs[0].job_id, 1);
        assert_eq!(
            plan.new_runs[0].scheduled_at,
            NOW + 1000,
            "the first runs are due at the fire"
        );
        assert_eq!(plan.new_runs[0].trigger_type, TriggerType::Workflow);
        assert!(plan.ended.is_empty());

        let mut s = vec![instance(CHAIN, &[("a", NodeState::Running, 100, "")])];
        let w = watched(&s[0]);
        let plan = plan_step(&mut s, &w, &facts(vec![ended(100, 200, "ok")], &[]), &all, &[NOW], NOW);
        assert_eq!(plan.changed, vec![(0, 0)]);
        assert_eq!(s[0].nodes[0].1.state, NodeState::Succeeded);
        assert_eq!(s[0].nodes[0].1.result, "ok");
        assert_eq!(s[0].nodes[0].1.finished_at, NOW);
        assert_eq!(plan.lateness_ms, vec![5]);
        assert_eq!(new_keys(&plan), vec![("b", NodeState::Running)]);

        let mut s = vec![instance(
            CHAIN,
            &[
                ("a", NodeState::Succeeded, 100, "ok"),
                ("b", NodeState::Succeeded, 101, "ok"),
                ("c", NodeState::Running, 102, ""),
            ],
        )];
        let w = watched(&s[0]);
        let plan = plan_step(&mut s, &w, &facts(vec![ended(102, 200, "ok")], &[]), &all, &[NOW], NOW);
        assert!(plan.new_nodes.is_empty());
        assert_eq!(plan.ended, vec![(0, InstanceState::Succeeded)]);
    }

    #[test]
    fn a_running_node_whose_run_is_in_flight_stays_running() {
        let all = jobs(&[job(1, ""), job(2, ""), job(3, "")]);
        let mut s = vec![instance(CHAIN, &[("a", NodeState::Running, 100, "")])];
        let mut sent = ended(100, 0, "");
        sent.handled_at = 0;
        let plan = plan_step(&mut s, &[(0, 0)], &facts(vec![sent], &[]), &all, &[NOW], NOW);
        assert!(plan.changed.is_empty() && plan.new_nodes.is_empty() && plan.ended.is_empty());
        assert_eq!(s[0].nodes[0].1.state, NodeState::Running);
    }

    #[test]
    fn fan_out_starts_every_child_and_fan_in_waits_for_all_parents() {
        let json = r#"{"nodes":[{"key":"a","job_id":1},{"key":"b","job_id":2},{"key":"c","job_id":3},
            {"key":"d","job_id":4}],
            "edges":[{"from":"a","to":"b"},{"from":"a","to":"c"},{"from":"b","to":"d"},{"from":"c","to":"d"}]}"#;
        let all = jobs(&[job(1, ""), job(2, ""), job(3, ""), job(4, "")]);
        let (_, plan) = step_a(json, facts(vec![ended(100, 200, "")], &[]), &all);
        let mut started = new_keys(&plan);
        started.sort_by_key(|(k, _)| *k);
        assert_eq!(started, vec![("b", NodeState::Running), ("c", NodeState::Running)]);
        assert_eq!(plan.new_runs.len(), 2);

        let rows = [
            ("a", NodeState::Succeeded, 100, ""),
            ("b", NodeState::Running, 101, ""),
            ("c", NodeState::Running, 102, ""),
        ];
        let mut s = vec![instance(json, &rows)];
        let plan = plan_step(
            &mut s,
            &[(0, 1)],
            &facts(vec![ended(101, 200, "")], &[]),
            &all,
            &[NOW],
            NOW,
        );
        assert!(plan.new_nodes.is_empty(), "d waits for c");
        let mut s = vec![instance(json, &rows)];
        let both = facts(vec![ended(101, 200, ""), ended(102, 200, "")], &[]);
        let plan = plan_step(&mut s, &[(0, 1), (0, 2)], &both, &all, &[NOW], NOW);
        assert_eq!(new_keys(&plan), vec![("d", NodeState::Running)]);
    }

    #[test]
    fn a_failure_ends_the_instance_unless_a_failure_edge_handles_it() {
        let all = jobs(&[job(1, ""), job(2, ""), job(3, ""), job(9, "")]);
        let (s, plan) = step_a(CHAIN, facts(vec![ended(100, 500, "boom")], &[]), &all);
        assert_eq!(s[0].nodes[0].1.state, NodeState::Failed);
        assert_eq!(s[0].nodes[0].1.result, "boom");
        assert!(plan.new_runs.is_empty());
        assert!(new_keys(&plan).iter().all(|(_, st)| *st == NodeState::NotRun));
        assert_eq!(plan.ended, vec![(0, InstanceState::Failed)]);

        let handled = r#"{"nodes":[{"key":"a","job_id":1},{"key":"b","job_id":2},{"key":"cleanup","job_id":9}],
            "edges":[{"from":"a","to":"b"},{"from":"a","to":"cleanup","when":"failure"}]}"#;
        let (_, plan) = step_a(handled, facts(vec![ended(100, 500, "boom")], &[]), &all);
        let mut keys = new_keys(&plan);
        keys.sort_by_key(|(k, _)| *k);
        assert_eq!(keys, vec![("b", NodeState::NotRun), ("cleanup", NodeState::Running)]);
        assert_eq!(plan.new_runs.len(), 1);
        assert_eq!(plan.new_runs[0].job_id, 9);
        assert!(plan.ended.is_empty());
    }

    #[test]
    fn a_failed_run_with_a_retry_hands_its_node_to_the_retry() {
        let all = jobs(&[job(1, ""), job(2, ""), job(3, "")]);
        let mut in_flight = ended(101, 0, "");
        in_flight.handled_at = 0;
        // 100 failed, its retry 101 is under way: the node waits for 101.
        let mut s = vec![instance(CHAIN, &[("a", NodeState::Running, 100, "")])];
        let runs = facts(vec![ended(100, 500, "boom"), in_flight], &[(100, 101)]);
        let plan = plan_step(&mut s, &[(0, 0)], &runs, &all, &[NOW], NOW);
        assert_eq!(plan.changed, vec![(0, 0)]);
        assert_eq!(s[0].nodes[0].1.state, NodeState::Running);
        assert_eq!(s[0].nodes[0].1.run_id, 101);
        assert!(plan.new_nodes.is_empty());
        // 100 and its retry 101 failed, 101's retry 102 succeeded: the node succeeded by 102.
        let mut s = vec![instance(CHAIN, &[("a", NodeState::Running, 100, "")])];
        let runs = facts(
            vec![ended(100, 500, ""), ended(101, 500, ""), ended(102, 200, "third time")],
            &[(100, 101), (101, 102)],
        );
        let plan = plan_step(&mut s, &[(0, 0)], &runs, &all, &[NOW], NOW);
        assert_eq!(s[0].nodes[0].1.state, NodeState::Succeeded);
        assert_eq!(s[0].nodes[0].1.run_id, 102);
        assert_eq!(s[0].nodes[0].1.result, "third time");
        assert_eq!(new_keys(&plan), vec![("b", NodeState::Running)]);
        // A run that is gone fails its node.
        let (s, plan) = step_a(CHAIN, RunFacts::default(), &all);
        assert_eq!(s[0].nodes[0].1.state, NodeState::Failed);
        assert_eq!(s[0].nodes[0].1.result, "run 100 no longer exists");
        assert_eq!(plan.ended, vec![(0, InstanceState::Failed)]);
    }

    #[test]
    fn upstream_results_are_templated_into_parameters_and_carried_as_data() {
        let json = r#"{"nodes":[{"key":"a","job_id":1},{"key":"b","job_id":2,"param":"got {{a.result}}"}],
            "edges":[{"from":"a","to":"b"}]}"#;
        let all = jobs(&[job(1, ""), job(2, "unused")]);
        let (_, plan) = step_a(json, facts(vec![ended(100, 200, "42")], &[]), &all);
        assert_eq!(plan.new_runs.len(), 1);
        assert_eq!(plan.new_runs[0].payload.param, "got 42");
        assert_eq!(plan.new_runs[0].payload.upstream, r#"{"a":"42"}"#);
    }

    #[test]
    fn a_node_whose_job_is_gone_fails_at_once() {
        let all = jobs(&[job(1, "")]);
        let (_, plan) = step_a(CHAIN, facts(vec![ended(100, 200, "")], &[]), &all);
        assert_eq!(plan.new_nodes[0].key, "b");
        assert_eq!(plan.new_nodes[0].state, NodeState::Failed);
        assert_eq!(plan.new_nodes[0].result, "job 2 no longer exists");
        assert!(plan.new_runs.is_empty());
        assert_eq!(plan.ended, vec![(0, InstanceState::Failed)]);
    }

    fn row(key: &str, state: NodeState) -> NodeRun {
        NodeRun {
            node: key.into(),
            state,
            run_id: 0,
            result: String::new(),
            started_at: 0,
            finished_at: 0,
        }
    }

    #[test]
    fn an_operators_change_is_planned_or_refused() {
        let def: dag::Definition = serde_json::from_str(CHAIN).unwrap();
        let failed = [
            row("a", NodeState::Failed),
            row("b", NodeState::NotRun),
            row("c", NodeState::NotRun),
        ];
        let plan = plan_change(1, InstanceState::Failed, &def, &failed, "a", NodeChange::Retry).unwrap();
        assert_eq!(plan.undecided, vec!["b".to_owned(), "c".to_owned()]);
        assert_eq!(plan.action, ChangeAction::Retry { job_id: 1 });
        let plan = plan_change(1, InstanceState::Failed, &def, &failed, "a", NodeChange::MarkSucceeded).unwrap();
        let set = ChangeAction::Set {
            state: NodeState::Succeeded,
            has_row: true,
        };
        assert_eq!(plan.action, set);
        // A node not started yet may be skipped (a row is made for it), not retried.
        let running = [row("a", NodeState::Running)];
        let plan = plan_change(1, InstanceState::Running, &def, &running, "b", NodeChange::Skip).unwrap();
        let skip = ChangeAction::Set {
            state: NodeState::Skipped,
            has_row: false,
        };
        assert_eq!(plan.action, skip);
        assert!(plan.undecided.is_empty());
        let retry = |id, state, nodes: &[NodeRun], node| plan_change(id, state, &def, nodes, node, NodeChange::Retry);
        let conflict = |why: &str| -> Result<ChangePlan, _> { Err(ChangeRefused::Conflict(why.into())) };
        assert_eq!(
            retry(1, InstanceState::Running, &running, "a"),
            conflict("node 'a' is running: cannot retry")
        );
        assert_eq!(
            retry(1, InstanceState::Running, &running, "b"),
            conflict("node 'b' is waiting: cannot retry")
        );
        assert_eq!(
            retry(7, InstanceState::Stopped, &failed, "a"),
            conflict("instance 7 is stopped")
        );
        let not_found: Result<ChangePlan, _> = Err(ChangeRefused::NotFound("node 'x' in instance 7".into()));
        assert_eq!(retry(7, InstanceState::Failed, &failed, "x"), not_found);
    }
}
