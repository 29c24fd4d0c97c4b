//! What follows a run's outcome — the rules, without a database.
//!
//! A send that failed, or a run that failed, is retried while retries remain: a new run of the
//! same job and shard, with one retry fewer and the same parent chain, unless the failure may
//! not be retried (a run killed by a user). A successful run of a job with children fires each
//! child (as XXL-JOB does, the lines saying so are appended to the run's message), except a
//! child already in the run's parent chain. A run that already has a result keeps it: a repeated
//! report changes nothing — with one exception, below. A failure that no retry follows is a
//! failure for good, which is what alarms are sent for.
//!
//! **A late success.** The lost-run sweep fails a run whose result it believes will never come
//! (recorded with `lost_at`). If the executor reports a success for it after all, the run becomes
//! a success ([`plan_late_success`]): the sweep was wrong, and the executor's report is the truth.
//! Only a failure the sweep recorded is replaced — never one the executor reported, a failed send,
//! or a run a user killed — and only by a success (a late failure changes nothing). What the loss
//! set going is settled as a success would have: the retry chain it started (the retry, its own
//! retries) is stopped — a retry not sent yet is withdrawn (recorded as skipped, never sent), one
//! already sent runs on but what it reports causes nothing more (no retry, no child jobs, no
//! alarm) — and the run's child jobs are fired, unless a run of that chain succeeded already and
//! fired them. An alarm already sent for the loss is not taken back. Runs of workflow nodes are
//! left out: the loss already decided the node (failed, or handed to its retry), and the instance
//! moved on from there; their late report is ignored as before (an operator can mark the node
//! succeeded). When the sweep's verdict and a success for the same run are in one batch, the
//! success is recorded and the verdict dropped.
//!
//! `Store::record_batch` reads the facts these rules need (in a few batched queries), asks
//! [`plan_send`] and [`plan_results`], and writes what they return. Follow-up runs are created
//! only when the outcome was written and the run's once-only guard (`alarm_status` 0 → 1) is won,
//! so a report that arrives twice never retries or fires children twice.

use crate::model::{Job, RunStatus};
use crate::run::{truncate, HandleOutcome, NewRun, RunPayload, TriggerOutcome};
use chime_protocol::TriggerType;
use std::collections::{HashMap, HashSet};

/// A parent chain longer than this (in characters) fires no more children: a guard against
/// chains that grow without end, besides the cycle check.
const LINEAGE_MAX: usize = 240;

/// What a follow-up of a run copies from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFacts {
    /// Run id.
    pub id: i64,
    /// Its job.
    pub job_id: i64,
    /// Its group at fire time.
    pub group_id: i64,
    /// What it sent (a retry sends the same, a workflow node's upstream results too).
    pub payload: RunPayload,
}

/// A run about to be given a result, as far as it was read.
#[derive(Debug, Clone, Copy)]
pub struct RunState<'a> {
    /// Its job.
    pub job_id: i64,
    /// Its result code now: 0 = no result yet.
    pub handle_code: i64,
    /// When the lost-run sweep recorded its result (epoch ms), 0 if it did not.
    pub lost_at: i64,
    /// The rest, read only when [`needs_facts`] says the outcome may need it.
    pub facts: Option<&'a RunFacts>,
}

/// What a recorded outcome leads to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Consequence {
    /// Runs to create: a retry of a failed run, or the children of a successful one. Created
    /// only if the run's once-only guard is won.
    pub follow_ups: Vec<NewRun>,
    /// The run failed and no retry follows: its alarm is due.
    pub failed_for_good: bool,
}

/// How to record one run's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultPlan {
    /// The run.
    pub run_id: i64,
    /// The result code to store.
    pub code: i64,
    /// The message to store (the reported one, cut to `HANDLE_MSG_MAX` characters, with the
    /// child-job lines of a successful parent appended).
    pub msg: String,
    /// The run's status once the result is written.
    pub status: RunStatus,
    /// The lost-run sweep's verdict: recorded with the time (`lost_at`).
    pub lost: bool,
    /// What follows, if the result is written.
    pub then: Consequence,
}

