//! A workflow's graph and how an instance moves through it — rules only, no database.
//!
//! A workflow is a DAG of nodes, each running an existing job. An edge from a parent to a child
//! carries a condition: the child may run after the parent *succeeded* (the default), *failed*,
//! or *always* (whichever). A node with several parents waits for all of them (`join = all`,
//! the default) or runs as soon as one edge's condition holds (`join = any`). A node whose
//! conditions can no longer hold is *not run*, and that passes down. [`step`] says, from the
//! nodes' states, which nodes are ready, which will never run, and whether the instance is
//! done; `store/workflows.rs` writes what it says.

use crate::api::JobFlowPatch;
use crate::model::{validate_job_key, Invalid};
use chime_protocol::GlueType;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

/// Most nodes a workflow may have.
pub const MAX_NODES: usize = 1_000;
/// Most edges a workflow may have.
pub const MAX_EDGES: usize = 10_000;
/// Longest node parameter, in bytes (a job's parameter's bound).
pub const MAX_PARAM_BYTES: usize = 65_535;
/// Most bytes of upstream results a node's run carries as data (their JSON): under the 128 KiB
/// Linux allows one environment string, where a script finds them.
pub const MAX_UPSTREAM_BYTES: usize = 65_536;

/// BEAN handlers known to run their parameter as code: Chime executor's `shell` (`bash -c`)
/// and XXL-JOB's sample `commandJobHandler` (runs its parameter as a command line).
pub const CODE_HANDLERS: [&str; 2] = ["shell", "commandJobHandler"];

/// Whether a job of `glue_type` with BEAN handler `handler` runs code that a node parameter
/// could become part of: every script type (GLUE_SHELL … GLUE_GROOVY: the script may hand its
/// parameter to a shell, `eval` it, or build a command of it) and the [`CODE_HANDLERS`].
pub fn runs_code(glue_type: GlueType, handler: &str) -> bool {
    glue_type != GlueType::Bean || CODE_HANDLERS.contains(&handler.trim())
}

/// What a definition's check needs to know of the job a node names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeJob {
    /// A job that takes its parameter as data.
    Data,
    /// A job that runs code its parameter may become part of ([`runs_code`]).
    Code,
}

impl NodeJob {
    /// The kind of a job of `glue_type` with BEAN handler `handler`.
    pub fn of(glue_type: GlueType, handler: &str) -> NodeJob {
        if runs_code(glue_type, handler) {
            NodeJob::Code
        } else {
            NodeJob::Data
        }
    }
}

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
    /// The priority its runs queue with and the concurrency key they count under, each
    /// instead of the job's when given (`concurrency_key: ""`: none).
    #[serde(flatten)]
    pub flow: JobFlowPatch,
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

/// What [`step`] decides, each node named by an `N`: its key (as here), or its index into the
/// graph's nodes ([`IndexedStep`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Step<N = String> {
    /// Nodes to start now, in the graph's order.
    pub ready: Vec<N>,
    /// Nodes that will never run.
    pub not_run: Vec<N>,
    /// The instance's end, once every node is final.
    pub finished: Option<InstanceState>,
}

