//! The run types that pass between the scheduler, dispatch, the results writer and the store:
//! runs to create, runs to send, and what sending and running them produced.
//!
//! Plain data, no SQL: the store reads and writes them (`store/runs/`), and the follow-up rules
//! (`follow_up`) reason about them without a database. `crate::store` re-exports them.

use crate::api::JobFlowPatch;
use crate::business_days::BusinessDays;
use crate::model::Job;
use chime_protocol::TriggerType;
use std::sync::Arc;

/// Number of scheduling partitions: a job belongs to partition `id % PARTITIONS`. Fixed, because
/// the `partition_lease` rows are created by the first migration.
pub const PARTITIONS: i64 = 16;

/// XXL-JOB keeps at most this many characters of a run's result message; Chime keeps as many of
/// its trigger message too (see [`capped`]).
pub const HANDLE_MSG_MAX: usize = 15_000;

/// A run an executor accepted (or possibly received: see `Store::mark_sending`) and has not
/// reported on yet (see `Store::unfinished_runs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnfinishedRun {
    /// Run id.
    pub id: i64,
    /// Its job.
    pub job_id: i64,
    /// Its group.
    pub group_id: i64,
    /// The executor it was sent to.
    pub address: String,
    /// When it was sent, epoch ms.
    pub triggered_at: i64,
    /// The job's executor timeout in seconds (0 = none, or the job is gone).
    pub timeout_secs: i64,
}

/// A run about to be sent, as `Store::mark_sending` records it: by whom and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendMark {
    /// Run id.
    pub run_id: i64,
    /// Positive: the epoch of the lease of the run's partition under which it is sent (a
    /// scheduled run), which the database checks. Negative: the sending admin process's own
    /// token (a manual run, a retry, a child run: sent by the admin that made it).
    pub token: i64,
    /// The executor it goes to.
    pub address: String,
}

/// A scheduled run marked as being sent (a [`SendMark`] the database took) that has no
/// trigger result: possibly sent (`Store::marked_runs`).
#[derive(Debug, Clone)]
pub struct MarkedRun {
    /// The run, as it would be sent again.
    pub ticket: RunTicket,
    /// The lease epoch it was marked with.
    pub token: i64,
    /// The executor it was marked for.
    pub address: String,
    /// When it was marked, epoch ms: the `logDateTim` it was sent with, if it was.
    pub marked_at: i64,
    /// Its job's partition.
    pub partition: i64,
}

/// What a run sends its executor, and what its retries and child runs carry on from it: the
/// same for a run to create ([`NewRun`]), a run to send ([`RunTicket`]) and a run followed up
/// (`follow_up::RunFacts`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunPayload {
    /// Handler to send.
    pub handler: String,
    /// Parameter to send.
    pub param: String,
    /// A workflow node's upstream results, as data: a JSON object of strings by node key, sent
    /// beside the parameter (`TriggerParam::upstream_results`); empty for other runs.
    pub upstream: String,
    /// Shard index.
    pub shard_index: i64,
    /// Shard total.
    pub shard_total: i64,
    /// Retries still allowed after this run.
    pub retry_count: i64,
    /// Job ids of the parent chain (the cycle guard of child jobs), comma-separated.
    pub lineage: String,
    /// A workflow node's own priority and concurrency key, each over its job's when given
    /// (the node's [`JobFlowPatch`]); empty for other runs. Stored with the run, so its
    /// retries and a queue that outlives its admin keep them.
    pub flow: JobFlowPatch,
}

/// A run row to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRun {
    /// Job.
    pub job_id: i64,
    /// Group at fire time.
    pub group_id: i64,
    /// `Some(scheduled_at)` for fires made by the schedule: `(job_id, fire_key)` is unique, so
    /// the same scheduled fire can never be claimed twice. `None` for manual, retry, child and
    /// extra-shard runs.
    pub fire_key: Option<i64>,
    /// When it should run, epoch ms.
    pub scheduled_at: i64,
    /// Why.
    pub trigger_type: TriggerType,
    /// What it sends and carries on.
    pub payload: RunPayload,
    /// 0 (pending) or [`crate::model::SKIPPED_CODE`].
    pub trigger_code: i64,
    /// Message (why it was skipped).
    pub trigger_msg: String,
}

/// `param` with its date placeholders filled in for a fire at `fire_ms` in `zone`; `${bizdate}`
/// is the last business day of `business` before the fire's date when the schedule keeps to a
/// business calendar. A parameter that cannot be resolved is sent as written (see
/// `chime_params::resolve_or_keep`).
pub fn resolve_param(param: &str, fire_ms: i64, zone: &str, business: Option<&BusinessDays>) -> String {
    let previous = business.map(|b| move |d| b.previous_business_day(d));
    let previous = previous
        .as_ref()
        .map(|f| f as &dyn Fn(chrono::NaiveDate) -> Option<chrono::NaiveDate>);
    chime_params::resolve_or_keep_with(param, fire_ms, zone, previous).into_owned()
}

impl NewRun {
    /// The ticket of this run once stored with `id`.
    pub fn ticket(&self, id: i64) -> RunTicket {
        RunTicket {
            id,
            job_id: self.job_id,
            scheduled_at: self.scheduled_at,
            trigger_type: self.trigger_type,
            payload: self.payload.clone(),
        }
    }