/// Whether the children of `parent` (the job of a run that succeeded) are to be fired: `None`
/// when the job has no children.
fn with_children(parent: Option<&Job>) -> Option<&Job> {
    parent.filter(|p| !p.child_job_ids.is_empty())
}

/// Whether recording `outcome` needs the run's [`RunFacts`]: a failure may be retried, and a
/// success of a job with children (`parent`) fires them. A success of a job without children —
/// nearly every result — needs only the run's job and current result.
pub fn needs_facts(outcome: &HandleOutcome, parent: Option<&Job>) -> bool {
    outcome.code != 200 || with_children(parent).is_some()
}

/// The message stored with a result that causes nothing more: the reported one, capped.
pub fn result_msg(outcome: &HandleOutcome) -> String {
    truncate(outcome.msg.clone().unwrap_or_default())
}

/// What follows sending `run`: a retry when the send failed (`outcome.code` is not 200) and
/// retries remain, else a failure for good. Sends are retried whatever result the run has,
/// as XXL-JOB does.
pub fn plan_send(run: &RunFacts, outcome: &TriggerOutcome, now: i64) -> Consequence {
    if outcome.code == 200 {
        return Consequence::default();
    }
    retry_or_give_up(run, true, now)
}

/// The plan for recording `outcome` on `run`, whose job is `parent` if that job has children
/// (`children`: the child jobs that exist, by id). `None`: nothing to write — the run has a
/// result already, or its facts were needed and not read.
pub fn plan_result(
    run: RunState<'_>,
    outcome: &HandleOutcome,
    parent: Option<&Job>,
    children: &HashMap<i64, Job>,
    now: i64,
) -> Option<ResultPlan> {
    if run.handle_code != 0 {
        return None;
    }
    let status = RunStatus::of(200, outcome.code);
    let parent = with_children(parent).filter(|_| outcome.code == 200);
    if outcome.code == 200 && parent.is_none() {
        return Some(ResultPlan {
            run_id: outcome.run_id,
            code: outcome.code,
            msg: result_msg(outcome),
            status,
            lost: false,
            then: Consequence::default(),
        });
    }
    let facts = run.facts?;
    let mut msg = outcome.msg.clone().unwrap_or_default();
    let then = match parent {
        Some(parent) => {
            let (lines, follow_ups) = child_runs(facts, parent, children, now);
            if !msg.is_empty() {
                msg.push_str("<br>");
            }
            msg.push_str(&lines);
            Consequence {
                follow_ups,
                failed_for_good: false,
            }
        }
        None => {
            let mut then = retry_or_give_up(facts, outcome.retry, now);
            // A result code 0 (which no XXL-JOB executor sends) leaves the run unfinished:
            // it may be retried like a failure, but it is no failure to alarm about.
            then.failed_for_good &= status == RunStatus::Failed;
            then
        }
    };
    Some(ResultPlan {
        run_id: outcome.run_id,
        code: outcome.code,
        msg: truncate(msg),
        status,
        lost: outcome.lost && outcome.code != 200,
        then,
    })
}

/// [`plan_result`] for each outcome of a batch, in order, for the runs `state` knows (the
/// others do not exist). Only the first report of a run counts: a later one in the same batch
/// is ignored, as a report on a run that already has a result is — except that the lost-run
/// sweep's verdict on a run counts for nothing when a success for it is in the batch too (the
/// success is the truth, whichever came first). `parents`: the jobs among the runs' jobs that
/// have children.
pub fn plan_results<'f>(
    outcomes: &[&HandleOutcome],
    state: impl Fn(i64) -> Option<RunState<'f>>,
    parents: &HashMap<i64, Job>,
    children: &HashMap<i64, Job>,
    now: i64,
) -> Vec<ResultPlan> {
    let succeeded: HashSet<i64> = outcomes.iter().filter(|h| h.code == 200).map(|h| h.run_id).collect();
    let mut seen = HashSet::with_capacity(outcomes.len());
    let mut plans = Vec::with_capacity(outcomes.len());
    for h in outcomes {
        if h.lost && succeeded.contains(&h.run_id) {
            continue;
        }
        let Some(run) = state(h.run_id) else { continue };
        if run.handle_code != 0 || !seen.insert(h.run_id) {
            continue;
        }
        if let Some(p) = plan_result(run, h, parents.get(&run.job_id), children, now) {
            plans.push(p);
        }
    }
    plans
}