impl Definition {
    /// The node named `key`.
    pub fn node(&self, key: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.key == key)
    }

    /// Each node's index by key (the last of a key used twice).
    fn indexes(&self) -> HashMap<&str, usize> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.key.as_str(), i))
            .collect()
    }

    /// For each node, its children's indexes (edges to unknown nodes left out): built once, so
    /// that a walk through the graph does not scan every edge at every node.
    fn children(&self, index: &HashMap<&str, usize>) -> Vec<Vec<usize>> {
        let mut children = vec![Vec::new(); self.nodes.len()];
        for e in &self.edges {
            if let (Some(&from), Some(&to)) = (index.get(e.from.as_str()), index.get(e.to.as_str())) {
                children[from].push(to);
            }
        }
        children
    }

    /// The node indexes in an order where every parent comes before its children; `Err` names
    /// a node on a cycle. Linear in nodes and edges.
    fn order(&self, children: &[Vec<usize>]) -> Result<Vec<usize>, &str> {
        let mut indegree = vec![0usize; self.nodes.len()];
        for to in children.iter().flatten() {
            indegree[*to] += 1;
        }
        let mut queue: VecDeque<usize> = (0..self.nodes.len()).filter(|i| indegree[*i] == 0).collect();
        let mut out = Vec::with_capacity(self.nodes.len());
        while let Some(i) = queue.pop_front() {
            out.push(i);
            for &to in &children[i] {
                indegree[to] -= 1;
                if indegree[to] == 0 {
                    queue.push_back(to);
                }
            }
        }
        if out.len() < self.nodes.len() {
            let stuck = (0..self.nodes.len()).find(|i| indegree[*i] > 0).unwrap_or_default();
            return Err(self.nodes[stuck].key.as_str());
        }
        Ok(out)
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

    /// Checks the graph on its own and against the jobs that exist (`job`: the kind of the job
    /// of an id, `None` when there is none): at least one node, valid and distinct keys, known
    /// jobs, edges between known nodes (each pair once), no cycle (a node on one can never
    /// start), parameters within bounds whose `{{node.result}}` names an upstream node, and in
    /// no parameter of a node whose job runs code (a result pasted into code would run as
    /// code: such a node reads its upstream results as data). Errors name the node.
    ///
    /// Linear in nodes and edges but for the references, which are checked against ancestor
    /// sets (bitsets) made in one pass in graph order, and only when a parameter names a node.
    pub fn validate(&self, job: impl Fn(i64) -> Option<NodeJob>) -> Result<(), Invalid> {
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
            let kind = if n.job_id > 0 { job(n.job_id) } else { None };
            let Some(kind) = kind else {
                return Err(node_err(&n.key, "job_id", format!("job {} does not exist", n.job_id)));
            };
            // The same bounds as a job's own priority and key.
            if let Err(e) = n.flow.apply_to(None) {
                return Err(node_err(&n.key, &e.field, e.message));
            }
            let Some(param) = &n.param else { continue };
            if param.len() > MAX_PARAM_BYTES {
                return Err(node_err(&n.key, "param", "must be at most 64 KiB"));
            }
            if let Err(e) = chime_params::check(param) {
                return Err(node_err(&n.key, "param", e));
            }
            if let (NodeJob::Code, Some(name)) = (kind, references(param).first()) {
                return Err(node_err(
                    &n.key,
                    "param",
                    format!(
                        "its job runs code (a script, or a handler such as 'shell'), so {{{{{name}.result}}}} \
                         would paste a result into code: read the upstream results as data, from the \
                         environment variable CHIME_UPSTREAM_RESULTS (JobContext::upstream_results)"
                    ),
                ));
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
        let index = self.indexes();
        let children = self.children(&index);
        let order = match self.order(&children) {
            Ok(order) => order,
            Err(stuck) => return Err(node_err(stuck, "edges", "is on a cycle of edges: it could never start")),
        };
        self.check_references(&index, &children, &order)
    }

    /// Checks that every `{{node.result}}` names an ancestor of its node. The ancestor sets are
    /// bitsets made in graph order (a node's: its parents' and the parents themselves), only
    /// when some parameter names a node. Walking the edges back from each such node instead
    /// cost 12.6 s of CPU for 1,000 nodes of 20 references each.
    fn check_references(
        &self,
        index: &HashMap<&str, usize>,
        children: &[Vec<usize>],
        order: &[usize],
    ) -> Result<(), Invalid> {
        let named: Vec<(usize, Vec<&str>)> = self
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| Some((i, references(n.param.as_deref()?))))
            .filter(|(_, names)| !names.is_empty())
            .collect();
        if named.is_empty() {
            return Ok(());
        }
        let words = self.nodes.len().div_ceil(64);
        let mut ancestors = vec![0u64; self.nodes.len() * words];
        for &i in order {
            for &child in &children[i] {
                // Parents come before children in `order`: the parent's set is complete.
                for w in 0..words {
                    ancestors[child * words + w] |= ancestors[i * words + w];
                }
                ancestors[child * words + i / 64] |= 1 << (i % 64);
            }
        }
        for (i, names) in named {
            let key = &self.nodes[i].key;
            for name in names {
                let upstream = index
                    .get(name)
                    .is_some_and(|&a| ancestors[i * words + a / 64] & (1 << (a % 64)) != 0);
                if !upstream {
                    return Err(node_err(
                        key,
                        "param",
                        format!("{{{{{name}.result}}}} names no upstream node of '{key}'"),
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

/// The results of an instance's nodes by key, for its next nodes' parameters and data.
pub type Results<'a> = HashMap<&'a str, &'a str>;

/// How [`resolve`] puts a result into a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paste {
    /// As it is: the job takes its parameter as data.
    Plain,
    /// As one shell word in single quotes (`'` written `'\''`): the job runs code
    /// ([`runs_code`]), and a result must not become part of it. A job changed into one after
    /// its workflow was checked still gets its results as data this way.
    ShellQuoted,
}

/// Why [`resolve`] made no parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLong;

/// `param` with each `{{key.result}}` replaced by that node's result message (`results`), as
/// `paste` says; a reference to a node without a result becomes empty (`''` quoted). Plain: cut
/// to [`MAX_PARAM_BYTES`]. Quoted: a parameter over the bound is refused ([`TooLong`]), since
/// a quoted word cut short would no longer be one.
pub fn resolve(param: &str, results: &Results<'_>, paste: Paste) -> Result<String, TooLong> {
    let mut out = String::with_capacity(param.len());
    let mut rest = param;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        out.push_str(&rest[..start]);
        match after[..end].trim().strip_suffix(".result") {
            Some(key) => {
                let value = results.get(key.trim()).copied().unwrap_or("");
                match paste {
                    Paste::Plain => out.push_str(value),
                    Paste::ShellQuoted => push_shell_quoted(&mut out, value),
                }
            }
            None => out.push_str(&rest[start..start + 2 + end + 2]),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    if out.len() > MAX_PARAM_BYTES {
        if paste == Paste::ShellQuoted {
            return Err(TooLong);
        }
        let mut cut = MAX_PARAM_BYTES;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
    }
    Ok(out)
}

/// Appends `value` as one shell word: single quotes, in which nothing is special but `'`
/// itself, written as `'\''` (close, an escaped quote, open again).
fn push_shell_quoted(out: &mut String, value: &str) {
    out.push('\'');
    for c in value.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
}

/// The upstream results a node's run carries as data: of `sources` (see [`Graph::sources`]),
/// those with a result, as a JSON object by node key; empty when none has one. At most
/// [`MAX_UPSTREAM_BYTES`]: a result that does not fit any more is left out.
pub fn upstream_json<'a>(sources: impl IntoIterator<Item = &'a str>, results: &Results<'_>) -> String {
    let mut picked: BTreeMap<&str, &str> = BTreeMap::new();
    // `{}` and, per entry, two quoted strings, a colon and a comma; escapes counted after.
    let mut size = 2;
    for key in sources {
        let Some(value) = results.get(key) else { continue };
        let entry = key.len() + value.len() + 6;
        if size + entry > MAX_UPSTREAM_BYTES {
            continue;
        }
        size += entry;
        picked.insert(key, value);
    }
    if picked.is_empty() {
        return String::new();
    }
    let mut json = serde_json::to_string(&picked).unwrap_or_default();
    // Escapes (quotes, control characters) make the JSON longer than counted: drop the
    // largest results until it fits.
    while json.len() > MAX_UPSTREAM_BYTES {
        let Some(largest) = picked.iter().max_by_key(|(_, v)| v.len()).map(|(k, _)| *k) else {
            return String::new();
        };
        picked.remove(largest);
        json = if picked.is_empty() {
            String::new()
        } else {
            serde_json::to_string(&picked).unwrap_or_default()
        };
    }
    json
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
    /// For each node, the nodes whose results its run carries as data (see [`Graph::sources`]).
    sources: Vec<Vec<usize>>,
}

/// What [`Graph::step`] decides, with nodes as indexes into the graph's nodes.
pub type IndexedStep = Step<usize>;

impl Graph {
    /// Prepares `def` for stepping.
    pub fn new(def: Definition) -> Graph {
        let index: HashMap<String, usize> = def.nodes.iter().enumerate().map(|(i, n)| (n.key.clone(), i)).collect();
        let order = {
            let keys = def.indexes();
            def.order(&def.children(&keys)).unwrap_or_default()
        };
        let mut incoming = vec![Vec::new(); def.nodes.len()];
        let mut handled = vec![false; def.nodes.len()];
        for e in &def.edges {
            let Some(&from) = index.get(&e.from) else { continue };
            handled[from] |= matches!(e.when, When::Failure | When::Always);
            if let Some(&to) = index.get(&e.to) {
                incoming[to].push((from, e.when));
            }
        }
        // Parents first, then the nodes the parameter names (an ancestor further up), each once.
        let sources = def
            .nodes
            .iter()
            .zip(&incoming)
            .map(|(n, parents)| {
                let mut from: Vec<usize> = parents.iter().map(|(p, _)| *p).collect();
                let named = n.param.as_deref().map(references).unwrap_or_default();
                from.extend(named.into_iter().filter_map(|k| index.get(k).copied()));
                let mut seen = HashSet::new();
                from.retain(|i| seen.insert(*i));
                from
            })
            .collect();
        Graph {
            def,
            order,
            incoming,
            handled,
            index,
            sources,
        }
    }

    /// The nodes whose results node `i`'s run carries as data: its parents, then the nodes its
    /// own parameter names. (A node run with its job's parameter gets its parents' results.)
    pub fn sources(&self, i: usize) -> impl Iterator<Item = &str> {
        self.sources
            .get(i)
            .into_iter()
            .flatten()
            .map(|k| self.def.nodes[*k].key.as_str())
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
                    flow: JobFlowPatch::default(),
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

    /// A job lookup for checks: job 1 takes its parameter as data, job 2 runs code.
    fn jobs(id: i64) -> Option<NodeJob> {
        match id {
            1 => Some(NodeJob::Data),
            2 => Some(NodeJob::Code),
            _ => None,
        }
    }

    #[test]
    fn definitions_are_checked_naming_the_node() {
        let ok = def(&[("a", All), ("b", All)], &[("a", "b", Success)]);
        assert!(ok.validate(jobs).is_ok());
        let err = |d: &Definition| d.validate(jobs).unwrap_err();
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
        assert!(good_ref.validate(jobs).is_ok());
        assert!(err(&Definition::default()).message.contains("at least one node"));
    }

    #[test]
    fn a_node_whose_job_runs_code_names_no_result_in_its_parameter() {
        let mut d = def(&[("a", All), ("b", All)], &[("a", "b", Success)]);
        d.nodes[1].job_id = 2;
        d.nodes[1].param = Some("echo {{a.result}}".into());
        let e = d.validate(jobs).unwrap_err();
        assert_eq!(e.field, "definition.nodes[b].param");
        assert!(
            e.message.contains("node 'b'") && e.message.contains("CHIME_UPSTREAM_RESULTS"),
            "{e:?}"
        );
        // A command without a reference is its own business; so is a data job's reference.
        d.nodes[1].param = Some("echo \"$CHIME_UPSTREAM_RESULTS\"".into());
        assert!(d.validate(jobs).is_ok());
        d.nodes[1].job_id = 1;
        d.nodes[1].param = Some("echo {{a.result}}".into());
        assert!(d.validate(jobs).is_ok());
        // Which jobs run code: every script type, and the handlers known to.
        assert!(runs_code(GlueType::GlueShell, ""));
        assert!(runs_code(GlueType::GlueGroovy, ""));
        assert!(runs_code(GlueType::GluePython, ""));
        assert!(runs_code(GlueType::Bean, "shell"));
        assert!(runs_code(GlueType::Bean, "commandJobHandler"));
        assert!(!runs_code(GlueType::Bean, "demoJobHandler"));
    }

    /// 1,000 nodes in a chain, each naming 20 nodes before it: every reference is checked,
    /// and each against the node's ancestors. Walking the edges back from each node took
    /// 12.6 s of CPU for this shape in a request.
    #[test]
    fn a_nodes_own_priority_and_key_are_bounded_like_a_jobs() {
        let jobs = |_| Some(NodeJob::Data);
        let mut d = def(&[("a", All)], &[]);
        d.nodes[0].flow.priority = Some(1000);
        d.nodes[0].flow.concurrency_key = Some(String::new());
        assert!(d.validate(jobs).is_ok(), "in bounds; \"\" takes the job's key away");
        d.nodes[0].flow.priority = Some(1001);
        assert_eq!(d.validate(jobs).unwrap_err().field, "definition.nodes[a].priority");
        d.nodes[0].flow.priority = Some(-5);
        d.nodes[0].flow.concurrency_key = Some("group:billing".into());
        let e = d.validate(jobs).unwrap_err();
        assert_eq!(e.field, "definition.nodes[a].concurrency_key");
        assert!(e.message.starts_with("node 'a': "), "{}", e.message);
        d.nodes[0].flow.concurrency_key = Some("warehouse-db".into());
        let flow = &d.nodes[0].flow;
        let job = crate::model::JobFlow {
            priority: 3,
            concurrency_key: "other".into(),
        };
        assert_eq!(flow.over(&job), (-5, "warehouse-db"), "the node's own, over its job's");
        assert_eq!(JobFlowPatch::default().over(&job), (3, "other"));
        // Read and written flat beside the node's other fields, and nothing else is taken.
        let node: Node = serde_json::from_str(r#"{"key":"a","job_id":1,"priority":2}"#).unwrap();
        assert_eq!(
            (node.flow.priority, node.flow.concurrency_key.as_deref()),
            (Some(2), None)
        );
        assert_eq!(serde_json::to_value(&node).unwrap()["priority"], 2);
        assert!(serde_json::from_str::<Node>(r#"{"key":"a","job_id":1,"priorty":2}"#).is_err());
    }

    #[test]
    fn a_thousand_nodes_of_twenty_references_each_are_checked() {
        let mut d = Definition::default();
        for i in 0..MAX_NODES {
            let param = (1..=20)
                .filter(|k| *k <= i)
                .map(|k| format!("{{{{n{}.result}}}}", i - k))
                .collect::<Vec<_>>()
                .join(",");
            d.nodes.push(Node {
                key: format!("n{i}"),
                job_id: 1,
                param: Some(param),
                join: All,
                flow: JobFlowPatch::default(),
            });
            if i > 0 {
                d.edges.push(Edge {
                    from: format!("n{}", i - 1),
                    to: format!("n{i}"),
                    when: Success,
                });
            }
        }
        let started = std::time::Instant::now();
        assert!(d.validate(jobs).is_ok());
        eprintln!("checked in {:?}", started.elapsed());
        // The last node names one that is not upstream of it: refused, naming it.
        d.nodes[MAX_NODES - 1].param = Some(format!("{{{{n{}.result}}}}", MAX_NODES - 1));
        d.nodes[0].param = Some("{{n999.result}}".into());
        let e = d.validate(jobs).unwrap_err();
        assert_eq!(e.field, "definition.nodes[n0].param");
    }

    #[test]
    fn results_are_passed_into_parameters() {
        let results: Results = [("a", "42 rows")].into_iter().collect();
        let plain = |p: &str, r: &Results| resolve(p, r, Paste::Plain).unwrap();
        assert_eq!(
            plain("n={{a.result}}; m={{ a.result }}", &results),
            "n=42 rows; m=42 rows"
        );
        assert_eq!(plain("{{x.result}}|{{other}}|{{", &results), "|{{other}}|{{");
        assert_eq!(references("{{a.result}} {{b.result}} {{c}}"), vec!["a", "b"]);
        let long = "é".repeat(40_000);
        let big: Results = [("a", long.as_str())].into_iter().collect();
        assert!(plain("{{a.result}}", &big).len() <= MAX_PARAM_BYTES);
    }

    #[test]
    fn a_result_pasted_into_code_is_one_quoted_word() {
        let evil = "x'; touch /tmp/pwned; echo '$(id)`id`\\";
        let results: Results = [("a", evil)].into_iter().collect();
        let quoted = resolve("echo {{a.result}} {{b.result}}", &results, Paste::ShellQuoted).unwrap();
        assert_eq!(quoted, "echo 'x'\\''; touch /tmp/pwned; echo '\\''$(id)`id`\\' ''");
        // What a shell makes of it: the result, as one argument, and an empty one.
        let out = std::process::Command::new("bash")
            .args(["-c", &format!("printf '[%s]' {}", &quoted["echo ".len()..])])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), format!("[{evil}][]"));
        // Quoted, a parameter over the bound is refused, not cut inside a quoted word.
        let long = "x".repeat(MAX_PARAM_BYTES);
        let big: Results = [("a", long.as_str())].into_iter().collect();
        assert_eq!(resolve("{{a.result}}", &big, Paste::ShellQuoted), Err(TooLong));
    }

    #[test]
    fn a_node_carries_its_parents_and_named_nodes_results_as_data() {
        let mut d = def(
            &[("a", All), ("b", All), ("c", All), ("d", All)],
            &[("a", "b", Success), ("b", "d", Success), ("c", "d", Always)],
        );
        d.nodes[3].param = Some("{{a.result}} {{b.result}}".into());
        let g = Graph::new(d);
        let d_sources: Vec<&str> = g.sources(3).collect();
        assert_eq!(d_sources, vec!["b", "c", "a"], "parents, then named nodes, each once");
        assert_eq!(g.sources(0).count(), 0);
        let results: Results = [("a", "1"), ("b", "say \"hi\"")].into_iter().collect();
        let json = upstream_json(g.sources(3), &results);
        let back: BTreeMap<String, String> = serde_json::from_str(&json).unwrap();
        assert_eq!(back.len(), 2, "c has no result: {json}");
        assert_eq!(back["b"], "say \"hi\"");
        assert_eq!(upstream_json(g.sources(0), &results), "", "a root carries nothing");
        // Bounded: results that do not fit are left out, the rest still go.
        let (x, y) = ("x".repeat(40_000), "\"".repeat(20_000));
        let results: Results = [("a", x.as_str()), ("b", "small"), ("c", y.as_str())]
            .into_iter()
            .collect();
        let json = upstream_json(g.sources(3), &results);
        assert!(json.len() <= MAX_UPSTREAM_BYTES, "{}", json.len());
        let back: BTreeMap<String, String> = serde_json::from_str(&json).unwrap();
        assert_eq!(back["b"], "small");
    }
}
