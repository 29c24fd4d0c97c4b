//! The scheduling center's shared state ([`Admin`]) and the operations the REST API offers
//! (manual trigger, kill, log). Starting one is `start.rs`'s.

use crate::config::AdminConfig;
use crate::dispatch::client::{ExecutorClient, Target};
use crate::dispatch::route::Router;
use crate::metrics::Metrics;
use crate::model::{now_ms, Group, Job, Run, RunStatus};
use crate::registry::Directory;
use crate::results::msg::ResultMsg;
use crate::run::WheelEntry;
use crate::store::{HandleOutcome, NewRun, Store, StoreError};
use chime_protocol::{LogParam, LogResult, TriggerType};
use std::collections::{BTreeSet, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::{mpsc, Notify};
use tokio_util::sync::CancellationToken;

/// Why an operation requested through the API failed.
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    /// Bad input, naming the field.
    #[error(transparent)]
    Invalid(#[from] crate::model::Invalid),
    /// Store failure or missing row.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The run is not in a state that allows this.
    #[error("{0}")]
    Conflict(String),
    /// The executor refused or could not be reached.
    #[error("executor: {0}")]
    Executor(String),
}

/// The scheduling center's shared state. Every loop and handler holds an `Arc<Admin>`.
#[derive(Debug)]
pub struct Admin {
    /// Settings.
    pub config: AdminConfig,
    /// Database.
    pub store: Store,
    /// Groups and live executors.
    pub directory: Directory,
    /// Counters.
    pub metrics: Metrics,
    /// Client for executor calls.
    pub client: ExecutorClient,
    pub(crate) router: Router,
    pub(crate) wheel_tx: mpsc::UnboundedSender<WheelEntry>,
    results_tx: mpsc::Sender<ResultMsg>,
    /// Outcomes handed to the results writer and not yet written (see [`Admin::results_backlog`]).
    results_queued: AtomicUsize,
    /// Partitions this admin schedules: leased, and recovered since this process leased them
    /// (see `schedule::lease::balance` and `schedule::recover`).
    pub(crate) held: RwLock<BTreeSet<i64>>,
    inflight: Mutex<HashSet<i64>>,
    /// Runs a user is killing: the executor's own callback for such a run (it reports the
    /// kill, often before the admin records it) must not start a retry.
    killing: Mutex<HashSet<i64>>,
    /// Bounds concurrent sends of runs to executors, per address and in total.
    pub(crate) gate: crate::dispatch::gate::Gate,
    /// The same bounds for probes (`/beat`, `/idleBeat`), kept apart so that a probe, a quick
    /// question, never queues behind a slow executor's backlog of sends.
    pub(crate) probe_gate: crate::dispatch::gate::Gate,
    pub(crate) claim_notify: Notify,
    pub(crate) alarms: crate::alarm::queue::AlarmQueue,
    /// Cancelled to stop every loop.
    pub shutdown: CancellationToken,
}

/// The receiving ends of the channels an [`Admin`] sends on, for the loops that drain them.
#[derive(Debug)]
pub struct Channels {
    /// Runs due on the timer (`schedule::wheel`).
    pub wheel: mpsc::UnboundedReceiver<WheelEntry>,
    /// Outcomes to record (`results`).
    pub results: mpsc::Receiver<ResultMsg>,
    /// Runs to raise alarms for (`alarm`).
    pub alarms: mpsc::UnboundedReceiver<Vec<i64>>,
}

impl Admin {
    /// The shared state of an admin on `store`, and the channels its loops drain.
    pub fn new(config: AdminConfig, store: Store) -> (Admin, Channels) {
        let (wheel_tx, wheel_rx) = mpsc::unbounded_channel();
        let (results_tx, results_rx) = mpsc::channel(100_000);
        let (alarms, alarm_rx) = crate::alarm::queue::AlarmQueue::new();
        let admin = Admin {
            directory: Directory::new(store.clone(), config.dead_timeout),
            metrics: Metrics::new(),
            // Sends and probes each have `per_executor_concurrency` permits per executor.
            client: ExecutorClient::new(
                config.executor_timeout,
                config.access_token.clone(),
                config.per_executor_concurrency.saturating_mul(2),
                config.executor_networks.clone(),
            ),
            router: Router::default(),
            wheel_tx,
            results_tx,
            results_queued: AtomicUsize::new(0),
            held: RwLock::new(BTreeSet::new()),
            inflight: Mutex::new(HashSet::new()),
            killing: Mutex::new(HashSet::new()),
            gate: crate::dispatch::gate::Gate::new(config.dispatch_concurrency, config.per_executor_concurrency),
            probe_gate: crate::dispatch::gate::Gate::new(config.dispatch_concurrency, config.per_executor_concurrency),
            claim_notify: Notify::new(),
            alarms,
            shutdown: CancellationToken::new(),
            store,
            config,
        };
        let channels = Channels {
            wheel: wheel_rx,
            results: results_rx,
            alarms: alarm_rx,
        };
        (admin, channels)
    }

    pub(crate) fn send_result(&self, msg: ResultMsg) {
        self.results_queued.fetch_add(msg.outcomes(), Ordering::Relaxed);
        if let Err(e) = self.results_tx.try_send(msg) {
            // Full channel: wait for room from a task instead of blocking the caller.
            let tx = self.results_tx.clone();
            let msg = match e {
                mpsc::error::TrySendError::Full(m) | mpsc::error::TrySendError::Closed(m) => m,
            };
            tokio::spawn(async move {
                let _ = tx.send(msg).await;
            });
        }
    }

    /// Trigger results and run results handed to the results writer and not yet written. A
    /// callback batch counts as many results as it carries.
    pub fn results_backlog(&self) -> usize {
        self.results_queued.load(Ordering::Relaxed)
    }

    /// The results writer finished with `n` outcomes (written, or given up on).
    pub(crate) fn results_done(&self, n: usize) {
        // Saturating: never wraps, whatever the order of the two counters' updates.
        let _ = self
            .results_queued
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |q| Some(q.saturating_sub(n)));
    }

    /// Records results and waits for the commit.
    pub async fn record_results(&self, outcomes: Vec<HandleOutcome>) -> Result<(), String> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let n = outcomes.len();
        self.results_queued.fetch_add(n, Ordering::Relaxed);
        if self
            .results_tx
            .send(ResultMsg::Handle(outcomes, Some(tx)))
            .await
            .is_err()
        {
            self.results_done(n);
            return Err("admin is shutting down".to_owned());
        }
        rx.await.map_err(|_| "admin is shutting down".to_owned())?
    }

    pub(crate) fn mark_inflight(&self, run_id: i64) {
        self.inflight.lock().unwrap_or_else(|p| p.into_inner()).insert(run_id);
    }

    pub(crate) fn clear_inflight(&self, run_id: i64) {
        self.inflight.lock().unwrap_or_else(|p| p.into_inner()).remove(&run_id);
    }

    pub(crate) fn inflight_count(&self) -> usize {
        self.inflight.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub(crate) fn is_inflight(&self, run_id: i64) -> bool {
        self.inflight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&run_id)
    }

    pub(crate) fn holds_partition(&self, partition: i64) -> bool {
        self.held.read().unwrap_or_else(|p| p.into_inner()).contains(&partition)
    }

    /// Adds recovered partitions to the scheduling set: the claim loop may claim them now.
    pub(crate) fn start_scheduling(&self, partitions: &[i64]) {
        self.held
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .extend(partitions.iter().copied());
    }

    /// The partitions this admin schedules.
    pub fn held_partitions(&self) -> Vec<i64> {
        self.held
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .copied()
            .collect()
    }

    /// Wakes the claim loop (a job was started or rescheduled).
    pub fn wake_scheduler(&self) {
        self.claim_notify.notify_one();
    }

    /// Triggers a job now, outside its schedule: MANUAL (console/CLI), API, … Optional `param`
    /// replaces the job's; optional `address` must be one of the group's current addresses.
    /// Returns the new run's id.
    pub async fn trigger_job(
        &self,
        job_id: i64,
        trigger_type: TriggerType,
        param: Option<String>,
        address: Option<String>,
    ) -> Result<i64, OpError> {
        let job = self.store.job(job_id).await?;
        let address = match address {
            None => None,
            Some(a) => {
                use chime_protocol::paths::normalize_address;
                let a = normalize_address(&a).to_owned();
                let view = self.directory.view(job.group_id);
                let known = view
                    .as_ref()
                    .is_some_and(|v| v.addresses.iter().any(|r| normalize_address(r) == a));
                if !known {
                    let list = view
                        .map(|v| {
                            let bare: Vec<&str> = v.addresses.iter().map(|r| normalize_address(r)).collect();
                            bare.join(", ")
                        })
                        .unwrap_or_default();
                    return Err(crate::model::Invalid::new(
                        "address",
                        format!("'{a}' is not an executor of this job's group (current: [{list}])"),
                    )
                    .into());
                }
                Some(a)
            }
        };
        let mut run = NewRun::of_job(&job, trigger_type, now_ms(), None);
        if let Some(p) = param {
            run.param = p;
        }
        let tickets = self.store.insert_runs(&[run]).await?;
        let id = tickets
            .first()
            .map(|t| t.id)
            .ok_or_else(|| OpError::Conflict("run was not created".into()))?;
        self.enqueue(Arc::new(job), tickets, address);
        Ok(id)
    }

    /// Asks the executor running `run_id` to kill its job, and records the run as failed
    /// (without retry). Returns the executor's message.
    pub async fn kill_run(&self, run_id: i64) -> Result<Run, OpError> {
        let run = self.store.run(run_id).await?;
        if run.status != RunStatus::Running {
            return Err(OpError::Conflict(
                format!("run {run_id} is {:?}, not running", run.status).to_lowercase(),
            ));
        }
        let (job, group) = self.executor_of(&run).await?;
        self.killing.lock().unwrap_or_else(|p| p.into_inner()).insert(run_id);
        let result = self.kill_sent_run(&run, &job, &group).await;
        self.killing.lock().unwrap_or_else(|p| p.into_inner()).remove(&run_id);
        result?;
        Ok(self.store.run(run_id).await?)
    }

    /// Whether a user is killing this run right now.
    pub(crate) fn is_killing(&self, run_id: i64) -> bool {
        self.killing.lock().unwrap_or_else(|p| p.into_inner()).contains(&run_id)
    }

    async fn kill_sent_run(&self, run: &Run, job: &Job, group: &Group) -> Result<(), OpError> {
        let run_id = run.id;
        let reply = self.client.kill(Target::of(group, &run.executor_address), job.id).await;
        if !reply.is_success() {
            return Err(OpError::Executor(
                reply.msg.unwrap_or_else(|| format!("code {}", reply.code)),
            ));
        }
        let msg = format!(
            "Job killed by user through the admin (executor: {})",
            reply.msg.as_deref().unwrap_or("ok")
        );
        self.record_results(vec![HandleOutcome {
            run_id,
            code: 500,
            msg: Some(msg),
            retry: false,
        }])
        .await
        .map_err(OpError::Conflict)
    }

    async fn executor_of(&self, run: &Run) -> Result<(Job, Group), OpError> {
        if run.executor_address.is_empty() {
            return Err(OpError::Conflict(format!(
                "run {} was not sent to any executor",
                run.id
            )));
        }
        let job = self.store.job(run.job_id).await?;
        let group = self.store.group(run.group_id).await?;
        Ok((job, group))
    }

    /// Reads a run's log from its executor, from line `from_line` on. The log counts as
    /// complete once the run has a result (Java executors always say `isEnd: false`).
    pub async fn run_log(&self, run_id: i64, from_line: i32) -> Result<LogResult, OpError> {
        let run = self.store.run(run_id).await?;
        let group = self.store.group(run.group_id).await?;
        if run.executor_address.is_empty() {
            return Err(OpError::Conflict(format!(
                "run {run_id} was not sent to any executor, so it has no log"
            )));
        }
        let param = LogParam {
            log_date_tim: run.triggered_at,
            log_id: run.id,
            from_line_num: from_line.max(1),
        };
        let reply = self.client.log(Target::of(&group, &run.executor_address), &param).await;
        if !reply.is_success() {
            return Err(OpError::Executor(
                reply.msg.unwrap_or_else(|| format!("code {}", reply.code)),
            ));
        }
        let mut result = reply.content.unwrap_or(LogResult {
            from_line_num: from_line,
            to_line_num: from_line - 1,
            log_content: String::new(),
            is_end: false,
        });
        result.is_end = run.handle_code != 0;
        Ok(result)
    }
}