/// Whether `outcome`, for a run in state `run`, is the late success of a run the lost-run sweep
/// failed: the one result that replaces another ([`plan_late_success`]).
pub fn is_late_success(run: RunState<'_>, outcome: &HandleOutcome) -> bool {
    outcome.code == 200 && run.lost_at != 0 && run.handle_code != 0 && run.handle_code != 200
}

/// A run of the retry chain that a loss started (the retry of the lost run, its own retry, …),
/// as far as a late success of the lost run needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainRun {
    /// The run.
    pub id: i64,
    /// Its trigger result code: 0 not sent (yet), 200 accepted, -1 skipped, else a failed send.
    pub trigger_code: i64,
    /// Its result code: 0 none yet.
    pub handle_code: i64,
    /// Whether an admin marked it as being sent (`send_token` set): it may be on its way.
    pub marked: bool,
}

impl ChainRun {
    /// Not sent and not being sent: it can still be withdrawn.
    fn unsent(&self) -> bool {
        self.trigger_code == 0 && self.handle_code == 0 && !self.marked
    }

    /// Sent (or being sent) and without a result yet.
    fn in_flight(&self) -> bool {
        self.handle_code == 0 && (self.trigger_code == 200 || (self.trigger_code == 0 && self.marked))
    }
}

/// How to record a late success ([`plan_late_success`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatePlan {
    /// The run that succeeded after all.
    pub run_id: i64,
    /// Its message: the reported one, a note of what the late success did, and the child-job
    /// lines if it fires children.
    pub msg: String,
    /// Runs of the chain to withdraw: recorded as skipped, never sent.
    pub withdraw: Vec<i64>,
    /// Runs of the chain on their way or running: what they report causes nothing more.
    pub supersede: Vec<i64>,
    /// The child runs to fire.
    pub children: Vec<NewRun>,
}

/// The message that [`LatePlan::withdraw`] records on a withdrawn retry (as its trigger message).
pub fn withdrawn_msg(lost_run: i64) -> String {
    format!("Not sent: run {lost_run}, which this run retries, reported a success after it had been failed as lost")
}

/// The plan for the late success `outcome` of the lost run `run` ([`is_late_success`]), whose
/// loss started the retry chain `chain` (in order, the direct retry first). `parent`: its job
/// if that job has children; `children`: the child jobs that exist, by id. `None` for a run of
/// a workflow node (`in_workflow`): its late report is ignored, as the module says.
pub fn plan_late_success(
    run: &RunFacts,
    chain: &[ChainRun],
    in_workflow: bool,
    outcome: &HandleOutcome,
    parent: Option<&Job>,
    children: &HashMap<i64, Job>,
    now: i64,
) -> Option<LatePlan> {
    if in_workflow || outcome.code != 200 {
        return None;
    }
    let mut msg = outcome.msg.clone().unwrap_or_default();
    if !msg.is_empty() {
        msg.push_str("<br>");
    }
    msg.push_str("Reported after this run had been failed as lost: recorded as its result.");
    let withdraw: Vec<i64> = chain.iter().filter(|c| c.unsent()).map(|c| c.id).collect();
    let supersede: Vec<i64> = chain.iter().filter(|c| c.in_flight()).map(|c| c.id).collect();
    for id in &withdraw {
        msg.push_str(&format!(" Retry run {id} withdrawn, not sent."));
    }
    for id in &supersede {
        msg.push_str(&format!(
            " Retry run {id} was sent already: it runs on, and its result causes nothing more."
        ));
    }
    let succeeded = chain.iter().find(|c| c.handle_code == 200);
    let mut fired = Vec::new();
    match (succeeded, with_children(parent)) {
        (Some(retry), Some(_)) => msg.push_str(&format!(
            " Child jobs not fired again: retry run {} succeeded and fired them.",
            retry.id
        )),
        (None, Some(parent)) => {
            let (lines, runs) = child_runs(run, parent, children, now);
            msg.push_str("<br>");
            msg.push_str(&lines);
            fired = runs;
        }
        (_, None) => {}
    }
    Some(LatePlan {
        run_id: outcome.run_id,
        msg: truncate(msg),
        withdraw,
        supersede,
        children: fired,
    })
}

