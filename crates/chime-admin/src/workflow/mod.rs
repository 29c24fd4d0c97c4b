//! Workflows: jobs as a DAG, each node run exactly once, across crashes and several admins —
//! the rules, without I/O, below the store that keeps them.
//!
//! `dag.rs` holds the graph and the rules of an instance's progress, `spec.rs` a workflow as
//! stored and as typed in, `live.rs` the running instances the loop keeps between its steps.
//! The loop that fires workflows and moves instances on is `schedule/workflows.rs`; each step is
//! one transaction of `store/workflow_steps.rs`.

pub mod dag;
pub mod live;
pub mod spec;
pub mod step;

use crate::run::WrittenResult;
use rustc_hash::FxHashMap;

/// Node runs recorded since the loop's last round, each with its result when the writer saw
/// it written (the step then has nothing to read of the run).
pub type Reported = FxHashMap<i64, Option<WrittenResult>>;
