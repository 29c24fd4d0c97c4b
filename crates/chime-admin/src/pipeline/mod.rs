//! What the loops hand each other: their inboxes and the sets they share, each apart from the
//! loop that reads it, so a writer imports this folder and never a peer loop.
//!
//! Everything here is a channel's sending end, an atomic or a lock around a small set: no loop
//! logic and no I/O. The loops (`schedule/`, `dispatch/`, `results/`, `alarm/`, `monitor/`)
//! import it; it imports only the types that travel (`run.rs`, `model.rs`, `workflow/`).

pub mod alarm_queue;
pub mod flow_limits;
pub mod partitions;
pub mod results_queue;
pub mod run_ids;
pub mod wheel_queue;
pub mod workflow_wake;
