//! When fires happen: the claim loop, misfire policies, recovery after a crash, the timer.
//!
//! Every tick the scheduler claims, in one transaction, the fires of all due jobs up to the
//! look-ahead horizon (`store::claim_due_fires`): run rows are inserted and `next_fire_at`
//! advanced together. Claimed runs then wait in the millisecond [`wheel`] for their time.
//! A crash after the commit loses nothing: at start (and when a partition is taken over)
//! [`recover`] loads the pending run rows and applies the misfire policy to the late ones.

pub mod backfill;
pub mod lease;
pub mod queue;
pub mod wheel;
pub mod workflows;

use crate::calendar::Calendar;
use crate::metrics::Metrics;
use crate::model::{now_ms, Job, SKIPPED_CODE, WAITING_FOR_RUN_END};
use crate::pipeline::partitions::{Partitions, Takeover};
use crate::pipeline::results_queue::ResultsQueue;
use crate::pipeline::run_ids::RunIds;
use crate::pipeline::wheel_queue::WheelQueue;
use crate::store::{FirePlan, MarkedRun, NewRun, RunTicket, Store, StoreResult};
use chime_protocol::{MisfireStrategy, TriggerType};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// At most this many fires of one job are claimed per round (a `100ms` fixed rate would
/// otherwise flood one transaction).
const MAX_FIRES_PER_JOB: usize = 1000;
/// Missed fire times walked one by one before jumping to the present.
const MAX_MISSED_WALK: usize = 100_000;
/// How long a woken claim loop waits for the wakes that follow before its round: short
/// against any fire's lateness, long enough for a burst of creates to share one round.
const WAKE_GATHER: Duration = Duration::from_millis(20);

/// Misfire settings the planner needs.
#[derive(Debug, Clone, Copy)]
pub struct MisfireRules {
    /// Later than this (ms) is a misfire.
    pub threshold_ms: i64,
    /// CATCH_UP replays at most this many.
    pub catch_up_max: usize,
}

impl MisfireRules {
    /// `--misfire-threshold` and `--catch-up-max`.
    pub fn new(threshold: Duration, catch_up_max: usize) -> MisfireRules {
        MisfireRules {
            threshold_ms: threshold.as_millis() as i64,
            catch_up_max,
        }
    }
}

/// Decides the fires of one due job between its `next_fire_at` and `horizon`.
///
/// Fires later than the misfire threshold follow the job's policy: `DO_NOTHING` records them
/// as skipped, `FIRE_ONCE_NOW` runs the latest once now (type MISFIRE) and records the rest as
/// skipped, `CATCH_UP` replays the latest `catch_up_max` of them (type MISFIRE, paced by the
/// dispatcher). Records of skipped fires are capped at `catch_up_max` per job and round.
pub fn plan_fires(job: &Job, now: i64, horizon: i64, rules: MisfireRules) -> FirePlan {
    let cal = job.calendar(job.anchor_at);
    plan_fires_with(job, &cal, now, horizon, rules)
}

