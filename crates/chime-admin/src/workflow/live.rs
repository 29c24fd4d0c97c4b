//! The running instances the workflow loop keeps in memory between its steps, and the
//! workflows and graphs it fires them from.
//!
//! A step used to read each instance's graph (JSON, parsed again), all its node rows and the
//! runs of all its running nodes, and a query over every running node to find what finished.
//! Kept here instead: the parsed graph (shared by the instances of one workflow version), the
//! node rows and which run each running node waits for. The database stays the truth: a step
//! still locks each instance's row, and a cached instance is used only while the row's
//! `revision` is the one it was cached at. An operator's change (stop, retry, skip, mark
//! succeeded) raises the revision, so an instance changed that way, on any admin, is read
//! again, never guessed. The engine's own steps leave it: they only move nodes forward, each
//! node's row is unique, and only the holder of a workflow's partition steps its instances;
//! an admin that lost a partition, even for a moment (a new lease epoch), drops what it kept
//! of the partition's instances ([`LiveInstances::keep_partitions`]). A step made from a view
//! that is stale all the same fails on the unique row and is read again.
//!
//! Firing reads only the due workflows' fire times; a workflow's other settings are kept
//! while its `updated_at` is the one read (every edit moves it forward, as a job's), and its
//! graph by version (a version never changes).

use super::dag::{Definition, Graph};
use super::spec::{NodeRun, Workflow};
use crate::run::PARTITIONS;
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// Instances kept at most; past this, more are stepped from the database as before (a bound on
/// memory, not a limit on instances).
const MAX_INSTANCES: usize = 100_000;
/// Parsed graphs kept at most (one per workflow version in use).
const MAX_GRAPHS: usize = 10_000;
/// Workflows' rows kept at most (a row without its graph is a few hundred bytes).
const MAX_WORKFLOWS: usize = 100_000;

/// A running instance as the loop knows it after its last step.
#[derive(Debug, Clone)]
pub struct LiveInstance {
    /// The instance's id.
    pub id: i64,
    /// Its workflow (whose partition it belongs to).
    pub workflow_id: i64,
    /// The instance row's revision this state belongs to.
    pub revision: i64,
    /// When it was fired for, epoch ms: its nodes' date placeholders resolve from it, so every
    /// node of one instance sees the same dates.
    pub scheduled_at: i64,
    /// Its graph, as fired, ready for stepping.
    pub definition: Arc<Graph>,
    /// Its node rows, each with its row id.
    pub nodes: Vec<(i64, NodeRun)>,
}

impl LiveInstance {
    /// The runs its running nodes wait for.
    pub fn running_runs(&self) -> impl Iterator<Item = i64> + '_ {
        self.nodes
            .iter()
            .filter(|(_, n)| n.state == super::dag::NodeState::Running && n.run_id > 0)
            .map(|(_, n)| n.run_id)
    }
}

/// The loop's running instances, and the instance each running node's run belongs to.
#[derive(Debug, Default)]
pub struct LiveInstances {
    instances: FxHashMap<i64, LiveInstance>,
    by_run: FxHashMap<i64, i64>,
    /// Prepared graphs by version (a version never changes).
    graphs: FxHashMap<i64, Arc<Graph>>,
    /// Workflows' rows as last read (their graphs left out: see `graphs`), by id.
    workflows: FxHashMap<i64, Workflow>,
}

impl LiveInstances {
    /// Takes instance `id` out (a step puts it back once its transaction committed, so a step
    /// that failed leaves nothing half-done here).
    pub fn take(&mut self, id: i64) -> Option<LiveInstance> {
        let live = self.instances.remove(&id)?;
        for run in live.running_runs() {
            self.by_run.remove(&run);
        }
        Some(live)
    }

    /// Keeps `live` for its next step (while there is room).
    pub fn put(&mut self, live: LiveInstance) {
        if self.instances.len() >= MAX_INSTANCES && !self.instances.contains_key(&live.id) {
            return;
        }
        self.take(live.id);
        for run in live.running_runs() {
            self.by_run.insert(run, live.id);
        }
        self.instances.insert(live.id, live);
    }

    /// The instance whose running node waits for `run`.
    pub fn instance_of_run(&self, run: i64) -> Option<i64> {
        self.by_run.get(&run).copied()
    }

