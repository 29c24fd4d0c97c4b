//! The results writer: trigger results and run results are written in batches, one
//! transaction per batch, by a single task.
//!
//! Dispatch tasks and `/api/callback` hand their outcomes over a channel; the writer takes
//! everything queued (up to a batch limit), commits it with `Store::record_batch`, answers
//! the waiting callbacks, hands the runs that failed for good to the alarms, and puts the runs
//! the batch caused (retries, child jobs) on the timer. What an outcome causes is decided by
//! `crate::follow_up`, without a database. One database round trip per batch, not per run, is
//! what lets the admin keep up with tens of thousands of fires per second on SQLite.

use crate::model::Job;
use crate::pipeline::alarm_queue::AlarmQueue;
use crate::pipeline::results_queue::{ResultMsg, ResultsQueue};
use crate::pipeline::run_ids::RunIds;
use crate::pipeline::wheel_queue::WheelQueue;
use crate::run::{HandleOutcome, Recorded, RunTicket, TriggerOutcome};
use crate::store::{Backend, Store, StoreResult};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Most messages taken into one transaction: in practice everything queued. When the writer
/// falls behind, a run's callback queues behind trigger results sent after its own; taking only
/// the oldest few thousand would split most runs' two outcomes over two batches, and the one
/// write that records both (`Store::record_batch`) would stop happening exactly when it is
/// needed. (The claim loop waits while more than 20,000 outcomes are queued, which bounds this.)
const BATCH_MAX: usize = 100_000;

/// How long a batch the database refused is tried again before it is given up. Long enough
/// for a database restart or a failover of its server (seconds), so that no result is
/// dropped for one; meanwhile the backlog pauses claiming (`ResultsQueue`), and callbacks wait
/// for their write, so executors keep their results until it is done.
const RETRY_FOR: Duration = Duration::from_secs(60);

/// What the results writer works with.
#[derive(Debug)]
pub struct WriterLoop {
    /// Where the outcomes are recorded.
    pub(crate) store: Store,
    /// The writer's own inbox, for its count of outcomes not yet written.
    pub(crate) queue: ResultsQueue,
    /// Runs in flight: a written trigger result takes its run out.
    pub(crate) inflight: Arc<RunIds>,
    /// Runs a user is killing: their results start no retry.
    pub(crate) killing: Arc<RunIds>,
    /// Runs the dispatcher must not send: a batch adds the retries it withdrew (on SQLite, where
    /// no send is marked in the database first, this is what stops them).
    pub(crate) withdrawn: Arc<RunIds>,
    /// Where the retries and child runs a batch creates go.
    pub(crate) wheel: WheelQueue,
    /// Where the runs that failed for good go.
    pub(crate) alarms: AlarmQueue,
    /// `--executor-timeout`: how long a send still under way at shutdown may take.
    pub(crate) executor_timeout: Duration,
    /// Told after each batch: a workflow node's run may have finished.
    pub(crate) workflows: Arc<crate::pipeline::workflow_wake::WorkflowWake>,
    /// Told after each batch with results: runs ended, so slots of limits may have freed.
    pub(crate) flow: Arc<crate::pipeline::flow_limits::FlowLimits>,
    /// Cancelled to stop.
    pub(crate) shutdown: CancellationToken,
}

/// Runs the writer until shutdown. At shutdown it keeps writing while runs are still being
/// sent (bounded by the executor timeout), so a graceful stop leaves no run that was sent but
/// looks unsent — which the next start would send again.
pub async fn run(writer: WriterLoop, mut rx: mpsc::Receiver<ResultMsg>) {
    let mut buf: Vec<ResultMsg> = Vec::new();
    let mut drain_until: Option<tokio::time::Instant> = None;
    loop {
        let got = match drain_until {
            None => tokio::select! {
                n = rx.recv_many(&mut buf, BATCH_MAX) => n,
                _ = writer.shutdown.cancelled() => {
                    drain_until = Some(tokio::time::Instant::now() + writer.executor_timeout + Duration::from_secs(1));
                    continue;
                }
            },
            Some(deadline) => {
                if tokio::time::Instant::now() > deadline || (writer.inflight.is_empty() && rx.is_empty()) {
                    return;
                }
                match tokio::time::timeout(Duration::from_millis(50), rx.recv_many(&mut buf, BATCH_MAX)).await {
                    Ok(n) => n,
                    Err(_) => continue,
                }
            }
        };
        if got == 0 {
            return;
        }
        let batch = Batch::take(&writer, &mut buf);
        let recorded = record_with_retries(&writer, &batch, drain_until).await;
        for t in &batch.triggers {
            writer.inflight.remove(t.run_id);
        }
        writer.queue.done(batch.taken);
        match recorded {
            Ok(recorded) => after_batch(&writer, batch, recorded).await,
            Err(e) => {
                let (triggers, results) = (batch.triggers.len(), batch.handles.len());
                tracing::error!(error = %e, triggers, results, "recording results failed");
                for a in batch.acks {
                    let _ = a.send(Err(e.to_string()));
                }
            }
        }
    }
}