/// [`plan_fires`] with the job's schedule already parsed (the claim loop caches them).
pub fn plan_fires_with(
    job: &Job,
    cal: &Result<Calendar, String>,
    now: i64,
    horizon: i64,
    rules: MisfireRules,
) -> FirePlan {
    let cal = match cal {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(job_id = job.id, error = %e, "job schedule no longer parses; stopping it");
            return FirePlan {
                runs: Vec::new(),
                next_fire_at: 0,
                last_fire_at: job.last_fire_at,
            };
        }
    };
    if let Some(delay) = cal.fixed_delay_ms() {
        return plan_fixed_delay(job, delay, now, horizon, rules);
    }
    let mut runs = Vec::new();
    let mut t = Some(job.next_fire_at);
    let mut last = job.last_fire_at;
    // Fires due while the job was paused are missed fires however recent: its misfire policy
    // decides them when the pause ends, as after an outage.
    let late_limit = (now - rules.threshold_ms).max(job.paused_until);
    if job.next_fire_at < late_limit {
        let mut missed: VecDeque<i64> = VecDeque::new();
        let mut walked = 0;
        while let Some(m) = t.filter(|m| *m < late_limit) {
            missed.push_back(m);
            if missed.len() > rules.catch_up_max.max(1) {
                missed.pop_front();
            }
            walked += 1;
            t = if walked >= MAX_MISSED_WALK {
                cal.next_after(late_limit - 1)
            } else {
                cal.next_after(m)
            };
            if walked >= MAX_MISSED_WALK {
                break;
            }
        }
        let newest = missed.back().copied();
        for &m in &missed {
            let mut r = NewRun::of_job(job, TriggerType::Misfire, m, Some(m));
            match job.misfire_strategy {
                MisfireStrategy::CatchUp => {}
                MisfireStrategy::FireOnceNow if Some(m) == newest => r.scheduled_at = now,
                MisfireStrategy::FireOnceNow | MisfireStrategy::DoNothing => {
                    r.trigger_code = SKIPPED_CODE;
                    r.trigger_msg = if m < job.paused_until {
                        format!(
                            "Misfire: skipped by {} (scheduled at {m}, paused until {})",
                            job.misfire_strategy, job.paused_until
                        )
                    } else {
                        format!(
                            "Misfire: skipped by {} (scheduled at {m}, checked at {now})",
                            job.misfire_strategy
                        )
                    };
                }
            }
            runs.push(r);
            last = m;
        }
    }
    while let Some(fire) = t.filter(|f| *f <= horizon) {
        if runs.len() >= MAX_FIRES_PER_JOB {
            break;
        }
        runs.push(NewRun::of_job(job, TriggerType::Cron, fire, Some(fire)));
        last = fire;
        t = cal.next_after(fire);
    }
    FirePlan {
        runs,
        next_fire_at: t.unwrap_or(0),
        last_fire_at: last,
    }
}

/// A `FIX_DELAY` job's one fire, at its `next_fire_at`; then the job waits
/// ([`WAITING_FOR_RUN_END`]) until that run has ended, and the end plus the delay is its next
/// fire (`Store::schedule_fixed_delays`). A fire found late (after an outage, or a pause)
/// follows the misfire policy: `DO_NOTHING` records it skipped and fires a delay from now;
/// `FIRE_ONCE_NOW` and `CATCH_UP` run it now, once (one fire is all a fixed delay can miss).
fn plan_fixed_delay(job: &Job, delay: i64, now: i64, horizon: i64, rules: MisfireRules) -> FirePlan {
    let fire = job.next_fire_at;
    let unchanged = FirePlan {
        runs: Vec::new(),
        next_fire_at: fire,
        last_fire_at: job.last_fire_at,
    };
    if fire > horizon || fire == WAITING_FOR_RUN_END {
        return unchanged;
    }
    let late_limit = (now - rules.threshold_ms).max(job.paused_until);
    let mut run = NewRun::of_job(job, TriggerType::Cron, fire, Some(fire));
    if fire >= late_limit {
        return FirePlan {
            runs: vec![run],
            next_fire_at: WAITING_FOR_RUN_END,
            last_fire_at: fire,
        };
    }
    run.trigger_type = TriggerType::Misfire;
    if job.misfire_strategy == MisfireStrategy::DoNothing {
        run.trigger_code = SKIPPED_CODE;
        run.trigger_msg = format!(
            "Misfire: skipped by DO_NOTHING (scheduled at {fire}, checked at {now}); the next fire is the delay from now"
        );
        return FirePlan {
            runs: vec![run],
            next_fire_at: now + delay,
            last_fire_at: fire,
        };
    }
    run.scheduled_at = now;
    FirePlan {
        runs: vec![run],
        next_fire_at: WAITING_FOR_RUN_END,
        last_fire_at: fire,
    }
}

/// How many parsed schedules [`Calendars`] keeps at most; it is cleared when full.
const CALENDAR_CACHE_MAX: usize = 200_000;

/// Parsed schedules kept between rounds (of the claim loop, of the workflow loop), keyed by
/// the id of what they schedule and valid while its `updated_at` and anchor are unchanged:
/// parsing a cron expression with its zone cost more than planning its fires.
#[derive(Debug, Default)]
pub struct Calendars {
    parsed: HashMap<i64, (i64, i64, Result<Calendar, String>)>,
}