/// A retry of `run` if `may_retry` and it has retries left; otherwise it failed for good.
fn retry_or_give_up(run: &RunFacts, may_retry: bool, now: i64) -> Consequence {
    if !may_retry || run.payload.retry_count <= 0 {
        return Consequence {
            follow_ups: Vec::new(),
            failed_for_good: true,
        };
    }
    Consequence {
        follow_ups: vec![NewRun {
            job_id: run.job_id,
            group_id: run.group_id,
            fire_key: None,
            scheduled_at: now,
            trigger_type: TriggerType::Retry,
            payload: RunPayload {
                retry_count: run.payload.retry_count - 1,
                ..run.payload.clone()
            },
            trigger_code: 0,
            trigger_msg: String::new(),
        }],
        failed_for_good: false,
    }
}

/// The child runs a successful run of `parent` causes, and the lines XXL-JOB appends to the
/// parent's result message. A child already in the parent chain is not fired (cycle guard at
/// fire time; cycles are also refused when jobs are saved).
fn child_runs(run: &RunFacts, parent: &Job, children: &HashMap<i64, Job>, now: i64) -> (String, Vec<NewRun>) {
    let lineage_ids: HashSet<i64> = run
        .payload
        .lineage
        .split(',')
        .filter_map(|p| p.trim().parse().ok())
        .chain([run.job_id])
        .collect();
    let lineage = if run.payload.lineage.is_empty() {
        run.job_id.to_string()
    } else {
        format!("{},{}", run.payload.lineage, run.job_id)
    };
    let total = parent.child_job_ids.len();
    let mut lines = String::from(">>>>>>>>>>>Trigger child job<<<<<<<<<<<<br>");
    let mut runs = Vec::new();
    for (i, cid) in parent.child_job_ids.iter().enumerate() {
        let n = i + 1;
        match children.get(cid) {
            Some(_) if lineage_ids.contains(cid) || lineage.len() > LINEAGE_MAX => {
                lines.push_str(&format!(
                    "{n}/{total} [Job ID={cid}], Trigger Fail, Trigger msg: child job cycle <br>"
                ));
            }
            Some(child) => {
                let mut nr = NewRun::of_job(child, TriggerType::Parent, now, None);
                nr.payload.lineage = lineage.clone();
                runs.push(nr);
                lines.push_str(&format!(
                    "{n}/{total} [Job ID={cid}], Trigger success, Trigger msg: null <br>"
                ));
            }
            None => {
                lines.push_str(&format!(
                    "{n}/{total} [Job ID={cid}], Trigger Fail, Trigger msg: Job ID is illegal <br>"
                ));
            }
        }
    }
    (lines, runs)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::api::JobFlowPatch;
    use crate::run::HANDLE_MSG_MAX;
    use chime_protocol::{BlockStrategy, GlueType, MisfireStrategy, RouteStrategy, ScheduleType};

    const NOW: i64 = 1_700_000_000_000;

    /// A job for tests: `handler{id}`, `param{id}`, `id` retries, children `children`.
    pub(crate) fn job(id: i64, children: Vec<i64>) -> Job {
        Job {
            id,
            key: String::new(),
            group_id: 7,
            partition: id % 16,
            description: String::new(),
            info: crate::model::JobInfo::default(),
            flow: crate::model::JobFlow::default(),
            schedule_type: ScheduleType::None,
            schedule_expr: String::new(),
            time_zone: "UTC".into(),
            misfire_strategy: MisfireStrategy::DoNothing,
            more_schedules: Vec::new(),
            calendar: String::new(),
            business_days: None,
            route_strategy: RouteStrategy::First,
            handler: format!("handler{id}"),
            param: format!("param{id}"),
            block_strategy: BlockStrategy::SerialExecution,
            timeout_secs: 0,
            retry_count: id,
            child_job_ids: children,
            glue_type: GlueType::Bean,
            glue_source: String::new(),
            glue_updated_at: 0,
            running: true,
            anchor_at: 0,
            next_fire_at: 0,
            paused_until: 0,
            last_fire_at: 0,
            created_at: 0,
            updated_at: 0,
        }
    }

    fn facts(retry_count: i64, lineage: &str) -> RunFacts {
        RunFacts {
            id: 100,
            job_id: 1,
            group_id: 7,
            payload: RunPayload {
                handler: "h".into(),
                param: "p".into(),
                upstream: r#"{"a":"x"}"#.into(),
                shard_index: 2,
                shard_total: 3,
                retry_count,
                lineage: lineage.into(),
                flow: JobFlowPatch {
                    priority: Some(4),
                    concurrency_key: Some("warehouse-db".into()),
                },
            },
        }
    }

    /// Job 1, whose child is job 2, and that child by id.
    fn parent_and_child() -> (Job, HashMap<i64, Job>) {
        (job(1, vec![2]), [(2, job(2, vec![]))].into_iter().collect())
    }

    /// The plan for run 100 (of a job, not of a workflow node) reported successful with `msg`
    /// after its loss, `chain` following it; its job has the child job 2 when `with_child`.
    fn late_success(f: &RunFacts, chain: &[ChainRun], msg: &str, with_child: bool) -> LatePlan {
        let (parent, children) = parent_and_child();
        let (parent, children) = if with_child {
            (Some(&parent), children)
        } else {
            (None, HashMap::new())
        };
        plan_late_success(f, chain, false, &result(200, msg, true), parent, &children, NOW).unwrap()
    }

    fn chain_run(id: i64, trigger_code: i64, handle_code: i64, marked: bool) -> ChainRun {
        ChainRun {
            id,
            trigger_code,
            handle_code,
            marked,
        }
    }

    fn open(f: &RunFacts) -> RunState<'_> {
        RunState {
            job_id: f.job_id,
            handle_code: 0,
            lost_at: 0,
            facts: Some(f),
        }
    }

    fn result(code: i64, msg: &str, retry: bool) -> HandleOutcome {
        HandleOutcome {
            run_id: 100,
            code,
            msg: Some(msg.into()),
            retry,
            lost: false,
        }
    }

    /// The lost-run sweep's verdict on run 100.
    fn lost() -> HandleOutcome {
        HandleOutcome {
            lost: true,
            ..result(500, "Job result lost, marked as failure", true)
        }
    }

    fn sent(code: i64) -> TriggerOutcome {
        TriggerOutcome {
            run_id: 100,
            job_id: 1,
            triggered_at: NOW,
            address: "http://127.0.0.1:9999".into(),
            code,
            msg: "report".into(),
            shard_total: 3,
            trigger_type: TriggerType::Cron,
        }
    }

    fn retry_of(f: &RunFacts, retry_count: i64) -> NewRun {
        NewRun {
            job_id: 1,
            group_id: 7,
            fire_key: None,
            scheduled_at: NOW,
            trigger_type: TriggerType::Retry,
            payload: RunPayload {
                handler: "h".into(),
                param: "p".into(),
                upstream: f.payload.upstream.clone(),
                shard_index: 2,
                shard_total: 3,
                retry_count,
                lineage: f.payload.lineage.clone(),
                // A workflow node's own priority and key go on with its retries.
                flow: f.payload.flow.clone(),
            },
            trigger_code: 0,
            trigger_msg: String::new(),
        }
    }

    #[test]
    fn a_failure_with_retries_left_is_retried_on_the_same_shard() {
        let f = facts(2, "9");
        let p = plan_result(open(&f), &result(500, "boom", true), None, &HashMap::new(), NOW).unwrap();
        assert_eq!((p.code, p.msg.as_str(), p.status), (500, "boom", RunStatus::Failed));
        assert_eq!(
            p.then,
            Consequence {
                follow_ups: vec![retry_of(&f, 1)],
                failed_for_good: false,
            }
        );
    }

    #[test]
    fn a_failure_without_retries_left_fails_for_good() {
        let f = facts(0, "");
        let p = plan_result(open(&f), &result(500, "boom", true), None, &HashMap::new(), NOW).unwrap();
        assert!(p.then.follow_ups.is_empty());
        assert!(p.then.failed_for_good);
    }

    #[test]
    fn a_killed_run_is_not_retried() {
        let f = facts(3, "");
        let p = plan_result(
            open(&f),
            &result(500, "killed by a user", false),
            None,
            &HashMap::new(),
            NOW,
        )
        .unwrap();
        assert_eq!((p.code, p.msg.as_str()), (500, "killed by a user"));
        assert!(p.then.follow_ups.is_empty(), "{:?}", p.then);
        assert!(p.then.failed_for_good);
    }

    #[test]
    fn a_failed_send_is_retried_while_retries_remain() {
        let f = facts(1, "4,5");
        assert_eq!(
            plan_send(&f, &sent(500), NOW),
            Consequence {
                follow_ups: vec![retry_of(&f, 0)],
                failed_for_good: false,
            }
        );
        let last = facts(0, "");
        assert_eq!(
            plan_send(&last, &sent(500), NOW),
            Consequence {
                follow_ups: vec![],
                failed_for_good: true,
            }
        );
        assert_eq!(
            plan_send(&f, &sent(200), NOW),
            Consequence::default(),
            "accepted: nothing follows"
        );
    }

    #[test]
    fn a_success_without_children_needs_nothing_more() {
        let brief = RunState {
            job_id: 1,
            handle_code: 0,
            lost_at: 0,
            facts: None,
        };
        let ok = result(200, "done", true);
        assert!(!needs_facts(&ok, None));
        let p = plan_result(brief, &ok, None, &HashMap::new(), NOW).unwrap();
        assert_eq!((p.code, p.msg.as_str(), p.status), (200, "done", RunStatus::Success));
        assert_eq!(p.then, Consequence::default());
        // A job whose child list is empty has no children either.
        let p2 = plan_result(brief, &ok, Some(&job(1, vec![])), &HashMap::new(), NOW).unwrap();
        assert_eq!(p2, p);
        // Failures need the facts, to be retried.
        assert!(needs_facts(&result(500, "", true), None));
    }

    #[test]
    fn a_success_fires_the_children_and_says_so() {
        let f = facts(0, "8");
        let parent = job(1, vec![2, 3, 8, 4]);
        let children: HashMap<i64, Job> = [job(2, vec![]), job(3, vec![]), job(8, vec![])]
            .into_iter()
            .map(|j| (j.id, j))
            .collect();
        let ok = result(200, "done", true);
        assert!(needs_facts(&ok, Some(&parent)));
        let p = plan_result(open(&f), &ok, Some(&parent), &children, NOW).unwrap();
        assert_eq!(
            p.msg,
            "done<br>>>>>>>>>>>>Trigger child job<<<<<<<<<<<<br>\
             1/4 [Job ID=2], Trigger success, Trigger msg: null <br>\
             2/4 [Job ID=3], Trigger success, Trigger msg: null <br>\
             3/4 [Job ID=8], Trigger Fail, Trigger msg: child job cycle <br>\
             4/4 [Job ID=4], Trigger Fail, Trigger msg: Job ID is illegal <br>"
        );
        assert_eq!(p.status, RunStatus::Success);
        assert!(!p.then.failed_for_good);
        let child = |id: i64| NewRun {
            job_id: id,
            group_id: 7,
            fire_key: None,
            scheduled_at: NOW,
            trigger_type: TriggerType::Parent,
            payload: RunPayload {
                handler: format!("handler{id}"),
                param: format!("param{id}"),
                upstream: String::new(),
                shard_index: 0,
                shard_total: 1,
                retry_count: id,
                lineage: "8,1".into(),
                // A child job runs under its own flow, not its parent node's.
                flow: JobFlowPatch::default(),
            },
            trigger_code: 0,
            trigger_msg: String::new(),
        };
        assert_eq!(p.then.follow_ups, vec![child(2), child(3)]);
    }

    #[test]
    fn an_empty_message_gets_only_the_child_lines() {
        let f = facts(0, "");
        let (parent, children) = parent_and_child();
        let p = plan_result(open(&f), &result(200, "", true), Some(&parent), &children, NOW).unwrap();
        assert!(p.msg.starts_with(">>>>>>>>>>>Trigger child job"), "{}", p.msg);
        assert_eq!(p.then.follow_ups[0].payload.lineage, "1");
    }

    #[test]
    fn a_long_parent_chain_fires_no_more_children() {
        let chain: Vec<String> = (1000..1060).map(|i| i.to_string()).collect();
        let f = facts(0, &chain.join(","));
        let (parent, children) = parent_and_child();
        let p = plan_result(open(&f), &result(200, "ok", true), Some(&parent), &children, NOW).unwrap();
        assert!(p.then.follow_ups.is_empty());
        assert!(p.msg.contains("child job cycle"), "{}", p.msg);
    }

    #[test]
    fn a_repeated_result_is_ignored() {
        let f = facts(5, "");
        let done = RunState {
            handle_code: 500,
            ..open(&f)
        };
        assert_eq!(
            plan_result(done, &result(500, "again", true), None, &HashMap::new(), NOW),
            None
        );
        // Twice in one batch: the first counts, the second is ignored.
        let first = result(500, "first", true);
        let second = result(200, "second", true);
        let plans = plan_results(
            &[&first, &second],
            |_| Some(open(&f)),
            &HashMap::new(),
            &HashMap::new(),
            NOW,
        );
        assert_eq!(plans.len(), 1);
        assert_eq!((plans[0].code, plans[0].msg.as_str()), (500, "first"));
        assert_eq!(plans[0].then.follow_ups, vec![retry_of(&f, 4)]);
        // A run that does not exist gets nothing.
        assert!(plan_results(&[&first], |_| None, &HashMap::new(), &HashMap::new(), NOW).is_empty());
    }

    #[test]
    fn a_failure_whose_facts_were_not_read_is_left_alone() {
        let brief = RunState {
            job_id: 1,
            handle_code: 0,
            lost_at: 0,
            facts: None,
        };
        assert_eq!(
            plan_result(brief, &result(500, "x", true), None, &HashMap::new(), NOW),
            None
        );
    }

    #[test]
    fn long_messages_are_cut() {
        let f = facts(0, "");
        let long = "x".repeat(HANDLE_MSG_MAX + 10);
        let p = plan_result(open(&f), &result(500, &long, true), None, &HashMap::new(), NOW).unwrap();
        assert_eq!(p.msg.len(), HANDLE_MSG_MAX);
        let p = plan_result(open(&f), &result(200, &long, true), None, &HashMap::new(), NOW).unwrap();
        assert_eq!(p.msg.len(), HANDLE_MSG_MAX);
    }

    #[test]
    fn a_result_code_zero_may_be_retried_but_is_no_failure() {
        let f = facts(0, "");
        let p = plan_result(open(&f), &result(0, "", true), None, &HashMap::new(), NOW).unwrap();
        assert_eq!(p.status, RunStatus::Running);
        assert!(!p.then.failed_for_good);
    }

    #[test]
    fn only_the_sweeps_verdict_gives_way_and_only_to_a_success() {
        let f = facts(1, "");
        let lost_run = RunState {
            handle_code: 500,
            lost_at: NOW,
            ..open(&f)
        };
        assert!(is_late_success(lost_run, &result(200, "done", true)));
        assert!(
            !is_late_success(lost_run, &result(500, "failed too", true)),
            "a late failure changes nothing"
        );
        let reported = RunState { lost_at: 0, ..lost_run };
        assert!(
            !is_late_success(reported, &result(200, "done", true)),
            "a failure the executor reported, a failed send or a kill stays"
        );
        let succeeded = RunState {
            handle_code: 200,
            ..lost_run
        };
        assert!(!is_late_success(succeeded, &result(200, "again", true)), "a repeat");
        let running = RunState {
            handle_code: 0,
            ..lost_run
        };
        assert!(
            !is_late_success(running, &result(200, "done", true)),
            "an ordinary result"
        );
    }

    #[test]
    fn the_sweep_s_verdict_is_recorded_as_a_loss() {
        let f = facts(0, "");
        let p = plan_result(open(&f), &lost(), None, &HashMap::new(), NOW).unwrap();
        assert!(p.lost);
        assert!(p.then.failed_for_good);
        let p = plan_result(open(&f), &result(500, "boom", true), None, &HashMap::new(), NOW).unwrap();
        assert!(!p.lost, "a reported failure is no loss");
    }

    #[test]
    fn a_late_success_withdraws_the_retry_not_sent_and_fires_the_children() {
        let p = late_success(&facts(2, ""), &[chain_run(101, 0, 0, false)], "done", true);
        assert_eq!(
            (p.run_id, p.withdraw.as_slice(), p.supersede.as_slice()),
            (100, &[101][..], &[][..])
        );
        assert!(
            p.msg
                .starts_with("done<br>Reported after this run had been failed as lost")
                && p.msg.contains("Retry run 101 withdrawn"),
            "{}",
            p.msg
        );
        assert!(p.msg.contains("1/1 [Job ID=2], Trigger success"), "{}", p.msg);
        assert_eq!(p.children.len(), 1);
        assert_eq!((p.children[0].job_id, p.children[0].payload.lineage.as_str()), (2, "1"));
    }

    #[test]
    fn a_retry_on_its_way_is_superseded_and_one_that_ended_is_kept() {
        let f = facts(3, "");
        let chain = [
            // The retry failed (its own retry follows).
            chain_run(101, 200, 500, true),
            // Marked by an admin, no trigger result yet: it may be on the wire.
            chain_run(102, 0, 0, true),
        ];
        let p = late_success(&f, &chain, "", false);
        assert_eq!((p.withdraw.as_slice(), p.supersede.as_slice()), (&[][..], &[102][..]));
        assert!(p.msg.starts_with("Reported after"), "no empty line first: {}", p.msg);
        let p = late_success(&f, &[chain_run(101, 200, 0, true)], "ok", false);
        assert_eq!(p.supersede, [101]);
        assert!(p.children.is_empty(), "a job without children");
    }

    #[test]
    fn children_are_not_fired_twice_when_a_retry_succeeded() {
        let p = late_success(&facts(1, ""), &[chain_run(101, 200, 200, false)], "ok", true);
        assert!(p.children.is_empty());
        assert!(p.msg.contains("retry run 101 succeeded and fired them"), "{}", p.msg);
        assert!(p.withdraw.is_empty() && p.supersede.is_empty());
    }

    #[test]
    fn a_workflow_node_run_is_left_as_the_loss_decided() {
        let f = facts(1, "");
        let chain = [chain_run(101, 0, 0, false)];
        assert_eq!(
            plan_late_success(&f, &chain, true, &result(200, "ok", true), None, &HashMap::new(), NOW),
            None
        );
    }

    #[test]
    fn a_success_in_the_same_batch_outweighs_the_sweep_s_verdict() {
        let f = facts(1, "");
        let ok = result(200, "done", true);
        let verdict = lost();
        for batch in [[&verdict, &ok], [&ok, &verdict]] {
            let plans = plan_results(&batch, |_| Some(open(&f)), &HashMap::new(), &HashMap::new(), NOW);
            assert_eq!(plans.len(), 1);
            assert_eq!((plans[0].code, plans[0].lost), (200, false));
            assert!(plans[0].then.follow_ups.is_empty(), "no retry");
        }
    }
}