/// The messages taken into one transaction.
struct Batch {
    triggers: Vec<TriggerOutcome>,
    handles: Vec<HandleOutcome>,
    /// The senders waiting to learn that their results are committed.
    acks: Vec<oneshot::Sender<Result<(), String>>>,
    /// Outcomes taken from the inbox (for its count).
    taken: usize,
}

impl Batch {
    /// Takes everything in `buf`. The result of a run a user is killing starts no retry.
    fn take(writer: &WriterLoop, buf: &mut Vec<ResultMsg>) -> Batch {
        let mut batch = Batch {
            triggers: Vec::new(),
            handles: Vec::new(),
            acks: Vec::new(),
            taken: buf.iter().map(ResultMsg::outcomes).sum(),
        };
        for m in buf.drain(..) {
            match m {
                ResultMsg::Trigger(t) => batch.triggers.push(t),
                ResultMsg::Handle(h, ack) => {
                    batch.handles.extend(h.into_iter().map(|mut h| {
                        if h.retry && writer.killing.contains(h.run_id) {
                            h.retry = false;
                        }
                        h
                    }));
                    batch.acks.extend(ack);
                }
            }
        }
        batch
    }
}

/// Records `batch`, trying again for [`RETRY_FOR`] while the database refuses it (when
/// stopping, no longer than the drain allows).
async fn record_with_retries(
    writer: &WriterLoop,
    batch: &Batch,
    drain_until: Option<tokio::time::Instant>,
) -> StoreResult<Recorded> {
    let mut attempt = 0;
    let started = std::time::Instant::now();
    let recorded = loop {
        match writer.store.record_batch(&batch.triggers, &batch.handles).await {
            Ok(f) => break Ok(f),
            Err(e) if started.elapsed() < RETRY_FOR && drain_until.is_none_or(|d| tokio::time::Instant::now() < d) => {
                attempt += 1;
                tracing::warn!(error = %e, attempt, "recording results failed; retrying");
                tokio::time::sleep(Duration::from_millis(200 * attempt).min(Duration::from_secs(2))).await;
            }
            Err(e) => break Err(e),
        }
    };
    tracing::debug!(
        triggers = batch.triggers.len(),
        results = batch.handles.len(),
        took_ms = started.elapsed().as_millis() as u64,
        "results batch written"
    );
    recorded
}

/// After a committed batch: tells the workflow loop and the alarm task, remembers withdrawn
/// retries (SQLite), answers the waiting callbacks and puts the follow-up runs on the timer.
async fn after_batch(writer: &WriterLoop, batch: Batch, recorded: Recorded) {
    let failed_sends = batch.triggers.iter().filter(|t| t.code != 200).map(|t| t.run_id);
    let runs = batch.handles.iter().map(|h| h.run_id).chain(failed_sends);
    writer.workflows.results_written(runs, recorded.written);
    writer.alarms.after_commit(recorded.failed_for_good);
    if !batch.handles.is_empty() || batch.triggers.iter().any(|t| t.code != 200) {
        writer.flow.runs_ended();
    }
    // Elsewhere the send's mark refuses a withdrawn run, whichever admin holds it; remembered
    // there, the ids of runs other admins hold would never be let go.
    if writer.store.backend() == Backend::Sqlite {
        for id in recorded.withdrawn {
            writer.withdrawn.insert(id);
        }
    }
    for a in batch.acks {
        let _ = a.send(Ok(()));
    }
    enqueue_follow_ups(writer, recorded.follow_ups).await;
}

/// Puts the runs a batch caused on the timer, with their jobs.
async fn enqueue_follow_ups(writer: &WriterLoop, tickets: Vec<RunTicket>) {
    if tickets.is_empty() {
        return;
    }
    let mut ids: Vec<i64> = tickets.iter().map(|t| t.job_id).collect();
    ids.sort_unstable();
    ids.dedup();
    match writer.store.jobs_by_ids(&ids).await {
        Ok(jobs) => {
            let jobs: HashMap<i64, Arc<Job>> = jobs.into_iter().map(|j| (j.id, Arc::new(j))).collect();
            for t in tickets {
                if let Some(j) = jobs.get(&t.job_id) {
                    writer.wheel.enqueue(j.clone(), vec![t], None);
                }
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "loading jobs of follow-up runs failed; they stay pending until restart")
        }
    }
}