impl Calendars {
    /// The fires of `job` (or of a workflow's schedule in a `Job`) between its next fire time
    /// and `horizon`, as [`plan_fires`] decides them, with its schedule parsed once.
    pub fn plan(&mut self, job: &Job, now: i64, horizon: i64, rules: MisfireRules) -> FirePlan {
        let fresh = matches!(self.parsed.get(&job.id),
            Some((updated, anchor, _)) if *updated == job.updated_at && *anchor == job.anchor_at);
        if !fresh {
            if self.parsed.len() >= CALENDAR_CACHE_MAX {
                self.parsed.clear();
            }
            let cal = job.calendar(job.anchor_at);
            self.parsed.insert(job.id, (job.updated_at, job.anchor_at, cal));
        }
        plan_fires_with(job, &self.parsed[&job.id].2, now, horizon, rules)
    }
}
/// Job rows kept between claim rounds (see `Store::claim_due_fires`); cleared when full.
const JOB_CACHE_MAX: usize = 100_000;

/// Results waiting for the writer beyond which the claim loop waits: about four of the
/// writer's batches. Past it the database is not keeping up with what is being sent. Claiming
/// on would only let fires pile up in memory, sent but not yet recorded, and all of them would
/// be sent again after a crash. Waiting keeps that backlog bounded. Fires that wait long enough
/// become misfires and follow their job's policy, as after an outage. A slow executor does not
/// count here: its sends wait for its own permits, not for the writer.
const RESULTS_BACKLOG_PAUSE: usize = 20_000;

/// What the claim loop works with.
#[derive(Debug)]
pub struct ClaimLoop {
    /// Where fires are claimed.
    pub(crate) store: Store,
    /// This admin's name (`--node-id`): fires are claimed in the partitions leased under it.
    pub(crate) node_id: String,
    /// `--tick`: time between claim rounds.
    pub(crate) tick: Duration,
    /// `--lookahead`: how far ahead fires are claimed.
    pub(crate) lookahead: Duration,
    /// Most jobs one claim transaction reads.
    pub(crate) claim_batch: i64,
    /// How long a claim round may take before it is abandoned: the lease time where admins
    /// share the database (a round that long claims under leases that may have lapsed, and is
    /// most likely stuck on a connection the network dropped); `None` on SQLite.
    pub(crate) round_timeout: Option<Duration>,
    /// What counts as a misfire.
    pub(crate) rules: MisfireRules,
    /// The partitions whose jobs are claimed, and the wake-up when they or their jobs change.
    pub(crate) partitions: Arc<Partitions>,
    /// Where claimed runs go.
    pub(crate) wheel: WheelQueue,
    /// The results writer's inbox, whose backlog puts claim rounds off.
    pub(crate) results: ResultsQueue,
    /// Claims and skipped misfires are counted here.
    pub(crate) metrics: Arc<Metrics>,
    /// Cancelled to stop.
    pub(crate) shutdown: CancellationToken,
}