    /// Every run the kept instances wait for.
    pub fn running_runs(&self) -> impl Iterator<Item = i64> + '_ {
        self.by_run.keys().copied()
    }

    /// How many instances are kept.
    pub fn len(&self) -> usize {
        self.instances.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.instances.is_empty()
    }

    /// Forgets the instances of partitions no longer `held`: their new owner steps them.
    pub fn keep_partitions(&mut self, held: &[i64]) {
        let gone: Vec<i64> = self
            .instances
            .values()
            .filter(|i| !held.contains(&(i.workflow_id % PARTITIONS)))
            .map(|i| i.id)
            .collect();
        for id in gone {
            self.take(id);
        }
    }

    /// Workflow `id` as kept, if it was read at `updated_at` (every edit moves it forward).
    pub fn workflow(&self, id: i64, updated_at: i64) -> Option<&Workflow> {
        self.workflows.get(&id).filter(|w| w.updated_at == updated_at)
    }

    /// Keeps workflow `w` (read without its graph) for the next fires.
    pub fn keep_workflow(&mut self, w: Workflow) {
        if self.workflows.len() >= MAX_WORKFLOWS && !self.workflows.contains_key(&w.id) {
            self.workflows.clear();
        }
        self.workflows.insert(w.id, w);
    }

    /// The graph of workflow version `version`, if it was prepared.
    pub fn graph(&self, version: i64) -> Option<Arc<Graph>> {
        self.graphs.get(&version).cloned()
    }

    /// Parses and prepares the graph of version `version`, stored as `json`, once for all the
    /// instances fired from it.
    pub fn add_graph(&mut self, version: i64, json: &str) -> Result<Arc<Graph>, serde_json::Error> {
        let g = Arc::new(Graph::new(serde_json::from_str::<Definition>(json)?));
        if self.graphs.len() >= MAX_GRAPHS {
            self.graphs.clear();
        }
        self.graphs.insert(version, g.clone());
        Ok(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workflow::dag::NodeState;

    fn node(key: &str, state: NodeState, run_id: i64) -> (i64, NodeRun) {
        (
            run_id,
            NodeRun {
                node: key.into(),
                state,
                run_id,
                result: String::new(),
                started_at: 0,
                finished_at: 0,
            },
        )
    }

    fn instance(id: i64, workflow_id: i64, nodes: Vec<(i64, NodeRun)>) -> LiveInstance {
        LiveInstance {
            id,
            workflow_id,
            revision: 1,
            scheduled_at: 0,
            definition: Arc::default(),
            nodes,
        }
    }

    #[test]
    fn runs_map_to_their_instance_until_taken() {
        let mut live = LiveInstances::default();
        live.put(instance(
            7,
            3,
            vec![node("a", NodeState::Succeeded, 10), node("b", NodeState::Running, 11)],
        ));
        assert_eq!(live.instance_of_run(11), Some(7));
        // A finished node's run is waited for no more.
        assert_eq!(live.instance_of_run(10), None);
        let taken = live.take(7).unwrap();
        assert_eq!(taken.nodes.len(), 2);
        assert_eq!(live.instance_of_run(11), None);
        assert!(live.is_empty());
    }

    #[test]
    fn putting_again_replaces_the_runs_waited_for() {
        let mut live = LiveInstances::default();
        live.put(instance(7, 3, vec![node("b", NodeState::Running, 11)]));
        live.put(instance(7, 3, vec![node("b", NodeState::Running, 12)]));
        assert_eq!(live.instance_of_run(11), None);
        assert_eq!(live.instance_of_run(12), Some(7));
        assert_eq!(live.running_runs().collect::<Vec<_>>(), vec![12]);
    }

    #[test]
    fn partitions_let_go_are_forgotten() {
        let mut live = LiveInstances::default();
        live.put(instance(1, 16 + 2, vec![node("a", NodeState::Running, 5)]));
        live.put(instance(2, 3, vec![node("a", NodeState::Running, 6)]));
        live.keep_partitions(&[3]);
        assert_eq!(live.len(), 1);
        assert_eq!(live.instance_of_run(5), None);
        assert_eq!(live.instance_of_run(6), Some(2));
    }

    #[test]
    fn one_graph_per_version() {
        let mut live = LiveInstances::default();
        let json = r#"{"nodes":[{"key":"a","job_id":1}],"edges":[]}"#;
        assert!(live.graph(7).is_none());
        let a = live.add_graph(7, json).unwrap();
        let b = live.graph(7).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert!(live.graph(8).is_none());
        assert!(live.add_graph(8, "{").is_err());
        assert!(live.graph(8).is_none(), "a graph that does not parse is not kept");
    }
}
