//! The backfill driver: starts the waiting fire times of running backfills — a job's as runs, a
//! workflow's as instances —, at most `at_once` of each backfill under way, oldest (or newest)
//! first, and marks a backfill done once every fire time has run. Each admin drives the
//! backfills of the jobs and workflows whose partition it holds, so a backfill goes on after
//! its admin dies, from what the database holds: the fire times waiting, and what is under way.

use crate::model::now_ms;
use crate::pipeline::partitions::Partitions;
use crate::pipeline::wheel_queue::WheelQueue;
use crate::pipeline::workflow_wake::WorkflowWake;
use crate::store::{ActiveBackfill, BackfillTarget, NewRun, Store, StoreError, StoreResult};
use chime_protocol::TriggerType;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often the driver looks at the running backfills: a backfill's next run starts at most
/// this long after one of its runs ended.
pub const BACKFILL_ROUND: Duration = Duration::from_millis(500);

/// What the backfill driver works with.
#[derive(Debug)]
pub struct BackfillLoop {
    /// Where backfills, their fire times and runs are kept.
    pub(crate) store: Store,
    /// Only the backfills of jobs and workflows in partitions held here are driven from here.
    pub(crate) partitions: Arc<Partitions>,
    /// Where the runs started go to be sent.
    pub(crate) wheel: WheelQueue,
    /// Told of the node runs a workflow backfill's instances started, which move them on.
    pub(crate) workflows: Arc<WorkflowWake>,
    /// Cancelled to stop.
    pub(crate) shutdown: CancellationToken,
}

/// Runs rounds until shutdown.
pub async fn run(b: BackfillLoop) {
    loop {
        if let Err(e) = round(&b).await {
            tracing::warn!(error = %e, "backfill round failed; trying again at the next one");
        }
        tokio::select! {
            _ = b.shutdown.cancelled() => return,
            _ = tokio::time::sleep(BACKFILL_ROUND) => {}
        }
    }
}

/// One round over every running backfill whose target's partition this admin holds.
async fn round(b: &BackfillLoop) -> StoreResult<()> {
    for backfill in b.store.active_backfills().await? {
        if b.partitions.holds(backfill.partition) {
            drive(b, &backfill).await?;
        }
    }
    Ok(())
}

/// Starts as many waiting fire times of `backfill` as it has room for, or marks it done.
async fn drive(b: &BackfillLoop, backfill: &ActiveBackfill) -> StoreResult<()> {
    let (running, waiting) = b.store.backfill_next(backfill, backfill.at_once).await?;
    if waiting.is_empty() {
        if running == 0 && b.store.finish_backfill_if_done(backfill, now_ms()).await? {
            tracing::info!(backfill = backfill.id, target = ?backfill.target, "backfill done");
        }
        return Ok(());
    }
    let room = usize::try_from(backfill.at_once - running).unwrap_or(0);
    let next = &waiting[..room.min(waiting.len())];
    if next.is_empty() {
        return Ok(());
    }
    let started = match backfill.target {
        BackfillTarget::Job(job) => start_runs(b, backfill.id, job, next).await,
        BackfillTarget::Workflow(workflow) => {
            let tickets = b
                .store
                .start_backfill_instances(backfill.id, workflow, next, now_ms())
                .await;
            tickets.map(|tickets| {
                b.workflows.sent_by_api(tickets.iter().map(|(_, t)| t.id));
                super::workflows::enqueue(&b.wheel, tickets);
            })
        }
    };
    match started {
        // Deleted a moment ago: its backfills go with it.
        Err(StoreError::NotFound(_)) => Ok(()),
        other => other,
    }
}

/// Starts job `job`'s runs of backfill `id` for the fire times `at`.
async fn start_runs(b: &BackfillLoop, id: i64, job: i64, at: &[i64]) -> StoreResult<()> {
    let job = b.store.job(job).await?;
    // Each run is scheduled at its own fire time: its parameter's dates resolve to that time,
    // and the run lists show which fire it stands for. Being in the past, it is sent at once.
    let runs: Vec<NewRun> = at
        .iter()
        .map(|at| NewRun::of_job(&job, TriggerType::Backfill, *at, None))
        .collect();
    let tickets = b.store.start_backfill_runs(id, &runs).await?;
    if !tickets.is_empty() {
        tracing::debug!(backfill = id, started = tickets.len(), "backfill runs started");
        b.wheel.enqueue(Arc::new(job), tickets, None);
    }
    Ok(())
}
