//! What a job handler is: an async (or blocking) function of a [`JobContext`] that returns a
//! [`JobResult`], plus optional init/destroy hooks.

use crate::runlog::RunLog;
use chime_protocol::{FAIL_CODE, SUCCESS_CODE, TIMEOUT_CODE};
use futures::future::BoxFuture;
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Everything a handler knows about the run it is executing.
///
/// Cheap to clone: a handler may hand clones to the tasks it spawns so that they can log to the
/// run's log and notice cancellation.
#[derive(Clone)]
pub struct JobContext {
    pub(crate) job_id: i64,
    pub(crate) log_id: i64,
    pub(crate) log_date_time: i64,
    pub(crate) param: Arc<str>,
    pub(crate) upstream_results: Arc<BTreeMap<String, String>>,
    pub(crate) shard_index: i32,
    pub(crate) shard_total: i32,
    pub(crate) log: RunLog,
    pub(crate) cancel: CancellationToken,
}

impl JobContext {
    /// The job's id (`xxl_job_info.id` on an XXL-JOB admin).
    pub fn job_id(&self) -> i64 {
        self.job_id
    }

    /// The run's id: one per trigger; it names the run's log file.
    pub fn log_id(&self) -> i64 {
        self.log_id
    }

    /// The trigger time, epoch milliseconds (the day directory of the run's log).
    pub fn log_date_time(&self) -> i64 {
        self.log_date_time
    }

    /// The job parameter as configured on the admin (`executorParams`); empty when none.
    pub fn param(&self) -> &str {
        &self.param
    }

    /// For a run of a Chime workflow node: the results of its upstream nodes (its parents and
    /// the nodes its parameter names, those that succeeded), by node key. Data, never code:
    /// read a result here rather than through `{{node.result}}` in the parameter when the
    /// handler runs its parameter as a command. Empty for other runs and under XXL-JOB's
    /// admin. Script jobs and the `shell` handler get it as JSON in the environment variable
    /// `CHIME_UPSTREAM_RESULTS`.
    pub fn upstream_results(&self) -> &BTreeMap<String, String> {
        &self.upstream_results
    }

    /// This executor's shard index, from 0 (0 unless the job is routed SHARDING_BROADCAST).
    pub fn shard_index(&self) -> i32 {
        self.shard_index
    }

    /// The number of shards (1 unless the job is routed SHARDING_BROADCAST).
    pub fn shard_total(&self) -> i32 {
        self.shard_total
    }

    /// Appends one line to the run's log, the one the admin's console shows for this run.
    ///
    /// Lines are kept in memory until the handler first waits (`.await`s something that is
    /// not ready) and from then on handed at once to the executor's log-writer thread, so a
    /// person watching a long run through the admin sees progress while it happens (`/log`
    /// waits for the writer before reading). Failures to write are reported through
    /// `tracing`, never to the handler: a full disk must not fail the job itself.
    pub fn log(&self, message: impl fmt::Display) {
        self.log.line(&message.to_string());
    }

    /// The path of the run's log file, for handlers that want to attach it elsewhere. Lines
    /// reach the file shortly after they are logged (through the log-writer thread); the file
    /// is complete once the run's result has been reported. Asking for it gives the run a file
    /// of its own (a short run's log is otherwise packed with other runs' logs; see
    /// docs/executor.md, "Run logs").
    pub fn log_path(&self) -> &std::path::Path {
        self.log.go_live();
        self.log.path()
    }

    /// True once the run was killed, covered or timed out.
    ///
    /// Async handlers are stopped by being dropped at their next `.await`; blocking handlers
    /// (registered with [`crate::ExecutorBuilder::blocking_handler`]) cannot be interrupted and
    /// should poll this between steps.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Resolves when the run is killed, covered or timed out: select on it in a handler that
    /// owns resources needing explicit clean-up.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await
    }
}

impl fmt::Debug for JobContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobContext")
            .field("job_id", &self.job_id)
            .field("log_id", &self.log_id)
            .field("param", &self.param)
            .field("upstream_results", &self.upstream_results)
            .field("shard_index", &self.shard_index)
            .field("shard_total", &self.shard_total)
            .finish()
    }
}

/// A run's outcome as reported to the admin: `handleCode` and `handleMsg`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobResult {
    /// 200 success, 500 failure, 502 timeout (any positive code is passed through).
    pub code: i32,
    /// The message the admin shows next to the result.
    pub msg: Option<String>,
}

impl JobResult {
    /// Success without a message.
    pub fn success() -> Self {
        JobResult {
            code: SUCCESS_CODE,
            msg: None,
        }
    }

    /// Success with a message (shown as the run's result text).
    pub fn success_with(msg: impl Into<String>) -> Self {
        JobResult {
            code: SUCCESS_CODE,
            msg: Some(msg.into()),
        }
    }

    /// Failure with the reason: the admin records it, alarms and retries as configured.
    pub fn fail(msg: impl Into<String>) -> Self {
        JobResult {
            code: FAIL_CODE,
            msg: Some(msg.into()),
        }
    }