/// Claims due fires until shutdown.
pub async fn run_claims(claims: ClaimLoop) {
    let tick = claims.tick;
    let lookahead = claims.lookahead.as_millis() as i64;
    let mut calendars = Calendars::default();
    let mut jobs: HashMap<i64, Arc<Job>> = HashMap::new();
    loop {
        if jobs.len() >= JOB_CACHE_MAX {
            jobs.clear();
        }
        if claims.results.backlog() >= RESULTS_BACKLOG_PAUSE {
            claims.metrics.claims_deferred.inc();
            tracing::debug!(
                backlog = claims.results.backlog(),
                "results writer behind; claim round put off"
            );
            tokio::select! {
                _ = claims.shutdown.cancelled() => return,
                _ = tokio::time::sleep(tick) => {}
            }
            continue;
        }
        let now = now_ms();
        let horizon = now + lookahead;
        let rules = claims.rules;
        let started = std::time::Instant::now();
        let ready = claims.partitions.held();
        // FIX_DELAY jobs whose run has ended get their next fire first, so that one due within
        // the horizon is claimed in this same round.
        if let Err(e) = claims.store.schedule_fixed_delays(&ready, now).await {
            tracing::warn!(error = %e, "setting the next fires of fixed-delay jobs failed; will retry");
        }
        let claiming =
            claims
                .store
                .claim_due_fires(&claims.node_id, &ready, horizon, claims.claim_batch, &mut jobs, |job| {
                    calendars.plan(job, now, horizon, rules)
                });
        let result = match claims.round_timeout {
            None => Ok(claiming.await),
            Some(limit) => tokio::time::timeout(limit, claiming).await,
        };
        let more = match result {
            Err(_) => {
                // Abandoned, its transaction may still have been committed: fires claimed
                // and on no timer. The partitions go through recovery again, which finds them.
                tracing::warn!(limit = ?claims.round_timeout, "claim round took too long; abandoned, partitions recovered again");
                claims.partitions.recover_again();
                false
            }
            Ok(Ok(claimed)) => {
                let mut n = 0;
                for (job, tickets) in claimed.jobs {
                    n += tickets.len();
                    claims.wheel.enqueue(job, tickets, None);
                }
                claims.metrics.claimed.inc_by(n as u64);
                tracing::debug!(
                    claimed = n,
                    took_ms = started.elapsed().as_millis() as u64,
                    "claim round"
                );
                claims.metrics.misfires_skipped.inc_by(claimed.skipped as u64);
                claimed.more
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "claiming due fires failed; will retry");
                false
            }
        };
        if more {
            continue;
        }
        tokio::select! {
            _ = claims.shutdown.cancelled() => return,
            _ = claims.partitions.claims_woken() => {
                // Jobs created or started one after another (a client creating thousands)
                // each wake the loop: the wakes of a short burst share one round instead of
                // each taking the writer for a round of its own between the creates.
                tokio::select! {
                    _ = claims.shutdown.cancelled() => return,
                    _ = tokio::time::sleep(WAKE_GATHER) => {}
                }
            }
            _ = tokio::time::sleep(tick) => {}
        }
    }
}

/// How many missed fires the claim loop will replay for `job` (CATCH_UP) when it claims it: the
/// fires from its `next_fire_at` that are already late, at most `catch_up_max`. Recovery
/// counts them so that the two together replay no more than `catch_up_max`.
fn missed_to_be_claimed(job: &Job, late_limit: i64, catch_up_max: usize) -> usize {
    if !job.running || job.next_fire_at == 0 || job.next_fire_at >= late_limit {
        return 0;
    }
    let Ok(cal) = job.calendar(job.anchor_at) else {
        return 0;
    };
    let mut n = 0;
    let mut t = Some(job.next_fire_at);
    while let Some(fire) = t.filter(|f| *f < late_limit && n < catch_up_max) {
        n += 1;
        t = cal.next_after(fire);
    }
    n
}

/// What recovery works with. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Recovery {
    /// Where the pending runs are read, and the skipped ones marked.
    pub(crate) store: Store,
    /// The scheduling set the recovered partitions join.
    pub(crate) partitions: Arc<Partitions>,
    /// Runs in flight: those are on their way already and are not loaded again.
    pub(crate) inflight: Arc<RunIds>,
    /// Where the recovered runs go.
    pub(crate) wheel: WheelQueue,
    /// What counts as a misfire.
    pub(crate) rules: MisfireRules,
    /// Skipped misfires are counted here.
    pub(crate) metrics: Arc<Metrics>,
    /// Where runs an earlier holder marked as being sent, and that have no trigger result, go
    /// to be settled with their executor (`monitor::possibly_sent`). None where runs are not
    /// marked (SQLite: one admin).
    pub(crate) possibly_sent: Option<mpsc::UnboundedSender<PossiblySent>>,
}

/// Runs of recovered partitions that an earlier holder marked as being sent and that have no
/// trigger result: it may have stopped between the mark and the send, or after the send.
#[derive(Debug)]
pub struct PossiblySent {
    /// The runs.
    pub runs: Vec<MarkedRun>,
    /// When their partitions were recovered: the earlier holders' last sends began before.
    pub recovered: Instant,
}

