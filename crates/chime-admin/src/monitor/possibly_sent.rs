//! Runs an admin marked as being sent and then perhaps never sent: the admin was killed, or
//! lost its lease, between the mark (`Store::mark_sending`) and the request. The mark keeps
//! every other admin from sending the run, so without this step the fire would be lost — found
//! only by the lost-run sweep, which fails it half a minute later.
//!
//! The holder that recovers the partition asks the run's executor whether the run arrived,
//! once the earlier holder's sends have ended, and sends the run again only if it did not:
//! `/idleBeat` says whether the job is running or queued there, `/log` whether the run has a
//! log (every executor writes one as a run starts, and XXL-JOB's answer "logFile not exists"
//! means it never did). An executor that is busy with the job, has the log, answers anything
//! else, or cannot be asked is taken to have the run: a run sent twice is worse than a run the
//! lost-run sweep fails and retries.

use crate::dispatch::client::{ExecutorClient, Target};
use crate::dispatch::gate::Gate;
use crate::pipeline::partitions::Partitions;
use crate::pipeline::wheel_queue::WheelQueue;
use crate::registry::Directory;
use crate::run::MarkedRun;
use crate::schedule::PossiblySent;
use crate::store::Store;
use chime_protocol::messages::LOG_FILE_NOT_EXISTS;
use chime_protocol::LogParam;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// What the check works with. Cheap to clone.
#[derive(Debug, Clone)]
pub struct PossiblySentCheck {
    /// Where the jobs are read and marks taken back.
    pub(crate) store: Store,
    /// The runs' groups (how to reach their executors).
    pub(crate) directory: Arc<Directory>,
    /// Asks executors (`/idleBeat`, `/log`).
    pub(crate) client: ExecutorClient,
    /// Bounds those probes, shared with the other probes.
    pub(crate) probe_gate: Arc<Gate>,
    /// Which partitions this admin holds, under which epoch.
    pub(crate) partitions: Arc<Partitions>,
    /// Where runs sent again go.
    pub(crate) wheel: WheelQueue,
    /// How long after a recovery the executors are asked: the longest a send that began
    /// before it can take to reach its executor.
    pub(crate) wait: Duration,
    /// Ends the check.
    pub(crate) shutdown: CancellationToken,
}

/// How long after a recovery the executors are asked, for executor calls that time out after
/// `executor_timeout`. An earlier holder's last send began before the partition was recovered
/// (its deadline ends before its lease lapses, and a lease is released only after its
/// partition stopped sending); the call connects and writes within the timeout. Twice that
/// leaves room for an executor slow to read a request that did arrive.
pub fn wait_after_recovery(executor_timeout: Duration) -> Duration {
    executor_timeout * 2
}

/// Settles each batch of possibly sent runs recovery finds, until shutdown.
pub async fn run(check: PossiblySentCheck, mut inbox: mpsc::UnboundedReceiver<PossiblySent>) {
    let tasks = TaskTracker::new();
    loop {
        let batch = tokio::select! {
            batch = inbox.recv() => batch,
            _ = check.shutdown.cancelled() => None,
        };
        let Some(batch) = batch else { break };
        let check = check.clone();
        tasks.spawn(async move { settle(&check, batch).await });
    }
    tasks.close();
    tasks.wait().await;
}

/// Waits for the earlier holders' sends to end, then asks each run's executor and sends again
/// the runs that never arrived, while this admin holds their partitions.
async fn settle(check: &PossiblySentCheck, batch: PossiblySent) {
    let at = tokio::time::Instant::from_std(batch.recovered) + check.wait;
    tokio::select! {
        _ = tokio::time::sleep_until(at) => {}
        _ = check.shutdown.cancelled() => return,
    }
    let mut job_ids: Vec<i64> = batch.runs.iter().map(|r| r.ticket.job_id).collect();
    job_ids.sort_unstable();
    job_ids.dedup();
    let jobs = match check.store.jobs_by_ids(&job_ids).await {
        Ok(jobs) => jobs.into_iter().map(|j| (j.id, Arc::new(j))).collect::<HashMap<_, _>>(),
        Err(e) => {
            tracing::warn!(error = %e, runs = batch.runs.len(), "could not read the jobs of possibly sent runs; they are left to the lost-run sweep");
            return;
        }
    };
    let (mut arrived, mut resent) = (0usize, 0usize);
    for run in batch.runs {
        if check.shutdown.is_cancelled() {
            return;
        }
        // Only the partition's holder settles its runs, under the epoch it holds now.
        let Some(epoch) = check.partitions.token(run.partition) else {
            continue;
        };
        let Some(job) = jobs.get(&run.ticket.job_id) else {
            continue;
        };
        let Some(group) = check.directory.group_or_reload(job.group_id).await else {
            continue;
        };
        if has_arrived(check, Target::of(&group, &run.address), &run).await {
            arrived += 1;
            continue;
        }
        match check.store.unmark(run.ticket.id, run.token, epoch).await {
            Ok(true) => {
                resent += 1;
                check.wheel.enqueue(job.clone(), vec![run.ticket], None);
            }
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(error = %e, run_id = run.ticket.id, "could not take back the mark of a run that never arrived; it is left to the lost-run sweep");
            }
        }
    }
    tracing::info!(arrived, resent, "settled runs an earlier holder marked as being sent");
}

/// Whether `run` may have reached the executor at `target` (see the module's text).
async fn has_arrived(check: &PossiblySentCheck, target: Target<'_>, run: &MarkedRun) -> bool {
    let Some(_pass) = check.probe_gate.enter(target.address).await else {
        return true;
    };
    if !check.client.idle_beat(target, run.ticket.job_id).await.is_success() {
        return true;
    }
    let param = LogParam {
        log_date_tim: run.marked_at,
        log_id: run.ticket.id,
        from_line_num: 1,
    };
    let log = check.client.log(target, &param).await;
    let never_started = log.is_success()
        && log
            .content
            .as_ref()
            .is_some_and(|page| page.log_content.trim() == LOG_FILE_NOT_EXISTS);
    !never_started
}
