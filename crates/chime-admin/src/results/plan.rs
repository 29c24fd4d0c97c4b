//! What follows a run's outcome — the rules, without a database.
//!
//! A send that failed, or a run that failed, is retried while retries remain: a new run of the
//! same job and shard, with one retry fewer and the same parent chain, unless the failure may
//! not be retried (a run killed by a user). A successful run of a job with children fires each
//! child (as XXL-JOB does, the lines saying so are appended to the run's message), except a
//! child already in the run's parent chain. A run that already has a result keeps it: a repeated
//! report changes nothing. A failure that no retry follows is a failure for good, which is what
//! alarms are sent for.
//!
//! `Store::record_batch` reads the facts these rules need (in a few batched queries), asks
//! [`plan_send`] and [`plan_results`], and writes what they return. Follow-up runs are created
//! only when the outcome was written and the run's once-only guard (`alarm_status` 0 → 1) is won,
//! so a report that arrives twice never retries or fires children twice.

use crate::model::{Job, RunStatus};
use crate::run::{truncate, HandleOutcome, NewRun, TriggerOutcome};
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
    /// Handler sent.
    pub handler: String,
    /// Parameter sent.
    pub param: String,
    /// A workflow node's upstream results sent with it (a retry sends them again).
    pub upstream: String,
    /// Shard index.
    pub shard_index: i64,
    /// Shard total.
    pub shard_total: i64,
    /// Retries still allowed after this run.
    pub retry_count: i64,
    /// Job ids of the parent chain, comma-separated.
    pub lineage: String,
}

/// A run about to be given a result, as far as it was read.
#[derive(Debug, Clone, Copy)]
pub struct RunState<'a> {
    /// Its job.
    pub job_id: i64,
    /// Its result code now: 0 = no result yet.
    pub handle_code: i64,
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
        then,
    })
}

/// [`plan_result`] for each outcome of a batch, in order, for the runs `state` knows (the
/// others do not exist). Only the first report of a run counts: a later one in the same batch
/// is ignored, as a report on a run that already has a result is. `parents`: the jobs among
/// the runs' jobs that have children.
pub fn plan_results<'f>(
    outcomes: &[&HandleOutcome],
    state: impl Fn(i64) -> Option<RunState<'f>>,
    parents: &HashMap<i64, Job>,
    children: &HashMap<i64, Job>,
    now: i64,
) -> Vec<ResultPlan> {
    let mut seen = HashSet::with_capacity(outcomes.len());
    let mut plans = Vec::with_capacity(outcomes.len());
    for h in outcomes {
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

/// A retry of `run` if `may_retry` and it has retries left; otherwise it failed for good.
fn retry_or_give_up(run: &RunFacts, may_retry: bool, now: i64) -> Consequence {
    if !may_retry || run.retry_count <= 0 {
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
            handler: run.handler.clone(),
            param: run.param.clone(),
            upstream: run.upstream.clone(),
            shard_index: run.shard_index,
            shard_total: run.shard_total,
            retry_count: run.retry_count - 1,
            lineage: run.lineage.clone(),
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
        .lineage
        .split(',')
        .filter_map(|p| p.trim().parse().ok())
        .chain([run.job_id])
        .collect();
    let lineage = if run.lineage.is_empty() {
        run.job_id.to_string()
    } else {
        format!("{},{}", run.lineage, run.job_id)
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
                nr.lineage = lineage.clone();
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
mod tests {
    use super::*;
    use crate::run::HANDLE_MSG_MAX;
    use chime_protocol::{BlockStrategy, GlueType, MisfireStrategy, RouteStrategy, ScheduleType};

    const NOW: i64 = 1_700_000_000_000;

    fn job(id: i64, children: Vec<i64>) -> Job {
        Job {
            id,
            key: String::new(),
            group_id: 7,
            partition: id % 16,
            description: String::new(),
            owner: String::new(),
            alarm_contacts: String::new(),
            schedule_type: ScheduleType::None,
            schedule_expr: String::new(),
            time_zone: "UTC".into(),
            misfire_strategy: MisfireStrategy::DoNothing,
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
            handler: "h".into(),
            param: "p".into(),
            upstream: r#"{"a":"x"}"#.into(),
            shard_index: 2,
            shard_total: 3,
            retry_count,
            lineage: lineage.into(),
        }
    }

    fn open(f: &RunFacts) -> RunState<'_> {
        RunState {
            job_id: f.job_id,
            handle_code: 0,
            facts: Some(f),
        }
    }

    fn result(code: i64, msg: &str, retry: bool) -> HandleOutcome {
        HandleOutcome {
            run_id: 100,
            code,
            msg: Some(msg.into()),
            retry,
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
            handler: "h".into(),
            param: "p".into(),
            upstream: f.upstream.clone(),
            shard_index: 2,
            shard_total: 3,
            retry_count,
            lineage: f.lineage.clone(),
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
            handler: format!("handler{id}"),
            param: format!("param{id}"),
            upstream: String::new(),
            shard_index: 0,
            shard_total: 1,
            retry_count: id,
            lineage: "8,1".into(),
            trigger_code: 0,
            trigger_msg: String::new(),
        };
        assert_eq!(p.then.follow_ups, vec![child(2), child(3)]);
    }

    #[test]
    fn an_empty_message_gets_only_the_child_lines() {
        let f = facts(0, "");
        let parent = job(1, vec![2]);
        let children: HashMap<i64, Job> = [(2, job(2, vec![]))].into_iter().collect();
        let p = plan_result(open(&f), &result(200, "", true), Some(&parent), &children, NOW).unwrap();
        assert!(p.msg.starts_with(">>>>>>>>>>>Trigger child job"), "{}", p.msg);
        assert_eq!(p.then.follow_ups[0].lineage, "1");
    }

    #[test]
    fn a_long_parent_chain_fires_no_more_children() {
        let chain: Vec<String> = (1000..1060).map(|i| i.to_string()).collect();
        let f = facts(0, &chain.join(","));
        let parent = job(1, vec![2]);
        let children: HashMap<i64, Job> = [(2, job(2, vec![]))].into_iter().collect();
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
}