/// Loads the pending runs of `partitions` (left by a crash, by the admin that held them, or by
/// this node's own predecessor) and puts them back on the timer; late scheduled fires follow
/// their job's misfire policy. Then the partitions join the scheduling set. Runs an earlier
/// holder marked as being sent go to be settled with their executor (`Recovery::possibly_sent`).
///
/// An outage leaves two kinds of missed fires: claimed before the crash (pending rows, handled
/// here) and never claimed (the job's `next_fire_at` is in the past, handled by the claim loop's
/// planner). Each policy must act once over both: FIRE_ONCE_NOW runs one fire per outage — the
/// planner's, when it has any, else the newest pending row — and CATCH_UP replays at most
/// `catch_up_max` in all, the newest. That is why the partitions are scheduled only once their
/// pending runs and job rows are read: a claim round in between would move `next_fire_at` on,
/// and recovery would then run a second fire for the same outage.
///
/// Nothing is scheduled (and nothing resumed or skipped) when the takeover was overtaken while
/// its rows were read: a partition of it lost, or the leases lapsed (see
/// [`Partitions::start_scheduling`]). A later takeover recovers those partitions again.
pub async fn recover(recovery: &Recovery, takeover: &Takeover) -> StoreResult<()> {
    let partitions = takeover.partitions.as_slice();
    if partitions.is_empty() {
        return Ok(());
    }
    let pending = recovery.store.pending_runs(partitions).await?;
    let marked = match recovery.possibly_sent {
        Some(_) => recovery.store.marked_runs(partitions).await?,
        None => Vec::new(),
    };
    let mut job_ids: Vec<i64> = pending.iter().map(|t| t.job_id).collect();
    job_ids.sort_unstable();
    job_ids.dedup();
    let jobs: HashMap<i64, Arc<Job>> = recovery
        .store
        .jobs_by_ids(&job_ids)
        .await?
        .into_iter()
        .map(|j| (j.id, Arc::new(j)))
        .collect();
    let now = now_ms();
    let late_limit = now - recovery.rules.threshold_ms;
    // What the claim loop will do with these jobs is now fixed by the rows just read. Runs
    // still in flight here (on the timer, or a send waiting for the database) are left to
    // their send, which goes on now that the partitions are scheduled.
    let picked = recovery.partitions.start_scheduling(takeover, || {
        let pending: Vec<RunTicket> = pending
            .into_iter()
            .filter(|t| !recovery.inflight.contains(t.id))
            .collect();
        let marked: Vec<MarkedRun> = marked
            .into_iter()
            .filter(|m| !recovery.inflight.contains(m.ticket.id))
            .collect();
        (pending, marked)
    });
    let Some((pending, marked)) = picked else {
        tracing::info!(partitions = ?partitions, "partitions lost or lapsed while being recovered; recovered again when taken over again");
        return Ok(());
    };
    if let Some(inbox) = recovery.possibly_sent.as_ref().filter(|_| !marked.is_empty()) {
        let _ = inbox.send(PossiblySent {
            runs: marked,
            recovered: Instant::now(),
        });
    }
    if pending.is_empty() {
        return Ok(());
    }
    let mut by_job: HashMap<i64, Vec<RunTicket>> = HashMap::new();
    for t in pending {
        by_job.entry(t.job_id).or_default().push(t);
    }
    // Every job's runs go on the timer first, then the skipped ones are recorded, one
    // statement per policy: a recovery of hundreds of jobs neither holds back the runs of the
    // last ones behind a write per job, nor spends its time on commits.
    let mut resumed = 0usize;
    let mut skipped: HashMap<MisfireStrategy, Vec<i64>> = HashMap::new();
    for (job_id, tickets) in by_job {
        let Some(job) = jobs.get(&job_id) else { continue };
        let (r, skip) = resume_job(recovery, job, tickets, late_limit);
        resumed += r;
        if !skip.is_empty() {
            skipped.entry(job.misfire_strategy).or_default().extend(skip);
        }
    }
    let mut skipped_total = 0;
    for (strategy, ids) in skipped {
        let why = format!("Misfire: skipped by {strategy} after the admin restarted");
        recovery.store.mark_skipped(&ids, &why).await?;
        recovery.metrics.misfires_skipped.inc_by(ids.len() as u64);
        skipped_total += ids.len();
    }
    tracing::info!(resumed, skipped = skipped_total, "recovered pending runs");
    Ok(())
}

