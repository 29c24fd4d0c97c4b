//! The scheduling center as the HTTP server sees it ([`Admin`]), and every operation the APIs
//! offer on it. Each mutation is one method of [`Admin`] (in `ops/`) that checks its input,
//! writes, and wakes the loops the change concerns; the REST API, the console, XXL-JOB's job
//! API and `apply` all call the same methods, so none of them can write without the wake-up.
//! Reads stay with the handlers, on [`Admin::store`]. Starting an admin is `start.rs`'s.

mod error;
mod ops;
mod run_logs;

pub use error::OpError;
pub use ops::api_keys::KeyManager;
pub use ops::backfills::BackfillRequest;
pub use ops::jobs::ApplyMode;
pub use ops::users::UserFields;

use crate::config::AdminConfig;
use crate::dispatch::client::ExecutorClient;
use crate::link::LinkHub;
use crate::metrics::Metrics;
use crate::model::{now_ms, Job};
use crate::pipeline::partitions::Partitions;
use crate::pipeline::results_queue::ResultsQueue;
use crate::pipeline::run_ids::RunIds;
use crate::pipeline::wheel_queue::WheelQueue;
use crate::registry::Directory;
use crate::store::{HandleOutcome, Store};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The scheduling center as the HTTP server sees it: its handlers share one `Arc<Admin>`. It
/// holds the parts the API needs, each shared with the loops that need it too (`start.rs`
/// hands every loop its own parts, not this).
#[derive(Debug)]
pub struct Admin {
    /// Settings.
    pub config: AdminConfig,
    /// Database.
    pub store: Store,
    /// Groups and live executors.
    pub directory: Arc<Directory>,
    /// Counters.
    pub metrics: Arc<Metrics>,
    /// Client for executor calls.
    pub client: ExecutorClient,
    /// Executors linked to this admin (see [`crate::link`]).
    pub links: Arc<LinkHub>,
    /// The secret the admins of this database share, which a relayed call must show (see
    /// [`crate::link::CLUSTER_SECRET_HEADER`]).
    pub(crate) cluster_secret: String,
    /// The partitions this admin schedules, and the claim loop's wake-up.
    pub(crate) partitions: Arc<Partitions>,
    /// Where manually triggered runs go.
    pub(crate) wheel: WheelQueue,
    /// The results writer's inbox.
    pub(crate) results: ResultsQueue,
    /// Runs a user is killing (see [`RunIds`]).
    pub(crate) killing: Arc<RunIds>,
    /// Runs withdrawn before their send (a stopped workflow instance's): the dispatcher drops
    /// them (see [`RunIds`]).
    pub(crate) withdrawn: Arc<RunIds>,
    /// Wakes the workflow loop after an operation on a workflow.
    pub(crate) workflows: Arc<crate::pipeline::workflow_wake::WorkflowWake>,
    /// The limits on running runs as known here, and the queue's wake-up.
    pub(crate) flow: Arc<crate::pipeline::flow_limits::FlowLimits>,
    /// Permits of the XXL-JOB 3.5 job API (`/api/addJob`, …): 100 calls per 30 s per executor
    /// group (by id).
    pub(crate) job_api_permits: crate::rate_limit::KeyedBuckets<i64>,
    /// Cancelled to stop every loop.
    pub shutdown: CancellationToken,
}

impl Admin {
    /// Trigger results and run results handed to the results writer and not yet written. A
    /// callback batch counts as many results as it carries.
    pub fn results_backlog(&self) -> usize {
        self.results.backlog()
    }

    /// Records results and waits for the commit. Fails when the results writer did not write
    /// them (the database failed past its retries, or the admin is shutting down).
    pub async fn record_results(&self, outcomes: Vec<HandleOutcome>) -> Result<(), OpError> {
        self.results.record(outcomes).await.map_err(OpError::Unavailable)
    }

    /// The partitions this admin schedules.
    pub fn held_partitions(&self) -> Vec<i64> {
        self.partitions.held()
    }

    /// Wakes the claim loop (a job was started or rescheduled).
    pub fn wake_scheduler(&self) {
        self.partitions.wake_claims();
    }

    /// Wakes the claim loop if `job` (just created, changed or started) is due within the
    /// lookahead. A job due later is claimed ahead of its time by a regular round (rounds come
    /// every tick, and each claims up to a lookahead ahead); waking for it would only cost a
    /// claim transaction per API call, which is what creating jobs in bulk used to pay.
    pub fn wake_scheduler_for(&self, job: &Job) {
        let horizon = now_ms().saturating_add(self.config.lookahead.as_millis() as i64);
        if job.running && job.next_fire_at <= horizon && job.paused_until <= horizon {
            self.partitions.wake_claims();
        }
    }

    /// Reloads the directory after a change to groups, so that dispatch sends to the changed
    /// addresses at once. A failed reload is only logged: the change is written, and the
    /// directory's own refresh picks it up within its period.
    pub(crate) async fn refresh_directory(&self) {
        if let Err(e) = self.directory.refresh().await {
            tracing::warn!(error = %e, "registry refresh after a change failed");
        }
    }
}