    /// Timeout (502), for handlers that enforce their own deadline.
    pub fn timeout(msg: impl Into<String>) -> Self {
        JobResult {
            code: TIMEOUT_CODE,
            msg: Some(msg.into()),
        }
    }

    /// True for code 200.
    pub fn is_success(&self) -> bool {
        self.code == SUCCESS_CODE
    }
}

/// What a handler may return: a [`JobResult`], `()` (success), a `String` (success with that
/// message), or a `Result` whose error becomes a failure with the error's text.
///
/// This is what lets handlers use `?` on any error that implements `Display` (`anyhow::Error`,
/// `std::io::Error`, `String`, …).
pub trait IntoJobResult {
    /// Converts into the reported outcome.
    fn into_job_result(self) -> JobResult;
}

impl IntoJobResult for JobResult {
    fn into_job_result(self) -> JobResult {
        self
    }
}

impl IntoJobResult for () {
    fn into_job_result(self) -> JobResult {
        JobResult::success()
    }
}

impl IntoJobResult for String {
    fn into_job_result(self) -> JobResult {
        JobResult::success_with(self)
    }
}

impl<T: IntoJobResult, E: fmt::Display> IntoJobResult for Result<T, E> {
    fn into_job_result(self) -> JobResult {
        match self {
            Ok(value) => value.into_job_result(),
            // `{:#}` prints anyhow's cause chain; other types ignore the flag.
            Err(err) => JobResult::fail(format!("{err:#}")),
        }
    }
}

type AsyncFn = dyn Fn(JobContext) -> BoxFuture<'static, JobResult> + Send + Sync;
type HookFn = dyn Fn() -> BoxFuture<'static, ()> + Send + Sync;

/// A named piece of work the admin can trigger: the function plus optional hooks.
///
/// Build one with [`Handler::new`] (async) or [`Handler::blocking`], or let
/// [`crate::ExecutorBuilder::handler`] do it.
#[derive(Clone)]
pub struct Handler {
    pub(crate) run: Arc<AsyncFn>,
    pub(crate) init: Option<Arc<HookFn>>,
    pub(crate) destroy: Option<Arc<HookFn>>,
    /// Runs whatever code its parameter names (the `shell` handler): an executor holding one
    /// must have an access token, as with script jobs.
    pub(crate) runs_code: bool,
}

impl Handler {
    /// An async handler. It runs on the executor's tokio runtime; kill and timeout drop its
    /// future, so it stops at its next `.await`.
    pub fn new<F, Fut, R>(f: F) -> Self
    where
        F: Fn(JobContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoJobResult + 'static,
    {
        let run = move |ctx: JobContext| -> BoxFuture<'static, JobResult> {
            let fut = f(ctx);
            Box::pin(async move { fut.await.into_job_result() })
        };
        Handler {
            run: Arc::new(run),
            init: None,
            destroy: None,
            runs_code: false,
        }
    }

    /// A blocking handler, run on tokio's blocking pool so that it cannot stall the HTTP
    /// server or other jobs. Kill and timeout report the run at once but cannot interrupt the
    /// thread: the function should check [`JobContext::is_cancelled`] between steps.
    pub fn blocking<F, R>(f: F) -> Self
    where
        F: Fn(JobContext) -> R + Send + Sync + 'static,
        R: IntoJobResult + 'static,
    {
        let f = Arc::new(f);
        let run = move |ctx: JobContext| -> BoxFuture<'static, JobResult> {
            let f = f.clone();
            Box::pin(async move {
                match tokio::task::spawn_blocking(move || f(ctx).into_job_result()).await {
                    Ok(result) => result,
                    // Re-raise so the runner reports the panic like an async handler's.
                    Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
                    Err(err) => JobResult::fail(err.to_string()),
                }
            })
        };
        Handler {
            run: Arc::new(run),
            init: None,
            destroy: None,
            runs_code: false,
        }
    }

    /// Runs `hook` once when a job starts using this handler on this executor (before its
    /// first run), like XXL-JOB's `@XxlJob(init = …)`: open a connection pool, warm a cache.
    pub fn with_init<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.init = Some(Arc::new(move || -> BoxFuture<'static, ()> { Box::pin(hook()) }));
        self
    }

    /// Runs `hook` once when the job's runner ends (idle, killed, replaced or shut down), like
    /// XXL-JOB's `@XxlJob(destroy = …)`.
    pub fn with_destroy<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.destroy = Some(Arc::new(move || -> BoxFuture<'static, ()> { Box::pin(hook()) }));
        self
    }
}

impl fmt::Debug for Handler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handler")
            .field("init", &self.init.is_some())
            .field("destroy", &self.destroy.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_convert_from_common_return_types() {
        assert_eq!(().into_job_result(), JobResult::success());
        assert_eq!("done".to_string().into_job_result(), JobResult::success_with("done"));
        let err: Result<(), std::io::Error> = Err(std::io::Error::other("disk full"));
        assert_eq!(err.into_job_result(), JobResult::fail("disk full"));
        let nested: Result<JobResult, String> = Ok(JobResult::timeout("slow"));
        assert_eq!(nested.into_job_result().code, TIMEOUT_CODE);
    }
}
