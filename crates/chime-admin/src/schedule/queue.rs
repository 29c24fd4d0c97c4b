//! The queue's loop: sends runs that wait for a slot of a full limit when slots free.
//!
//! At each round (every tick, and at once when runs end or an operator sends a queued run on)
//! it reads the limits again (so a limit set through another admin applies here within a
//! round), gives back the slots of ended runs, and goes through the queued runs of the
//! partitions this admin schedules in their order — sent on by an operator first, then by
//! priority (a run gains a point for each minute it has waited, so none waits forever), then
//! the oldest. A run goes when the limit it waits on has a free slot; it is taken out of the
//! queue in the database first, so that of two admins only one sends it, and put on the timer.
//! Dispatch then takes its slots as for any run; should another run have taken the last slot
//! meanwhile, the run is queued again in its place.
//!
//! With no limit configured and nothing queued, a round is one read of the (empty) limits.

use crate::model::{now_ms, Job};
use crate::pipeline::flow_limits::FlowLimits;
use crate::pipeline::partitions::Partitions;
use crate::pipeline::run_ids::RunIds;
use crate::pipeline::wheel_queue::WheelQueue;
use crate::store::{Store, StoreResult};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Queued runs looked at per round at most.
const ROUND_SIZE: i64 = 1000;

/// What the queue's loop takes.
#[derive(Debug)]
pub struct QueueLoop {
    /// Where limits, slots and the queue are kept.
    pub(crate) store: Store,
    /// The limits as known here (refreshed each round), and the wake-up.
    pub(crate) flow: Arc<FlowLimits>,
    /// Only the queued runs of jobs in the partitions held here are sent from here.
    pub(crate) partitions: Arc<Partitions>,
    /// Runs in flight: a queued run on its way is not taken twice.
    pub(crate) inflight: Arc<RunIds>,
    /// Where runs leaving the queue go.
    pub(crate) wheel: WheelQueue,
    /// How often a round runs without a wake-up.
    pub(crate) tick: Duration,
    /// Cancelled to stop.
    pub(crate) shutdown: CancellationToken,
}

/// Runs rounds until shutdown.
pub async fn run(q: QueueLoop) {
    // Whether the last round saw runs in the queue: checked at start, whatever the limits.
    let mut queue_seen = true;
    loop {
        match round(&q, queue_seen).await {
            Ok(seen) => queue_seen = seen,
            Err(e) => tracing::warn!(error = %e, "queue round failed; trying again at the next tick"),
        }
        tokio::select! {
            _ = q.shutdown.cancelled() => return,
            _ = q.flow.woken() => {}
            _ = tokio::time::sleep(q.tick) => {}
        }
    }
}

/// One round; returns whether runs wait in the queue.
async fn round(q: &QueueLoop, queue_seen: bool) -> StoreResult<bool> {
    let limits: HashMap<String, i64> = q.store.limits().await?.into_iter().collect();
    q.flow.set(limits.clone());
    if limits.is_empty() && !queue_seen {
        return Ok(false);
    }
    q.store.release_slots().await?;
    let now = now_ms();
    let held = q.partitions.held();
    let waiting = q.store.queued_runs(Some(&held), now, ROUND_SIZE).await?;
    if waiting.is_empty() {
        return Ok(!q.store.queue_is_empty().await?);
    }
    let mut free = limits;
    for (name, used) in q.store.slots_in_use().await? {
        if let Some(f) = free.get_mut(&name) {
            *f -= used;
        }
    }
    let mut leaving = Vec::new();
    for run in waiting {
        if q.inflight.contains(run.run_id) {
            continue;
        }
        // A limit deleted since the run was queued has no say any more.
        let room = free.get(&run.waits_on).copied().unwrap_or(i64::MAX);
        if room <= 0 && !run.skip_queue {
            continue;
        }
        if !q.store.admit_queued(run.run_id, now).await? {
            continue;
        }
        if let Some(f) = free.get_mut(&run.waits_on) {
            *f -= 1;
        }
        leaving.push(run.run_id);
    }
    send_on(q, &leaving).await?;
    Ok(true)
}

/// Puts the runs `ids`, taken out of the queue, on the timer (due at once).
async fn send_on(q: &QueueLoop, ids: &[i64]) -> StoreResult<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let tickets = q.store.pending_tickets(ids).await?;
    let mut job_ids: Vec<i64> = tickets.iter().map(|t| t.job_id).collect();
    job_ids.sort_unstable();
    job_ids.dedup();
    let jobs: HashMap<i64, Arc<Job>> = q
        .store
        .jobs_by_ids(&job_ids)
        .await?
        .into_iter()
        .map(|j| (j.id, Arc::new(j)))
        .collect();
    for t in tickets {
        let Some(job) = jobs.get(&t.job_id) else { continue };
        q.wheel.enqueue(job.clone(), vec![t], None);
    }
    Ok(())
}
