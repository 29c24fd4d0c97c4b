//! Literal strings XXL-JOB peers send and match on.
//!
//! They are protocol facts: a user's alert rule or a test reading a rolling log may look for
//! exactly these texts, so Chime sends them byte for byte (full-width colon included).

/// Header carrying the shared access token on every call, both directions.
pub const ACCESS_TOKEN_HEADER: &str = "XXL-JOB-ACCESS-TOKEN";
/// Header carrying the executor's app name (G4 only).
pub const APPNAME_HEADER: &str = "XXL-JOB-APPNAME";

/// Seconds between two registry heartbeats of an executor.
pub const BEAT_TIMEOUT_SECS: u64 = 30;
/// Seconds without heartbeat after which an executor address counts as dead (3 × beat).
pub const DEAD_TIMEOUT_SECS: u64 = 90;

/// Reply to a request with the wrong (or a missing) access token.
pub const ACCESS_TOKEN_WRONG: &str = "The access token is wrong.";
/// Reply to a method other than POST.
pub const METHOD_NOT_SUPPORTED: &str = "invalid request, HttpMethod not support.";
/// Reply to an empty path.
pub const URI_MAPPING_EMPTY: &str = "invalid request, uri-mapping empty.";
/// Reply to a registry call with a blank field.
pub const ILLEGAL_ARGUMENT: &str = "Illegal Argument.";
/// `/kill` reply when no runner exists for the job.
pub const JOB_THREAD_ALREADY_KILLED: &str = "job thread already killed.";
/// `/idleBeat` reply when the job is running or queued here.
pub const JOB_THREAD_BUSY: &str = "job thread is running or has trigger queue.";
/// `/run` reply under DISCARD_LATER when the job is busy (note U+FF1A, the full-width colon).
pub const DISCARD_LATER_EFFECT: &str = "block strategy effect：Discard Later";
/// Stop reason of a runner replaced under COVER_EARLY.
pub const COVER_EARLY_EFFECT: &str = "block strategy effect：Cover Early";
/// Stop reason of a runner stopped by `/kill`.
pub const KILL_REASON: &str = "scheduling center kill job.";
/// Stop reason of a runner replaced because the handler or script changed.
pub const HANDLER_CHANGED_REASON: &str = "change jobhandler or glue type, and terminate the old job thread.";
/// Stop reason of a runner replaced because the script source changed.
pub const GLUE_CHANGED_REASON: &str = "change job source or glue type, and terminate the old job thread.";
/// Stop reason of runners stopped because the executor shuts down.
pub const SHUTDOWN_REASON: &str = "web container destroy and kill the job.";
/// Suffix of the result of a run that was stopped while running.
pub const KILLED_RUNNING_SUFFIX: &str = " [job running, killed]";
/// Suffix of the result of a run that was still queued when its runner stopped.
pub const KILLED_QUEUED_SUFFIX: &str = " [job not executed, in the job queue, killed.]";
/// Result message of a run whose `executorTimeout` expired (trailing space included).
pub const TIMEOUT_MSG: &str = "job execute timeout ";
/// `/log` content when the run's log file does not exist.
pub const LOG_FILE_NOT_EXISTS: &str = "readLog fail, logFile not exists";
/// Result message when a handler reported no code.
pub const RESULT_LOST: &str = "job handle result lost.";
/// Admin message for a run whose executor vanished before reporting.
pub const JOB_RESULT_LOST: &str = "Job result lost, marked as failure";

/// `/run` reply for a BEAN handler not registered here.
pub fn handler_not_found(name: &str) -> String {
    format!("job handler [{name}] not found.")
}

/// `/run` reply for a `glueType` the executor does not know.
pub fn glue_type_not_valid(glue_type: &str) -> String {
    format!("glueType[{glue_type}] is not valid.")
}

/// `/run` reply for a `logId` already queued on this runner (XXL-JOB 2.4's spelling).
pub fn repeated_trigger(log_id: i64) -> String {
    format!("repeate trigger job, logId:{log_id}")
}

/// Reply to a path the endpoint does not serve.
pub fn uri_not_found(uri: &str) -> String {
    format!("invalid request, uri-mapping({uri}) not found.")
}

/// Result message of a script that exited with a non-zero status.
pub fn script_exit_failed(code: i32) -> String {
    format!("script exit value({code}) is failed")
}

/// XXL-JOB 3.5 job API reply when the access token or the app name header is blank.
pub const TOKEN_OR_APPNAME_EMPTY: &str = "invalid request, accessToken or appname is empty.";
/// XXL-JOB 3.5 job API reply when the app name has no group or the token is not its group's.
pub const TOKEN_OR_APPNAME_INVALID: &str = "invalid request, accessToken or appname invalid.";
/// XXL-JOB 3.5 job API reply (with code 502) when its rate limit is exhausted.
pub const TOO_MANY_REQUESTS: &str = "Too many requests, please try again later.";
