//! A workflow's graph and how an instance moves through it — rules only, no database.
//!
//! A workflow is a DAG of nodes, each running an existing job. An edge from a parent to a child
//! carries a condition: the child may run after the parent *succeeded* (the default), *failed*,
//! or *always* (whichever). A node with several parents waits for all of them (`join = all`,
//! the default) or runs as soon as one edge's condition holds (`join = any`). A node whose
//! conditions can no longer hold is *not run*, and that passes down. [`step`] says, from the
//! nodes' states, which nodes are ready, which will never run, and whether the instance is
//! done; `store/workflows.rs` writes what it says.

use crate::model::{validate_job_key, Invalid};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet, VecDeque};

/// Most nodes a workflow may have.
pub const MAX_NODES: usize = 1_000;
/// Most edges a workflow may have.
pub const MAX_EDGES: usize = 10_000;
/// Longest node parameter, in bytes (a job's parameter's bound).
pub const MAX_PARAM_BYTES: usize = 65_535;

/// A workflow's graph, as stored and as the API takes it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Definition {
    /// The nodes.
    pub nodes: Vec<Node>,
    /// The edges between them.
    #[serde(default)]
    pub edges: Vec<Edge>,
}

/// One node: a job to run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Node {
    /// The node's name in its workflow: 1–64 of `A-Z a-z 0-9 . _ -`.
    pub key: String,
    /// The job it runs (any group).
    pub job_id: i64,
    /// The parameter to send instead of the job's; may name an upstream node's result as
    /// `{{node.result}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param: Option<String>,
    /// With several parents: wait for all (`all`, the default) or start on the first (`any`).
    #[serde(default)]
    pub join: Join,
}

/// How a node with several parents starts.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Join {
    /// When every incoming edge is decided, and all hold.
    #[default]
    All,
    /// As soon as one incoming edge holds.
    Any,
}

/// An edge: `to` may run after `from`, on a condition.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Edge {
    /// The parent node's key.
    pub from: String,
    /// The child node's key.
    pub to: String,
    /// When the edge holds.
    #[serde(default)]
    pub when: When,
}

/// The condition an edge carries.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum When {
    /// The parent succeeded (or was skipped by an operator).
    #[default]
    Success,
    /// The parent failed.
    Failure,
    /// The parent finished, whichever way.
    Always,
}

/// A node's state in one instance. A node that has not started has no state.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum NodeState {
    /// Its run (or a retry of it) is on its way.
    Running,
    /// Its run succeeded, or an operator marked it succeeded.
    Succeeded,
    /// Its run failed and no retry follows.
    Failed,
    /// An operator skipped it: it does not run, and its children go on as after a success.
    Skipped,
    /// Its conditions cannot hold any more: it does not run, nor do children that need it.
    NotRun,
    /// Its instance was stopped while it ran.
    Stopped,
}

impl NodeState {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeState::Running => "running",
            NodeState::Succeeded => "succeeded",
            NodeState::Failed => "failed",
            NodeState::Skipped => "skipped",
            NodeState::NotRun => "not_run",
            NodeState::Stopped => "stopped",
        }
    }

    /// From the stored text.
    pub fn parse(s: &str) -> Option<NodeState> {
        [
            NodeState::Running,
            NodeState::Succeeded,
            NodeState::Failed,
            NodeState::Skipped,
            NodeState::NotRun,
            NodeState::Stopped,
        ]
        .into_iter()
        .find(|n| n.as_str() == s)
    }

    /// Whether nothing more happens to the node by itself.
    pub fn is_final(self) -> bool {
        self != NodeState::Running
    }
}

/// An instance's state.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum InstanceState {
    /// Waiting for a place under the workflow's concurrency limit.
    Queued,
    /// Nodes are running or about to.
    Running,
    /// Every node finished and no failure was left unhandled.
    Succeeded,
    /// A node failed and no edge handles its failure.
    Failed,
    /// Stopped by an operator.
    Stopped,
    /// Not started: the concurrency limit was reached and the workflow skips in that case.
    Skipped,
}