/// Puts a job's pending runs back on the timer: those on time as they are, the late scheduled
/// ones as its misfire policy says. Returns how many were resumed, and the ids of the runs the
/// policy skips (to be marked so).
fn resume_job(recovery: &Recovery, job: &Arc<Job>, tickets: Vec<RunTicket>, late_limit: i64) -> (usize, Vec<i64>) {
    let (late, on_time): (Vec<RunTicket>, Vec<RunTicket>) = tickets.into_iter().partition(|t| {
        matches!(t.trigger_type, TriggerType::Cron | TriggerType::Misfire) && t.scheduled_at < late_limit
    });
    let mut resumed = on_time.len();
    recovery.wheel.enqueue(job.clone(), on_time, None);
    if late.is_empty() {
        return (resumed, Vec::new());
    }
    // Fires the planner will replay are newer than every pending row.
    let planned = missed_to_be_claimed(job, late_limit, recovery.rules.catch_up_max);
    let (run, skip) = split_late(job.misfire_strategy, late, planned, recovery.rules.catch_up_max);
    resumed += run.len();
    recovery.wheel.enqueue(job.clone(), run, None);
    (resumed, skip.iter().map(|t| t.id).collect())
}

/// Partitions taken over, on their way to recovery, and who waits for it (the admin's start,
/// which is ready once its first takeover is recovered).
#[derive(Debug)]
pub struct ToRecover {
    /// The partitions.
    pub takeover: Takeover,
    /// Told how the recovery went.
    pub done: Option<oneshot::Sender<StoreResult<()>>>,
}

/// Recovers the partitions the lease rounds take over, one takeover after the other, beside
/// the rounds: a recovery of a long outage's runs on a loaded database may take longer than
/// the lease time, and the renewals must go on meanwhile, or the leases would lapse, be taken
/// again, and the recovery begin anew with every fire it had resumed now late. A takeover that
/// fails is given up, and taken over again by the next round.
pub async fn recover_takeovers(
    recovery: Recovery,
    mut inbox: mpsc::UnboundedReceiver<ToRecover>,
    shutdown: CancellationToken,
) {
    loop {
        let next = tokio::select! {
            _ = shutdown.cancelled() => return,
            next = inbox.recv() => next,
        };
        let Some(ToRecover { takeover, done }) = next else {
            return;
        };
        let result = tokio::select! {
            _ = shutdown.cancelled() => return,
            result = recover(&recovery, &takeover) => result,
        };
        if let Err(e) = &result {
            tracing::warn!(error = %e, partitions = ?takeover.partitions, "recovering pending runs failed; recovered again at the next lease round");
            recovery.partitions.give_up_recovery(&takeover);
        }
        recovery.partitions.wake_claims();
        if let Some(done) = done {
            let _ = done.send(result);
        }
    }
}

