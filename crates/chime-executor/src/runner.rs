//! One runner per job id: a FIFO queue of triggers run one at a time, the block strategies,
//! kill, timeout, and reaping of idle runners (XXL-JOB's `JobThread`, as a tokio task).
//!
//! Differences from XXL-JOB that matter to callers:
//! - kill and timeout *stop* async handlers (their future is dropped) and scripts (the
//!   process group gets SIGKILL), instead of setting a flag the handler may ignore;
//! - a handler that finished before the kill took effect reports its real result, not
//!   "[job running, killed]";
//! - a `logId` that is already running here is rejected like one that is queued, so an
//!   admin's retry of the same run cannot execute it twice concurrently.

use crate::callback::CallbackSink;
use crate::handler::{Handler, JobContext, JobResult};
use crate::logship::LogShipper;
use crate::runlog::{self, LogWriter, RunLog};
use chime_protocol::messages::{self, KILLED_QUEUED_SUFFIX, KILLED_RUNNING_SUFFIX, TIMEOUT_MSG};
use chime_protocol::{BlockStrategy, GlueType, HandleCallbackParam, LogResult, TriggerParam, FAIL_CODE, TIMEOUT_CODE};
use futures::FutureExt;
use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Longest `handleMsg` sent to the admin (XXL-JOB's limit); longer ones are cut.
const MAX_HANDLE_MSG_CHARS: usize = 50_000;

/// What code a runner runs: replacing it (another handler name, another script version)
/// replaces the runner, as XXL-JOB replaces its job thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum JobKind {
    /// A registered handler, by name.
    Bean(Arc<str>),
    /// A script of a type and version (`glueUpdatetime`).
    Script(GlueType, i64),
}

impl JobKind {
    fn replace_reason(&self) -> &'static str {
        match self {
            JobKind::Bean(_) => messages::HANDLER_CHANGED_REASON,
            JobKind::Script(..) => messages::GLUE_CHANGED_REASON,
        }
    }
}

/// Shared settings every run needs.
pub(crate) struct RunEnv {
    pub(crate) log_dir: PathBuf,
    pub(crate) sink: CallbackSink,
    /// Writes the run logs; a run's result goes to `sink` only once its log is written.
    pub(crate) logs: LogWriter,
    /// Sends each finished run's log to the admin once it is written (`None`: not sent).
    pub(crate) shipper: Option<LogShipper>,
    pub(crate) idle_timeout: Duration,
    /// Called by the runner between handing a finished run's log to the writer and ending
    /// the run's active state, so that a test can read the log at exactly that moment.
    #[cfg(test)]
    pub(crate) finish_probe: Option<FinishProbe>,
}

/// See [`RunEnv::finish_probe`].
#[cfg(test)]
pub(crate) type FinishProbe = Arc<dyn Fn(&Runners, &TriggerParam) + Send + Sync>;

/// Why `/run` refused a trigger.
#[derive(Debug)]
pub(crate) struct Refused(pub(crate) String);

/// Every runner of this executor, by job id.
pub(crate) struct Runners {
    map: Mutex<HashMap<i64, Arc<Runner>>>,
    /// Log ids queued or running here: `/log` says `isEnd: false` for these.
    active_logs: Mutex<HashSet<i64>>,
    env: RunEnv,
    accepting: AtomicBool,
    tasks: TaskTracker,
}

struct Runner {
    job_id: i64,
    kind: JobKind,
    handler: Handler,
    state: Mutex<RunnerState>,
    wake: Notify,
    /// Cancelled when the runner is stopped (kill, cover, replacement, shutdown).
    stop: CancellationToken,
}

#[derive(Default)]
struct RunnerState {
    queue: VecDeque<TriggerParam>,
    running: Option<i64>,
    stop_reason: Option<String>,
    /// Set when the runner stopped or was reaped: it takes no more triggers.
    closed: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks cannot leave the data half-updated in a way
    // that matters more than refusing all further work would, so poisoning is ignored.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Runners {
    pub(crate) fn new(env: RunEnv) -> Arc<Runners> {
        Arc::new(Runners {
            map: Mutex::new(HashMap::new()),
            active_logs: Mutex::new(HashSet::new()),
            env,
            accepting: AtomicBool::new(true),
            tasks: TaskTracker::new(),
        })
    }