impl InstanceState {
    /// Every state, in the order the API lists them.
    pub const ALL: [InstanceState; 6] = [
        InstanceState::Queued,
        InstanceState::Running,
        InstanceState::Succeeded,
        InstanceState::Failed,
        InstanceState::Stopped,
        InstanceState::Skipped,
    ];

    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            InstanceState::Queued => "queued",
            InstanceState::Running => "running",
            InstanceState::Succeeded => "succeeded",
            InstanceState::Failed => "failed",
            InstanceState::Stopped => "stopped",
            InstanceState::Skipped => "skipped",
        }
    }

    /// From the stored text.
    pub fn parse(s: &str) -> Option<InstanceState> {
        InstanceState::ALL.into_iter().find(|i| i.as_str() == s)
    }

    /// Whether the instance is over.
    pub fn is_final(self) -> bool {
        !matches!(self, InstanceState::Queued | InstanceState::Running)
    }
}

/// What [`step`] decides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Step {
    /// Nodes to start now, in the graph's order.
    pub ready: Vec<String>,
    /// Nodes that will never run.
    pub not_run: Vec<String>,
    /// The instance's end, once every node is final.
    pub finished: Option<InstanceState>,
}

impl Definition {
    /// The node named `key`.
    pub fn node(&self, key: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.key == key)
    }

    /// The nodes in an order where every parent comes before its children; `Err` names a
    /// node on a cycle.
    fn order(&self) -> Result<Vec<&str>, &str> {
        let mut indegree: HashMap<&str, usize> = self.nodes.iter().map(|n| (n.key.as_str(), 0)).collect();
        for e in &self.edges {
            if let Some(d) = indegree.get_mut(e.to.as_str()) {
                *d += 1;
            }
        }
        let mut queue: VecDeque<&str> = self
            .nodes
            .iter()
            .map(|n| n.key.as_str())
            .filter(|k| indegree[k] == 0)
            .collect();
        let mut out = Vec::with_capacity(self.nodes.len());
        while let Some(k) = queue.pop_front() {
            out.push(k);
            for e in self.edges.iter().filter(|e| e.from == k) {
                if let Some(d) = indegree.get_mut(e.to.as_str()) {
                    *d -= 1;
                    if *d == 0 {
                        queue.push_back(e.to.as_str());
                    }
                }
            }
        }
        if out.len() < self.nodes.len() {
            let placed: HashSet<&str> = out.iter().copied().collect();
            let stuck = self
                .nodes
                .iter()
                .map(|n| n.key.as_str())
                .find(|k| !placed.contains(k))
                .unwrap_or_default();
            return Err(stuck);
        }
        Ok(out)
    }

    /// The nodes `key` can be reached from (its ancestors).
    pub fn upstream(&self, key: &str) -> HashSet<&str> {
        let mut seen = HashSet::new();
        let mut stack = vec![key];
        while let Some(k) = stack.pop() {
            for e in self.edges.iter().filter(|e| e.to == k) {
                if seen.insert(e.from.as_str()) {
                    stack.push(e.from.as_str());
                }
            }
        }
        seen
    }

    /// The nodes reachable from `key` (its descendants).
    pub fn downstream(&self, key: &str) -> HashSet<&str> {
        let mut seen = HashSet::new();
        let mut stack = vec![key];
        while let Some(k) = stack.pop() {
            for e in self.edges.iter().filter(|e| e.from == k) {
                if seen.insert(e.to.as_str()) {
                    stack.push(e.to.as_str());
                }
            }
        }
        seen
    }

    /// Checks the graph on its own and against the jobs that exist (`job_exists`): at least
    /// one node, valid and distinct keys, known jobs, edges between known nodes (each pair
    /// once), no cycle (a node on one can never start), parameters within bounds whose
    /// `{{node.result}}` names an upstream node. Errors name the node.
    pub fn validate(&self, job_exists: impl Fn(i64) -> bool) -> Result<(), Invalid> {
        if self.nodes.is_empty() {
            return Err(Invalid::new("definition.nodes", "a workflow needs at least one node"));
        }
        if self.nodes.len() > MAX_NODES {
            return Err(Invalid::new("definition.nodes", format!("at most {MAX_NODES} nodes")));
        }
        if self.edges.len() > MAX_EDGES {
            return Err(Invalid::new("definition.edges", format!("at most {MAX_EDGES} edges")));
        }
        let mut keys = HashSet::new();
        for n in &self.nodes {
            validate_job_key(&n.key).map_err(|m| node_err(&n.key, "key", m.replace("job key", "node key")))?;
            if !keys.insert(n.key.as_str()) {
                return Err(node_err(&n.key, "key", "appears twice"));
            }
            if n.job_id <= 0 || !job_exists(n.job_id) {
                return Err(node_err(&n.key, "job_id", format!("job {} does not exist", n.job_id)));
            }
            if n.param.as_ref().is_some_and(|p| p.len() > MAX_PARAM_BYTES) {
                return Err(node_err(&n.key, "param", "must be at most 64 KiB"));
            }
        }
        let mut pairs = HashSet::new();
        for e in &self.edges {
            for (end, field) in [(&e.from, "from"), (&e.to, "to")] {
                if !keys.contains(end.as_str()) {
                    return Err(Invalid::new(
                        format!("definition.edges.{field}"),
                        format!("edge {} -> {}: no node '{end}'", e.from, e.to),
                    ));
                }
            }
            if e.from == e.to {
                return Err(node_err(&e.from, "edges", "an edge cannot lead from a node to itself"));
            }
            if !pairs.insert((e.from.as_str(), e.to.as_str())) {
                return Err(node_err(
                    &e.to,
                    "edges",
                    format!("the edge from '{}' appears twice", e.from),
                ));
            }
        }
        if let Err(stuck) = self.order() {
            return Err(node_err(stuck, "edges", "is on a cycle of edges: it could never start"));
        }
        for n in &self.nodes {
            let Some(param) = &n.param else { continue };
            let upstream = self.upstream(&n.key);
            for name in references(param) {
                if !upstream.contains(name) {
                    return Err(node_err(
                        &n.key,
                        "param",
                        format!("{{{{{name}.result}}}} names no upstream node of '{}'", n.key),
                    ));
                }
            }
        }
        Ok(())
    }
}