/// A job's late pending runs (oldest first), split by its misfire policy into those to run
/// (as misfires) and those to skip, given the `planned` missed fires the claim loop will
/// replay itself.
fn split_late(
    strategy: MisfireStrategy,
    mut late: Vec<RunTicket>,
    planned: usize,
    catch_up_max: usize,
) -> (Vec<RunTicket>, Vec<RunTicket>) {
    let (run, skip): (Vec<RunTicket>, Vec<RunTicket>) = match strategy {
        MisfireStrategy::CatchUp => {
            let budget = catch_up_max.saturating_sub(planned);
            let run = late.split_off(late.len().saturating_sub(budget));
            (run, late)
        }
        MisfireStrategy::FireOnceNow if planned > 0 => (Vec::new(), late),
        MisfireStrategy::FireOnceNow => {
            let newest = late.pop().into_iter().collect();
            (newest, late)
        }
        MisfireStrategy::DoNothing => (Vec::new(), late),
    };
    let run = run
        .into_iter()
        .map(|mut t| {
            t.trigger_type = TriggerType::Misfire;
            t
        })
        .collect();
    (run, skip)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chime_protocol::{BlockStrategy, GlueType, RouteStrategy, ScheduleType};

    fn job(next: i64, strategy: MisfireStrategy) -> Job {
        Job {
            id: 1,
            key: String::new(),
            group_id: 1,
            partition: 1,
            description: String::new(),
            info: crate::model::JobInfo::default(),
            flow: crate::model::JobFlow::default(),
            schedule_type: ScheduleType::FixRate,
            schedule_expr: "1".into(),
            time_zone: "UTC".into(),
            misfire_strategy: strategy,
            more_schedules: Vec::new(),
            calendar: String::new(),
            business_days: None,
            route_strategy: RouteStrategy::First,
            handler: "h".into(),
            param: String::new(),
            block_strategy: BlockStrategy::SerialExecution,
            timeout_secs: 0,
            retry_count: 0,
            child_job_ids: vec![],
            glue_type: GlueType::Bean,
            glue_source: String::new(),
            glue_updated_at: 0,
            running: true,
            anchor_at: 0,
            next_fire_at: next,
            paused_until: 0,
            last_fire_at: 0,
            created_at: 0,
            updated_at: 0,
        }
    }

    const RULES: MisfireRules = MisfireRules {
        threshold_ms: 5_000,
        catch_up_max: 100,
    };

    #[test]
    fn recovery_counts_the_missed_fires_the_planner_will_replay() {
        // Every second from 10 s; late before 25 s: 15 unclaimed missed fires.
        let j = job(10_000, MisfireStrategy::CatchUp);
        assert_eq!(missed_to_be_claimed(&j, 25_000, 100), 15);
        assert_eq!(missed_to_be_claimed(&j, 25_000, 4), 4, "capped like the planner");
        assert_eq!(
            missed_to_be_claimed(&job(25_000, MisfireStrategy::CatchUp), 25_000, 100),
            0
        );
        let stopped = Job {
            running: false,
            ..job(10_000, MisfireStrategy::CatchUp)
        };
        assert_eq!(missed_to_be_claimed(&stopped, 25_000, 100), 0);
        assert_eq!(missed_to_be_claimed(&job(0, MisfireStrategy::CatchUp), 25_000, 100), 0);
    }

    #[test]
    fn on_time_fires_up_to_the_horizon() {
        let p = plan_fires(&job(10_000, MisfireStrategy::DoNothing), 9_000, 13_000, RULES);
        let times: Vec<i64> = p.runs.iter().map(|r| r.scheduled_at).collect();
        assert_eq!(times, [10_000, 11_000, 12_000, 13_000]);
        assert!(p
            .runs
            .iter()
            .all(|r| r.fire_key == Some(r.scheduled_at) && r.trigger_type == TriggerType::Cron));
        assert_eq!(p.next_fire_at, 14_000);
    }

    #[test]
    fn misfire_policies() {
        // Down from 10 s to 30 s: fires 10..=24 s are older than the 5 s threshold.
        let now = 30_000;
        let p = plan_fires(&job(10_000, MisfireStrategy::DoNothing), now, now, RULES);
        let skipped = p.runs.iter().filter(|r| r.trigger_code == SKIPPED_CODE).count();
        assert_eq!(skipped, 15);
        assert_eq!(
            p.runs
                .iter()
                .filter(|r| r.trigger_code == 0)
                .map(|r| r.scheduled_at)
                .collect::<Vec<_>>(),
            [25_000, 26_000, 27_000, 28_000, 29_000, 30_000]
        );

        let p = plan_fires(&job(10_000, MisfireStrategy::FireOnceNow), now, now, RULES);
        let misfire: Vec<&NewRun> = p
            .runs
            .iter()
            .filter(|r| r.trigger_type == TriggerType::Misfire && r.trigger_code == 0)
            .collect();
        assert_eq!(misfire.len(), 1);
        assert_eq!(misfire[0].fire_key, Some(24_000));
        assert_eq!(misfire[0].scheduled_at, now);

        let p = plan_fires(
            &job(10_000, MisfireStrategy::CatchUp),
            now,
            now,
            MisfireRules {
                threshold_ms: 5_000,
                catch_up_max: 4,
            },
        );
        let replays: Vec<i64> = p
            .runs
            .iter()
            .filter(|r| r.trigger_type == TriggerType::Misfire)
            .map(|r| r.scheduled_at)
            .collect();
        assert_eq!(replays, [21_000, 22_000, 23_000, 24_000]);
        assert_eq!(p.next_fire_at, 31_000);
    }
}