    /// A pending run of `job` with the job's handler, param and retries; the param's date
    /// placeholders resolved from `scheduled_at` in the job's zone (`chime_params`).
    pub fn of_job(job: &Job, trigger_type: TriggerType, scheduled_at: i64, fire_key: Option<i64>) -> NewRun {
        NewRun {
            job_id: job.id,
            group_id: job.group_id,
            fire_key,
            scheduled_at,
            trigger_type,
            payload: RunPayload {
                handler: job.handler.clone(),
                param: resolve_param(&job.param, scheduled_at, &job.time_zone, job.business_days.as_deref()),
                upstream: String::new(),
                shard_index: 0,
                shard_total: 1,
                retry_count: job.retry_count,
                lineage: String::new(),
                flow: JobFlowPatch::default(),
            },
            trigger_code: 0,
            trigger_msg: String::new(),
        }
    }
}

/// What the dispatcher needs from a run row.
#[derive(Debug, Clone, PartialEq)]
pub struct RunTicket {
    /// Run id (`logId`).
    pub id: i64,
    /// Job id.
    pub job_id: i64,
    /// When to send it, epoch ms.
    pub scheduled_at: i64,
    /// Why.
    pub trigger_type: TriggerType,
    /// What it sends and carries on.
    pub payload: RunPayload,
}

/// The result of sending a run to an executor.
#[derive(Debug, Clone)]
pub struct TriggerOutcome {
    /// Run.
    pub run_id: i64,
    /// The run's job.
    pub job_id: i64,
    /// When it was sent, epoch ms.
    pub triggered_at: i64,
    /// Where (empty when routing found no address).
    pub address: String,
    /// 200 accepted, otherwise failed.
    pub code: i64,
    /// What happened.
    pub msg: String,
    /// Shard total used (broadcast fans out at send time).
    pub shard_total: i64,
    /// Trigger type as sent (a late pending run recovered after a crash becomes MISFIRE).
    pub trigger_type: TriggerType,
}

/// A run's result: from a callback, a kill, or the lost-run sweep.
#[derive(Debug, Clone)]
pub struct HandleOutcome {
    /// Run.
    pub run_id: i64,
    /// 200 success, otherwise failure.
    pub code: i64,
    /// Message.
    pub msg: Option<String>,
    /// Whether a failure may be retried (false for a run killed by a user).
    pub retry: bool,
    /// The lost-run sweep's verdict that the run's result will never come (recorded with the
    /// run's `lost_at`): the one failure a success reported afterwards may still replace.
    pub lost: bool,
}

/// What the scheduler decided for one due job.
#[derive(Debug, Clone)]
pub struct FirePlan {
    /// Run rows to claim (scheduled fires carry a `fire_key`).
    pub runs: Vec<NewRun>,
    /// The job's new `next_fire_at` (0 = never again).
    pub next_fire_at: i64,
    /// The job's new `last_fire_at`.
    pub last_fire_at: i64,
}

/// One claim round's result: what was claimed, per job.
#[derive(Debug, Default)]
pub struct Claimed {
    /// Jobs that had due fires, with the runs claimed for them (skipped misfires are not listed).
    pub jobs: Vec<(Arc<Job>, Vec<RunTicket>)>,
    /// True when the row limit was reached: call again right away.
    pub more: bool,
    /// Runs recorded as skipped misfires.
    pub skipped: usize,
}

/// What one results batch (`Store::record_batch`) did beyond writing the outcomes.
#[derive(Debug, Default)]
pub struct Recorded {
    /// The runs it created (retries, child jobs), to be put on the timer.
    pub follow_ups: Vec<RunTicket>,
    /// Runs whose failure it recorded and that no retry follows: their alarms are due.
    pub failed_for_good: Vec<i64>,
    /// Retries withdrawn before they were sent, because the run they retry succeeded after all
    /// (`follow_up::plan_late_success`): this admin's dispatcher must not send them.
    pub withdrawn: Vec<i64>,
    /// Results that ended their runs (a code other than 0), written and seen written: each run
    /// had none before (every row of the guarded statement was updated), so this is how the
    /// run ended, as the database now says. The workflow loop moves instances on from these
    /// without reading the runs again.
    pub written: Vec<WrittenResult>,
}

/// A run's result as a results batch wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenResult {
    /// The run.
    pub run_id: i64,
    /// Its result code (200 success).
    pub code: i64,
    /// Its result message, as stored.
    pub msg: String,
    /// When it was written (`handled_at`).
    pub at: i64,
}

/// `s` cut to its first [`HANDLE_MSG_MAX`] characters (the same string when it is shorter).
pub(crate) fn truncate(mut s: String) -> String {
    if s.len() > HANDLE_MSG_MAX {
        let at = capped(&s).len();
        s.truncate(at);
    }
    s
}

/// [`truncate`] without a copy: the first [`HANDLE_MSG_MAX`] characters of `s`. A run's trigger
/// message quotes the executor's reply, so it is capped like its result message.
pub(crate) fn capped(s: &str) -> &str {
    // Byte length bounds character count: the common short message needs no scan.
    if s.len() <= HANDLE_MSG_MAX {
        return s;
    }
    s.char_indices().nth(HANDLE_MSG_MAX).map_or(s, |(at, _)| &s[..at])
}

/// A run waiting for its time.
#[derive(Debug, Clone)]
pub struct WheelEntry {
    /// When to send it, epoch ms.
    pub due: i64,
    /// Its job (as read when it was claimed or created).
    pub job: Arc<Job>,
    /// The run.
    pub ticket: RunTicket,
    /// An address chosen by the user (manual trigger), bypassing the route strategy.
    pub address: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_cut_at_a_character_boundary() {
        assert_eq!(truncate("short".into()), "short");
        let long = "é".repeat(HANDLE_MSG_MAX + 3);
        let cut = truncate(long.clone());
        assert_eq!(cut.chars().count(), HANDLE_MSG_MAX);
        assert_eq!(capped(&long), cut);
        // Many bytes but few characters: nothing is cut.
        let wide = "é".repeat(HANDLE_MSG_MAX);
        assert_eq!(truncate(wide.clone()), wide);
    }
}