fn node_err(key: &str, field: &str, msg: impl std::fmt::Display) -> Invalid {
    Invalid::new(
        format!("definition.nodes[{key}].{field}"),
        format!("node '{key}': {msg}"),
    )
}

/// The node keys a parameter names as `{{key.result}}`.
pub fn references(param: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = param;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        if let Some(key) = after[..end].trim().strip_suffix(".result") {
            out.push(key.trim());
        }
        rest = &after[end + 2..];
    }
    out
}

/// `param` with each `{{key.result}}` replaced by that node's result message (`results`); a
/// reference to a node without a result becomes empty. Cut to [`MAX_PARAM_BYTES`].
pub fn resolve(param: &str, results: &HashMap<String, String>) -> String {
    let mut out = String::with_capacity(param.len());
    let mut rest = param;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        out.push_str(&rest[..start]);
        match after[..end].trim().strip_suffix(".result") {
            Some(key) => out.push_str(results.get(key.trim()).map_or("", String::as_str)),
            None => out.push_str(&rest[start..start + 2 + end + 2]),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    if out.len() > MAX_PARAM_BYTES {
        let mut cut = MAX_PARAM_BYTES;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
    }
    out
}

/// Whether an edge holds for a parent in `state`: `Some(true)` holds, `Some(false)` never
/// will, `None` not decided yet.
fn holds(when: When, state: Option<NodeState>) -> Option<bool> {
    let s = state.filter(|s| s.is_final())?;
    Some(match when {
        When::Success => matches!(s, NodeState::Succeeded | NodeState::Skipped),
        When::Failure => s == NodeState::Failed,
        When::Always => matches!(s, NodeState::Succeeded | NodeState::Failed | NodeState::Skipped),
    })
}

/// From the nodes' states (`states`; a node absent has not started), which nodes start now,
/// which never will, and how the instance ended once every node is final: [`Graph::step`]
/// with the nodes named.
pub fn step(def: &Definition, states: &HashMap<String, NodeState>) -> Step {
    let graph = Graph::new(def.clone());
    let mut by_index = vec![None; def.nodes.len()];
    for (key, state) in states {
        if let Some(i) = graph.index(key) {
            by_index[i] = Some(*state);
        }
    }
    let step = graph.step(&by_index);
    let key = |i: usize| def.nodes[i].key.clone();
    Step {
        ready: step.ready.into_iter().map(key).collect(),
        not_run: step.not_run.into_iter().map(key).collect(),
        finished: step.finished,
    }
}

/// A graph made ready for stepping its instances many times: its nodes by index, their order,
/// and each node's incoming edges, worked out once (per workflow version, in the loop) instead
/// of in every step.
#[derive(Debug, Default)]
pub struct Graph {
    /// The graph as stored.
    pub def: Definition,
    /// Node indexes, every parent before its children (empty for a graph with a cycle, which
    /// a stored definition cannot have: nothing of it starts).
    order: Vec<usize>,
    /// For each node, its parents' indexes with the edges' conditions.
    incoming: Vec<Vec<(usize, When)>>,
    /// For each node, whether an outgoing `failure` or `always` edge handles its failure.
    handled: Vec<bool>,
    /// Each node's index by key.
    index: HashMap<String, usize>,
}

/// What [`Graph::step`] decides, with nodes as indexes into the graph's nodes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexedStep {
    /// Nodes to start now, in the graph's order.
    pub ready: Vec<usize>,
    /// Nodes that will never run.
    pub not_run: Vec<usize>,
    /// The instance's end, once every node is final.
    pub finished: Option<InstanceState>,
}

