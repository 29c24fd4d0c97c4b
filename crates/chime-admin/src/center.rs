//! The scheduling center's state as the HTTP server sees it ([`Admin`]), and the operations the
//! REST API offers (manual trigger, kill, log). Starting one is `start.rs`'s.

use crate::config::AdminConfig;
use crate::dispatch::client::{ExecutorClient, Target};
use crate::link::LinkHub;
use crate::metrics::Metrics;
use crate::model::{now_ms, Group, Job, Run, RunStatus};
use crate::pipeline::partitions::Partitions;
use crate::pipeline::results_queue::ResultsQueue;
use crate::pipeline::run_ids::RunIds;
use crate::pipeline::wheel_queue::WheelQueue;
use crate::registry::Directory;
use crate::store::{HandleOutcome, NewRun, Store, StoreError, StoredLog};
use chime_protocol::{LogParam, LogResult, RunLogParam, TriggerType, MAX_RUN_LOG_BYTES};
use std::sync::Arc;
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
    /// The caller may not act on this object.
    #[error("{0}")]
    Forbidden(String),
    /// The executor refused or could not be reached.
    #[error("executor: {0}")]
    Executor(String),
}

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

    /// Records results and waits for the commit.
    pub async fn record_results(&self, outcomes: Vec<HandleOutcome>) -> Result<(), String> {
        self.results.record(outcomes).await
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
        if job.running && job.next_fire_at <= horizon {
            self.partitions.wake_claims();
        }
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
            Some(a) => Some(self.check_trigger_address(job.group_id, &a)?),
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
        self.wheel.enqueue(Arc::new(job), tickets, address);
        Ok(id)
    }

    /// Checks an address a manual trigger names: it must be one of the group's current
    /// executors (the admin calls no address a caller makes up). Returns it normalised.
    pub fn check_trigger_address(&self, group_id: i64, address: &str) -> Result<String, OpError> {
        use chime_protocol::paths::normalize_address;
        let a = normalize_address(address).to_owned();
        let view = self.directory.view(group_id);
        let known = view
            .as_ref()
            .is_some_and(|v| v.addresses.iter().any(|r| normalize_address(r) == a));
        if known {
            return Ok(a);
        }
        let list = view
            .map(|v| {
                let bare: Vec<&str> = v.addresses.iter().map(|r| normalize_address(r)).collect();
                bare.join(", ")
            })
            .unwrap_or_default();
        Err(crate::model::Invalid::new(
            "address",
            format!("'{a}' is not an executor of this job's group (current: [{list}])"),
        )
        .into())
    }

    /// Asks the executor running `run_id` to kill its job, and records the run as failed
    /// (without retry) and killed by `by` (a user name). Returns the run as it is then.
    pub async fn kill_run(&self, run_id: i64, by: &str) -> Result<Run, OpError> {
        let run = self.store.run(run_id).await?;
        if run.status != RunStatus::Running {
            return Err(OpError::Conflict(
                format!("run {run_id} is {:?}, not running", run.status).to_lowercase(),
            ));
        }
        let (job, group) = self.executor_of(&run).await?;
        self.killing.insert(run_id);
        let result = self.kill_sent_run(&run, &job, &group).await;
        self.killing.remove(run_id);
        result?;
        // Only now: the executor accepted the kill, and the run's failure is recorded (by the
        // kill's result, or by the executor's own report of the kill that came first).
        self.store.mark_killed(run_id, by).await?;
        Ok(self.store.run(run_id).await?)
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
            lost: false,
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

    /// Reads a run's log from line `from_line` on: the admin's stored copy once the run is
    /// final and its executor sent its whole log ([`Admin::store_run_log`]), else its
    /// executor's (as XXL-JOB reads it), else — the executor cannot be reached or no longer has
    /// it — whatever is stored (a cut copy too). The log counts as complete once the run has a
    /// result (Java executors always say `isEnd: false`).
    pub async fn run_log(&self, run_id: i64, from_line: i32) -> Result<LogPage, OpError> {
        let run = self.store.run(run_id).await?;
        let finished = run.handle_code != 0;
        // Read for a final run only: an open run is polled about once a second while its log
        // grows, and its copy (if one came before its result) is needed only as the fallback.
        let stored = if finished {
            self.store.stored_run_log(run_id).await?
        } else {
            None
        };
        // A cut copy holds only the log's end, numbered from its own first line: while the
        // executor still has the whole log, its numbering (which a reader polling the run
        // already follows) and its complete text are better.
        if let Some(log) = stored.as_ref().filter(|l| !l.truncated) {
            return Ok(LogPage::stored(log, from_line, true));
        }
        if run.executor_address.is_empty() {
            return Err(OpError::Conflict(format!(
                "run {run_id} was not sent to any executor, so it has no log"
            )));
        }
        let group = self.store.group(run.group_id).await?;
        let param = LogParam {
            log_date_tim: run.triggered_at,
            log_id: run.id,
            from_line_num: from_line.max(1),
        };
        let reply = self.client.log(Target::of(&group, &run.executor_address), &param).await;
        if !reply.is_success() {
            let stored = match stored {
                None if !finished => self.store.stored_run_log(run_id).await?,
                read => read,
            };
            return match &stored {
                Some(log) => Ok(LogPage::stored(log, from_line, finished)),
                None => Err(OpError::Executor(
                    reply.msg.unwrap_or_else(|| format!("code {}", reply.code)),
                )),
            };
        }
        let mut result = reply.content.unwrap_or(LogResult {
            from_line_num: from_line,
            to_line_num: from_line - 1,
            log_content: String::new(),
            is_end: false,
        });
        result.is_end = finished;
        Ok(LogPage {
            page: result,
            stored: false,
        })
    }

    /// Keeps the log a Chime executor sent for run `param.log_id` (`POST /api/runLog`), cut to
    /// its last [`MAX_RUN_LOG_BYTES`]. The run must exist, have been sent to an executor, and
    /// belong to the group of `param.app_name` — the app name the caller registers under,
    /// whose access token `token_allows` checks. Returns whether it was stored: false when the
    /// run's group does not keep logs.
    pub async fn store_run_log(
        &self,
        param: &RunLogParam,
        token_allows: impl FnOnce(&Group) -> bool,
    ) -> Result<bool, OpError> {
        let run_id = param.log_id;
        let Some(target) = self.store.run_log_target(run_id).await? else {
            return Err(crate::model::Invalid::new("logId", format!("run {run_id} does not exist")).into());
        };
        let group = self.store.group(target.group_id).await?;
        if group.app_name != param.app_name.trim() || !token_allows(&group) {
            return Err(OpError::Forbidden(format!(
                "run {run_id} does not belong to the group of app name '{}'",
                param.app_name.chars().take(64).collect::<String>()
            )));
        }
        if !target.keep_logs {
            return Ok(false);
        }
        // The sender's cap may be larger than the admin's: the admin keeps the end, as the
        // executor would have cut it.
        let cut = (param.log_content.len() > MAX_RUN_LOG_BYTES).then(|| {
            RunLogParam::from_log(
                &param.app_name,
                run_id,
                param.log_date_tim,
                param.log_content.as_bytes(),
                MAX_RUN_LOG_BYTES,
            )
        });
        let content = cut
            .as_ref()
            .map_or(param.log_content.as_str(), |c| c.log_content.as_str());
        let total = param.total_bytes.max(param.log_content.len() as u64);
        let truncated = param.truncated || cut.is_some();
        let total = i64::try_from(total).unwrap_or(i64::MAX);
        Ok(self.store.put_run_log(run_id, content, truncated, total).await?)
    }
}

/// A page of a run's log, and where it was read.
#[derive(Debug, Clone)]
pub struct LogPage {
    /// The lines from the asked line on.
    pub page: LogResult,
    /// Read from the admin's stored copy (true) or from the executor.
    pub stored: bool,
}

impl LogPage {
    /// The page of a stored log from line `from_line`; a log whose start was cut begins with a
    /// line saying so.
    fn stored(log: &StoredLog, from_line: i32, finished: bool) -> LogPage {
        let from = from_line.max(1);
        let note = log.truncated.then(|| {
            format!(
                "[chime] log cut: the first {} of {} bytes were not kept; the last {} follow",
                (log.total_bytes as u64).saturating_sub(log.content.len() as u64),
                log.total_bytes,
                log.content.len()
            )
        });
        let mut content = String::new();
        let mut line_no: i32 = 0;
        for line in note.iter().map(String::as_str).chain(log.content.lines()) {
            line_no = line_no.saturating_add(1);
            if line_no >= from {
                content.push_str(line);
                content.push('\n');
            }
        }
        LogPage {
            page: LogResult {
                from_line_num: from,
                to_line_num: line_no,
                log_content: content,
                is_end: finished,
            },
            stored: true,
        }
    }
}
