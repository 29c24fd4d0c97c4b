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
//! A queued run that waited past its limit's queue timeout fails ("never sent"), so that its
//! job's retries and alarms follow; a scheduled fire of a job whose misfire policy is to do
//! nothing is skipped once it waited past the misfire threshold, as a claim would skip it.
//!
//! With no limit configured and nothing queued, a round is one read of the (empty) limits.

use crate::metrics::{LimitLabel, Metrics};
use crate::model::{now_ms, Job};
use crate::pipeline::flow_limits::FlowLimits;
use crate::pipeline::partitions::Partitions;
use crate::pipeline::results_queue::{ResultMsg, ResultsQueue};
use crate::pipeline::run_ids::RunIds;
use crate::pipeline::wheel_queue::WheelQueue;
use crate::store::{QueuedRun, Store, StoreResult, StoredLimit, TriggerOutcome};
use chime_protocol::{MisfireStrategy, TriggerType};
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
    /// Where runs that waited too long are failed (retries and alarms follow).
    pub(crate) results: ResultsQueue,
    /// `--misfire-threshold`: a scheduled fire queued longer past its time is a misfire.
    pub(crate) misfire_threshold_ms: i64,
    /// Each limit's running and queued runs, the time runs waited, the runs ended unsent.
    pub(crate) metrics: Arc<Metrics>,
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
    let limits: HashMap<String, StoredLimit> = q
        .store
        .limits()
        .await?
        .into_iter()
        .map(|l| (l.name.clone(), l))
        .collect();
    q.flow.set(limits.keys().cloned());
    if limits.is_empty() && !queue_seen {
        q.metrics.limit_running.clear();
        q.metrics.limit_queued.clear();
        return Ok(false);
    }
    q.store.release_slots().await?;
    report_usage(q).await?;
    let now = now_ms();
    // The whole queue, in its one order, though only the runs of partitions held here are
    // sent from here: a freed slot is kept for the run first in line, whichever admin holds it
    // (that admin sends it at its next round), so priority holds across admins.
    let held = q.partitions.held();
    let waiting = q.store.queued_runs(None, now, ROUND_SIZE).await?;
    if waiting.is_empty() {
        return Ok(!q.store.queue_is_empty().await?);
    }
    // Room left under each limit: free slots, and what its rate allows in this window.
    let mut room: HashMap<String, i64> = limits
        .values()
        .map(|l| {
            let slots = if l.rule.max_running > 0 {
                l.rule.max_running
            } else {
                i64::MAX
            };
            (l.name.clone(), slots.min(l.rate_room(now)))
        })
        .collect();
    for (name, used) in q.store.slots_in_use().await? {
        if let Some(r) = room.get_mut(&name) {
            if limits.get(&name).is_some_and(|l| l.rule.max_running > 0) {
                *r = r.saturating_sub(used);
            }
        }
    }
    let mut leaving = Vec::new();
    for run in waiting {
        let here = held.contains(&run.partition);
        if here && q.inflight.contains(run.run_id) {
            continue;
        }
        if !here {
            // Another admin's run: it keeps its place, and the room it will take.
            if let Some(r) = room.get_mut(&run.waits_on).filter(|r| **r > 0 || run.skip_queue) {
                *r = r.saturating_sub(1);
            }
            continue;
        }
        if let Some(end) = ended_in_queue(q, &run, limits.get(&run.waits_on), now) {
            if q.store.admit_queued(run.run_id, now).await? {
                end_in_queue(q, &run, end, now).await?;
                q.metrics.queue_ended.inc();
            }
            continue;
        }
        // A limit deleted since the run was queued has no say any more.
        let free = room.get(&run.waits_on).copied().unwrap_or(i64::MAX);
        if free <= 0 && !run.skip_queue {
            continue;
        }
        if !q.store.admit_queued(run.run_id, now).await? {
            continue;
        }
        if let Some(r) = room.get_mut(&run.waits_on) {
            *r = r.saturating_sub(1);
        }
        (q.metrics.queue_wait).observe((now - run.queued_at).max(0) as f64 / 1000.0);
        leaving.push(run.run_id);
    }
    send_on(q, &leaving).await?;
    Ok(true)
}

/// Sets each limit's running and queued gauges (a deleted limit's are dropped).
async fn report_usage(q: &QueueLoop) -> StoreResult<()> {
    let usage = q.store.limit_usage().await?;
    q.metrics.limit_running.clear();
    q.metrics.limit_queued.clear();
    for u in usage {
        let label = LimitLabel { limit: u.name };
        q.metrics.limit_running.get_or_create(&label).set(u.running);
        q.metrics.limit_queued.get_or_create(&label).set(u.queued);
    }
    Ok(())
}

/// How a queued run ends without being sent.
enum QueueEnd {
    /// Waited past its limit's queue timeout: failed, so that retries and alarms follow.
    TimedOut(String),
    /// A scheduled fire that waited past the misfire threshold, of a job whose misfire policy
    /// is to do nothing: skipped, as the claim would have skipped it.
    Misfired(String),
}

/// Whether `run` ends now without being sent, and how.
fn ended_in_queue(q: &QueueLoop, run: &QueuedRun, limit: Option<&StoredLimit>, now: i64) -> Option<QueueEnd> {
    if run.skip_queue {
        return None;
    }
    let waited = now - run.queued_at;
    if let Some(limit) = limit.filter(|l| l.rule.queue_timeout_ms > 0 && waited > l.rule.queue_timeout_ms) {
        return Some(QueueEnd::TimedOut(format!(
            "waited {} s in the queue for limit {}, past its queue timeout of {} s; never sent",
            waited / 1000,
            limit.name,
            limit.rule.queue_timeout_ms / 1000
        )));
    }
    let scheduled = matches!(run.trigger_type.parse(), Ok(TriggerType::Cron | TriggerType::Misfire));
    let late = now - run.scheduled_at;
    let do_nothing = run.misfire_strategy.parse() == Ok(MisfireStrategy::DoNothing);
    if scheduled && do_nothing && late > q.misfire_threshold_ms {
        return Some(QueueEnd::Misfired(format!(
            "skipped: waited in the queue for limit {} until {} s past its fire time, beyond the misfire threshold \
             (misfire policy DO_NOTHING)",
            run.waits_on,
            late / 1000
        )));
    }
    None
}

/// Ends `run`, taken out of the queue, as `end` says.
async fn end_in_queue(q: &QueueLoop, run: &QueuedRun, end: QueueEnd, now: i64) -> StoreResult<()> {
    match end {
        QueueEnd::TimedOut(why) => {
            let trigger_type = run.trigger_type.parse().unwrap_or(TriggerType::Api);
            q.results.send(ResultMsg::Trigger(TriggerOutcome {
                run_id: run.run_id,
                job_id: run.job_id,
                triggered_at: now,
                address: String::new(),
                code: 500,
                msg: format!("Trigger type：{}<br>{why}", trigger_type.title()),
                shard_total: run.shard_total,
                trigger_type,
            }));
        }
        QueueEnd::Misfired(why) => q.store.mark_skipped(&[run.run_id], &why).await?,
    }
    Ok(())
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