impl Graph {
    /// Prepares `def` for stepping.
    pub fn new(def: Definition) -> Graph {
        let index: HashMap<String, usize> = def.nodes.iter().enumerate().map(|(i, n)| (n.key.clone(), i)).collect();
        let order = def
            .order()
            .map(|o| o.iter().filter_map(|k| index.get(*k).copied()).collect())
            .unwrap_or_default();
        let mut incoming = vec![Vec::new(); def.nodes.len()];
        let mut handled = vec![false; def.nodes.len()];
        for e in &def.edges {
            let Some(&from) = index.get(&e.from) else { continue };
            handled[from] |= matches!(e.when, When::Failure | When::Always);
            if let Some(&to) = index.get(&e.to) {
                incoming[to].push((from, e.when));
            }
        }
        Graph {
            def,
            order,
            incoming,
            handled,
            index,
        }
    }

    /// The index of node `key`.
    pub fn index(&self, key: &str) -> Option<usize> {
        self.index.get(key).copied()
    }

    /// How many nodes it has.
    pub fn len(&self) -> usize {
        self.def.nodes.len()
    }

    /// Whether it has no node.
    pub fn is_empty(&self) -> bool {
        self.def.nodes.is_empty()
    }

    /// From the nodes' states (`states[i]` node `i`'s; `None`: not started), which nodes start
    /// now, which never will, and how the instance ended once every node is final. A failure
    /// is handled when the failed node has an outgoing `failure` or `always` edge; an instance
    /// with an unhandled failure failed, one with a stopped node was stopped.
    pub fn step(&self, states: &[Option<NodeState>]) -> IndexedStep {
        let mut now = states.to_vec();
        now.resize(self.len(), None);
        let mut out = IndexedStep::default();
        if self.order.len() != self.len() {
            return out;
        }
        for &i in &self.order {
            if now[i].is_some() {
                continue;
            }
            let incoming = &self.incoming[i];
            let start = if incoming.is_empty() {
                Some(true)
            } else {
                let holding = incoming.iter().map(|(from, when)| holds(*when, now[*from]));
                let (mut open, mut held, mut failed) = (false, false, false);
                for h in holding {
                    match h {
                        None => open = true,
                        Some(true) => held = true,
                        Some(false) => failed = true,
                    }
                }
                match self.def.nodes[i].join {
                    Join::All if open => None,
                    Join::All => Some(!failed),
                    Join::Any if held => Some(true),
                    Join::Any if open => None,
                    Join::Any => Some(false),
                }
            };
            match start {
                Some(true) => out.ready.push(i),
                Some(false) => {
                    now[i] = Some(NodeState::NotRun);
                    out.not_run.push(i);
                }
                None => {}
            }
        }
        if out.ready.is_empty() && now.iter().all(|s| s.is_some_and(NodeState::is_final)) {
            let unhandled = (0..now.len()).any(|i| now[i] == Some(NodeState::Failed) && !self.handled[i]);
            out.finished = Some(if now.contains(&Some(NodeState::Stopped)) {
                InstanceState::Stopped
            } else if unhandled {
                InstanceState::Failed
            } else {
                InstanceState::Succeeded
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(nodes: &[(&str, Join)], edges: &[(&str, &str, When)]) -> Definition {
        Definition {
            nodes: nodes
                .iter()
                .map(|(k, j)| Node {
                    key: (*k).into(),
                    job_id: 1,
                    param: None,
                    join: *j,
                })
                .collect(),
            edges: edges
                .iter()
                .map(|(f, t, w)| Edge {
                    from: (*f).into(),
                    to: (*t).into(),
                    when: *w,
                })
                .collect(),
        }
    }

    fn states(s: &[(&str, NodeState)]) -> HashMap<String, NodeState> {
        s.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    }

    use Join::{All, Any};
    use NodeState::*;
    use When::{Always, Failure, Success};

    #[test]
    fn a_diamond_joins_after_both_branches() {
        let d = def(
            &[("a", All), ("b", All), ("c", All), ("d", All)],
            &[
                ("a", "b", Success),
                ("a", "c", Success),
                ("b", "d", Success),
                ("c", "d", Success),
            ],
        );
        assert_eq!(step(&d, &states(&[])).ready, vec!["a"]);
        assert_eq!(step(&d, &states(&[("a", Running)])), Step::default());
        assert_eq!(step(&d, &states(&[("a", Succeeded)])).ready, vec!["b", "c"]);
        let waiting = states(&[("a", Succeeded), ("b", Succeeded), ("c", Running)]);
        assert!(step(&d, &waiting).ready.is_empty(), "d waits for c");
        let both = states(&[("a", Succeeded), ("b", Succeeded), ("c", Succeeded)]);
        assert_eq!(step(&d, &both).ready, vec!["d"]);
        let done = states(&[("a", Succeeded), ("b", Succeeded), ("c", Succeeded), ("d", Succeeded)]);
        assert_eq!(step(&d, &done).finished, Some(InstanceState::Succeeded));
    }

    #[test]
    fn a_failure_takes_the_failure_branch_and_is_handled() {
        let d = def(
            &[("a", All), ("ok", All), ("cleanup", All), ("after", All)],
            &[
                ("a", "ok", Success),
                ("a", "cleanup", Failure),
                ("ok", "after", Success),
            ],
        );
        let s = step(&d, &states(&[("a", Failed)]));
        assert_eq!(s.ready, vec!["cleanup"]);
        assert_eq!(s.not_run, vec!["ok", "after"], "not run, and that passes down");
        let done = states(&[("a", Failed), ("ok", NotRun), ("after", NotRun), ("cleanup", Succeeded)]);
        assert_eq!(step(&d, &done).finished, Some(InstanceState::Succeeded), "handled");
        // Without a failure edge the same failure fails the instance.
        let plain = def(&[("a", All), ("b", All)], &[("a", "b", Success)]);
        let s = step(&plain, &states(&[("a", Failed)]));
        assert_eq!(s.not_run, vec!["b"]);
        assert_eq!(s.finished, Some(InstanceState::Failed));
    }

    #[test]
    fn any_join_starts_on_the_first_and_always_edges_run_either_way() {
        let d = def(
            &[("a", All), ("b", All), ("first", Any), ("report", All)],
            &[
                ("a", "first", Success),
                ("b", "first", Success),
                ("a", "report", Always),
            ],
        );
        let s = step(&d, &states(&[("a", Running), ("b", Succeeded)]));
        assert_eq!(s.ready, vec!["first"]);
        let s = step(&d, &states(&[("a", Failed), ("b", Failed)]));
        assert_eq!(s.ready, vec!["report"]);
        assert_eq!(s.not_run, vec!["first"]);
        // Skipped by an operator: children go on as after a success.
        let mut ready = step(&d, &states(&[("a", Skipped), ("b", Running)])).ready;
        ready.sort();
        assert_eq!(ready, vec!["first", "report"]);
    }

    #[test]
    fn a_stopped_instance_ends_stopped() {
        let d = def(&[("a", All), ("b", All)], &[("a", "b", Success)]);
        let s = step(&d, &states(&[("a", Stopped), ("b", NotRun)]));
        assert_eq!(s.finished, Some(InstanceState::Stopped));
    }

    #[test]
    fn definitions_are_checked_naming_the_node() {
        let ok = def(&[("a", All), ("b", All)], &[("a", "b", Success)]);
        assert!(ok.validate(|_| true).is_ok());
        let err = |d: &Definition| d.validate(|id| id == 1).unwrap_err();
        let cyclic = def(
            &[("a", All), ("b", All), ("c", All)],
            &[("a", "b", Success), ("b", "c", Success), ("c", "b", Success)],
        );
        let e = err(&cyclic);
        assert!(e.message.contains("node 'b'") && e.message.contains("cycle"), "{e:?}");
        let mut unknown_job = ok.clone();
        unknown_job.nodes[1].job_id = 9;
        assert_eq!(err(&unknown_job).field, "definition.nodes[b].job_id");
        let mut dup = ok.clone();
        dup.nodes[1].key = "a".into();
        assert!(err(&dup).message.contains("twice"));
        let mut dangling = ok.clone();
        dangling.edges[0].to = "nowhere".into();
        assert!(err(&dangling).message.contains("no node 'nowhere'"));
        let mut self_edge = ok.clone();
        self_edge.edges[0].to = "a".into();
        assert!(err(&self_edge).message.contains("itself"));
        let mut bad_ref = ok.clone();
        bad_ref.nodes[0].param = Some("{{b.result}}".into());
        assert_eq!(err(&bad_ref).field, "definition.nodes[a].param", "b is downstream of a");
        let mut good_ref = ok.clone();
        good_ref.nodes[1].param = Some("x={{ a.result }}".into());
        assert!(good_ref.validate(|_| true).is_ok());
        assert!(err(&Definition::default()).message.contains("at least one node"));
    }

    #[test]
    fn results_are_passed_into_parameters() {
        let results: HashMap<String, String> = [("a".to_owned(), "42 rows".to_owned())].into_iter().collect();
        assert_eq!(
            resolve("n={{a.result}}; m={{ a.result }}", &results),
            "n=42 rows; m=42 rows"
        );
        assert_eq!(resolve("{{x.result}}|{{other}}|{{", &results), "|{{other}}|{{");
        assert_eq!(references("{{a.result}} {{b.result}} {{c}}"), vec!["a", "b"]);
        let big: HashMap<String, String> = [("a".to_owned(), "é".repeat(40_000))].into_iter().collect();
        assert!(resolve("{{a.result}}", &big).len() <= MAX_PARAM_BYTES);
    }
}