    /// The run log writer (`/run` waits for room in its queue).
    pub(crate) fn logs(&self) -> &LogWriter {
        &self.env.logs
    }

    /// `/log`: the page of a run's log from line `from_line_num`. `isEnd` is true only when
    /// the run is no longer active here, and activity is sampled *before* the writer is
    /// flushed and the log read: a run stops counting as active only after its last lines
    /// were handed to the writer (see [`Runners::finish_with_log`]), so a run reported
    /// finished always has its complete log readable.
    pub(crate) async fn read_log(&self, log_date_time: i64, log_id: i64, from_line_num: i32) -> LogResult {
        let finished = !self.is_active(log_id);
        // Everything handed to the log writer so far must be in the file first.
        self.env.logs.flush().await;
        let path = runlog::run_log_path(&self.env.log_dir, log_date_time, log_id);
        tokio::task::spawn_blocking(move || runlog::read_page(&path, from_line_num, finished))
            .await
            .expect("reading a log file does not panic")
    }

    /// Queues a trigger, applying the block strategy. Returns as soon as it is queued.
    pub(crate) fn submit(
        self: &Arc<Self>,
        trigger: TriggerParam,
        kind: JobKind,
        handler: impl FnOnce() -> Handler,
    ) -> Result<(), Refused> {
        if !self.accepting.load(Ordering::Acquire) {
            return Err(Refused("executor is shutting down; trigger not accepted.".to_owned()));
        }
        let job_id = trigger.job_id;
        let log_id = trigger.log_id;
        let mut map = lock(&self.map);
        let mut replaced: Option<(Arc<Runner>, &'static str)> = None;
        if let Some(runner) = map.get(&job_id).cloned() {
            let mut state = lock(&runner.state);
            if !state.closed {
                if runner.kind != kind {
                    drop(state);
                    replaced = Some((runner, kind.replace_reason()));
                } else {
                    let busy = state.running.is_some() || !state.queue.is_empty();
                    match trigger.executor_block_strategy {
                        BlockStrategy::DiscardLater if busy => {
                            return Err(Refused(messages::DISCARD_LATER_EFFECT.to_owned()));
                        }
                        BlockStrategy::CoverEarly if busy => {
                            drop(state);
                            replaced = Some((runner, messages::COVER_EARLY_EFFECT));
                        }
                        _ => {
                            if state.running == Some(log_id) || state.queue.iter().any(|t| t.log_id == log_id) {
                                return Err(Refused(messages::repeated_trigger(log_id)));
                            }
                            state.queue.push_back(trigger);
                            drop(state);
                            lock(&self.active_logs).insert(log_id);
                            runner.wake.notify_one();
                            return Ok(());
                        }
                    }
                }
            }
        }
        let runner = Arc::new(Runner {
            job_id,
            kind,
            handler: handler(),
            state: Mutex::new(RunnerState {
                queue: VecDeque::from([trigger]),
                ..Default::default()
            }),
            wake: Notify::new(),
            stop: CancellationToken::new(),
        });
        map.insert(job_id, runner.clone());
        drop(map);
        lock(&self.active_logs).insert(log_id);
        if let Some((old, reason)) = replaced {
            tracing::info!(job_id, reason, "replacing the job's runner");
            self.stop_runner(&old, reason);
        }
        let runners = self.clone();
        self.tasks.spawn(async move { runners.run_loop(runner).await });
        Ok(())
    }

    /// `/idleBeat`: is the job running or queued here?
    pub(crate) fn is_busy(&self, job_id: i64) -> bool {
        let map = lock(&self.map);
        map.get(&job_id).is_some_and(|r| {
            let state = lock(&r.state);
            !state.closed && (state.running.is_some() || !state.queue.is_empty())
        })
    }

    /// `/kill`: stops the job's runner; false when there was none.
    pub(crate) fn kill(&self, job_id: i64) -> bool {
        let runner = lock(&self.map).remove(&job_id);
        match runner {
            Some(runner) => {
                self.stop_runner(&runner, messages::KILL_REASON);
                true
            }
            None => false,
        }
    }

    /// Whether a run is queued or running here (its log is still growing).
    pub(crate) fn is_active(&self, log_id: i64) -> bool {
        lock(&self.active_logs).contains(&log_id)
    }

    /// Shutdown: refuse new triggers, let queued and running ones finish for up to `grace`,
    /// then stop the rest (they report "[job running, killed]" / "[… in the job queue, killed.]").
    /// Returns when every runner has ended and reported.
    pub(crate) async fn shutdown(&self, grace: Duration) {
        self.accepting.store(false, Ordering::Release);
        let deadline = tokio::time::Instant::now() + grace;
        while !lock(&self.active_logs).is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let runners: Vec<Arc<Runner>> = lock(&self.map).drain().map(|(_, r)| r).collect();
        for runner in &runners {
            self.stop_runner(runner, messages::SHUTDOWN_REASON);
        }
        self.tasks.close();
        self.tasks.wait().await;
    }

    fn stop_runner(&self, runner: &Runner, reason: &str) {
        let queued = {
            let mut state = lock(&runner.state);
            if state.stop_reason.is_some() {
                return;
            }
            state.stop_reason = Some(reason.to_owned());
            state.closed = true;
            std::mem::take(&mut state.queue)
        };
        runner.stop.cancel();
        // Queued runs are reported, not dropped: the admin would otherwise wait for them forever.
        for trigger in queued {
            self.finish(
                &trigger,
                JobResult {
                    code: FAIL_CODE,
                    msg: Some(format!("{reason}{KILLED_QUEUED_SUFFIX}")),
                },
            );
        }
    }

    fn finish(&self, trigger: &TriggerParam, result: JobResult) {
        lock(&self.active_logs).remove(&trigger.log_id);
        self.env.sink.send(callback_item(trigger, result));
    }

    /// Reports a run that has a log: the result is handed on once the writer has the whole
    /// log in the file, so an admin that has the result can always read the complete log.
    ///
    /// The order matters for `/log`: the log's last lines go to the writer's queue *before*
    /// the run stops counting as active. A `/log` call that finds the run inactive therefore
    /// queues its flush behind those lines and reads the complete log; had the run left the
    /// active set first, a call in between could flush, find no file yet, and answer
    /// "logFile not exists" with `isEnd: true` — ending the admin's polling of a run whose
    /// log was about to appear.
    fn finish_with_log(&self, trigger: &TriggerParam, result: JobResult, log: RunLog) {
        let sink = self.env.sink.clone();
        let item = callback_item(trigger, result);
        // The log goes to the admin after the result: the admin keeps a log only for a run
        // that has its result (or gets it in the same moment).
        let ship = self
            .env
            .shipper
            .clone()
            .map(|s| (s, trigger.log_id, trigger.log_date_time, log.path().to_owned()));
        log.close_then(Some(Box::new(move || {
            sink.send(item);
            if let Some((shipper, log_id, log_date_time, path)) = ship {
                shipper.send(log_id, log_date_time, path);
            }
        })));
        #[cfg(test)]
        if let Some(probe) = &self.env.finish_probe {
            probe(self, trigger);
        }
        lock(&self.active_logs).remove(&trigger.log_id);
    }

    async fn run_loop(self: Arc<Self>, runner: Arc<Runner>) {
        if let Some(init) = &runner.handler.init {
            // A hanging init hook must not keep a killed runner (or shutdown) waiting.
            tokio::select! {
                result = AssertUnwindSafe(init()).catch_unwind() => if result.is_err() {
                    tracing::error!(job_id = runner.job_id, "handler init hook panicked");
                },
                _ = runner.stop.cancelled() => {}
            }
        }
        loop {
            let next = {
                let mut state = lock(&runner.state);
                if state.stop_reason.is_some() {
                    break;
                }
                let next = state.queue.pop_front();
                state.running = next.as_ref().map(|t| t.log_id);
                next
            };
            match next {
                Some(trigger) => {
                    let (result, log) = self.execute(&runner, &trigger).await;
                    // Clear `running` before reporting so that an `/idleBeat` racing with the
                    // result already sees the job idle.
                    lock(&runner.state).running = None;
                    self.finish_with_log(&trigger, result, log);
                }
                None => {
                    tokio::select! {
                        _ = runner.wake.notified() => {}
                        _ = runner.stop.cancelled() => {}
                        _ = tokio::time::sleep(self.env.idle_timeout) => {
                            if self.reap(&runner) {
                                break;
                            }
                        }
                    }
                }
            }
        }
        if let Some(destroy) = &runner.handler.destroy {
            if AssertUnwindSafe(destroy()).catch_unwind().await.is_err() {
                tracing::error!(job_id = runner.job_id, "handler destroy hook panicked");
            }
        }
    }

    /// Ends an idle runner; false if work arrived meanwhile.
    fn reap(&self, runner: &Arc<Runner>) -> bool {
        {
            let mut state = lock(&runner.state);
            if state.running.is_some() || !state.queue.is_empty() || state.stop_reason.is_some() {
                return state.stop_reason.is_some();
            }
            state.closed = true;
        }
        let mut map = lock(&self.map);
        if map.get(&runner.job_id).is_some_and(|r| Arc::ptr_eq(r, runner)) {
            map.remove(&runner.job_id);
        }
        tracing::debug!(job_id = runner.job_id, "idle runner reaped");
        true
    }

    /// Runs one trigger; returns its result and its log, still to be closed.
    async fn execute(&self, runner: &Runner, trigger: &TriggerParam) -> (JobResult, RunLog) {
        let log = self
            .env
            .logs
            .open(&self.env.log_dir, trigger.log_date_time, trigger.log_id);
        log.line(&format!(
            "<br>----------- xxl-job job execute start -----------<br>----------- Param:{}",
            trigger.executor_params
        ));
        let run_cancel = runner.stop.child_token();
        let ctx = JobContext {
            job_id: trigger.job_id,
            log_id: trigger.log_id,
            log_date_time: trigger.log_date_time,
            param: Arc::from(trigger.executor_params.as_str()),
            upstream_results: Arc::new(trigger.upstream_results.clone()),
            shard_index: trigger.broadcast_index,
            shard_total: trigger.broadcast_total,
            log: log.clone(),
            cancel: run_cancel.clone(),
        };
        let mut work = std::pin::pin!(AssertUnwindSafe((runner.handler.run)(ctx)).catch_unwind());
        // The log goes to disk once the handler first waits (see `RunLog`).
        let live_log = log.clone();
        let mut live = false;
        let work = std::future::poll_fn(move |cx| {
            let poll = work.as_mut().poll(cx);
            if poll.is_pending() && !live {
                live = true;
                live_log.go_live();
            }
            poll
        });
        let timeout = u64::try_from(trigger.executor_timeout)
            .ok()
            .filter(|&s| s > 0)
            .map(Duration::from_secs);
        enum Outcome {
            Done(JobResult),
            Panicked(String),
            TimedOut,
            Stopped,
        }
        let outcome = tokio::select! {
            biased;
            // A handler that finished wins over a kill that arrived at the same moment.
            done = async {
                match timeout {
                    Some(limit) => tokio::time::timeout(limit, work).await.ok(),
                    None => Some(work.await),
                }
            } => match done {
                Some(Ok(result)) => Outcome::Done(result),
                Some(Err(panic)) => Outcome::Panicked(panic_message(&*panic)),
                None => Outcome::TimedOut,
            },
            _ = runner.stop.cancelled() => Outcome::Stopped,
        };
        // Blocking handlers cannot be dropped: tell them to stop.
        run_cancel.cancel();
        let result = match outcome {
            Outcome::Done(result) => validate(result),
            Outcome::Panicked(msg) => {
                log.line(&format!(
                    "<br>----------- JobThread Exception:{msg}<br>----------- xxl-job job execute end(error) -----------"
                ));
                JobResult::fail(format!("job handler panicked: {msg}"))
            }
            Outcome::TimedOut => {
                log.line("<br>----------- xxl-job job execute timeout");
                JobResult {
                    code: TIMEOUT_CODE,
                    msg: Some(TIMEOUT_MSG.to_owned()),
                }
            }
            Outcome::Stopped => {
                let reason = lock(&runner.state).stop_reason.clone().unwrap_or_default();
                log.line(&format!("<br>----------- JobThread toStop, stopReason:{reason}"));
                JobResult {
                    code: FAIL_CODE,
                    msg: Some(format!("{reason}{KILLED_RUNNING_SUFFIX}")),
                }
            }
        };
        log.line(&format!(
            "<br>----------- xxl-job job execute end(finish) -----------<br>----------- Result: handleCode={}, handleMsg = {}",
            result.code,
            result.msg.as_deref().unwrap_or("null")
        ));
        (result, log)
    }
}

fn callback_item(trigger: &TriggerParam, result: JobResult) -> HandleCallbackParam {
    HandleCallbackParam {
        log_id: trigger.log_id,
        log_date_tim: trigger.log_date_time,
        handle_code: result.code,
        handle_msg: result.msg,
    }
}

fn validate(mut result: JobResult) -> JobResult {
    if result.code <= 0 {
        return JobResult::fail(messages::RESULT_LOST);
    }
    if let Some(msg) = &mut result.msg {
        if let Some((cut, _)) = msg.char_indices().nth(MAX_HANDLE_MSG_CHARS) {
            msg.truncate(cut);
            msg.push_str("...");
        }
    }
    result
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::callback::{CallbackSink, Msg};
    use chime_protocol::messages::LOG_FILE_NOT_EXISTS;

    #[tokio::test]
    async fn a_finished_runs_log_is_readable_whenever_log_says_it_ended() {
        let dir = tempfile::tempdir().unwrap();
        let logs = LogWriter::start(false).unwrap();
        let (sink, results) = CallbackSink::for_tests();
        // What `/log` answers at the moment the runner finishes the run, between handing its
        // log to the writer and leaving the active set.
        let pages = Arc::new(Mutex::new(Vec::new()));
        let probe_pages = pages.clone();
        let probe: FinishProbe = Arc::new(move |runners: &Runners, trigger: &TriggerParam| {
            let page = futures::executor::block_on(runners.read_log(trigger.log_date_time, trigger.log_id, 1));
            lock(&probe_pages).push(page);
        });
        let runners = Runners::new(RunEnv {
            log_dir: dir.path().to_owned(),
            sink,
            logs: logs.clone(),
            shipper: None,
            idle_timeout: Duration::from_secs(90),
            finish_probe: Some(probe),
        });
        let trigger: TriggerParam = serde_json::from_value(serde_json::json!({
            "jobId": 1, "executorHandler": "quick", "logId": 7, "logDateTime": 1_586_629_003_729i64,
        }))
        .unwrap();
        let handler = Handler::new(|ctx: JobContext| async move {
            ctx.log("quick run");
            JobResult::success()
        });
        let kind = JobKind::Bean(Arc::from("quick"));
        runners
            .submit(trigger.clone(), kind, || handler)
            .map_err(|r| r.0)
            .unwrap();
        let reported = tokio::task::spawn_blocking(move || results.recv_timeout(Duration::from_secs(30)))
            .await
            .unwrap();
        assert!(matches!(reported, Ok(Msg::Result(item)) if item.log_id == 7));

        let during = lock(&pages).pop().expect("the probe ran");
        assert!(
            !(during.is_end && during.log_content == LOG_FILE_NOT_EXISTS),
            "isEnd came before the log was readable: {during:?}"
        );
        assert!(
            !during.is_end || during.log_content.contains(" quick run\n"),
            "{during:?}"
        );
        let after = runners.read_log(trigger.log_date_time, 7, 1).await;
        assert!(after.is_end, "{after:?}");
        assert!(after.log_content.contains(" quick run\n"), "{after:?}");
        tokio::task::spawn_blocking(move || logs.stop()).await.unwrap();
    }

    #[test]
    fn validation_fixes_lost_codes_and_cuts_long_messages() {
        assert_eq!(
            validate(JobResult { code: 0, msg: None }),
            JobResult::fail(messages::RESULT_LOST)
        );
        let long = validate(JobResult::fail("x".repeat(MAX_HANDLE_MSG_CHARS + 10)));
        assert_eq!(long.msg.unwrap().len(), MAX_HANDLE_MSG_CHARS + 3);
    }

    #[test]
    fn panic_messages_are_extracted() {
        let p = std::panic::catch_unwind(|| panic!("boom {}", 1)).unwrap_err();
        assert_eq!(panic_message(&*p), "boom 1");
    }
}
