//! Sweeps that keep runs honest: runs whose executor vanished, or whose result was lost although
//! the executor lives on, are failed (and so retried), and the registry is refreshed so dead
//! executors leave their groups.

pub mod possibly_sent;

use crate::dispatch::client::{ExecutorClient, Target};
use crate::dispatch::gate::Gate;
use crate::metrics::Metrics;
use crate::model::{now_ms, AddressType, Group};
use crate::pipeline::results_queue::ResultMsg;
use crate::pipeline::results_queue::ResultsQueue;
use crate::registry::clock::UpTime;
use crate::registry::{Directory, ExecutorProcess};
use crate::store::{HandleOutcome, Store, UnfinishedRun};
use chime_protocol::messages::JOB_RESULT_LOST;
use chime_protocol::paths::normalize_address;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Reloads groups and heartbeats every `every` (`--registry-refresh`) until `shutdown`; meanwhile
/// ticks the directory's up-clock every [`crate::registry::clock::TICK`], and reloads the groups
/// when their version moved ([`crate::registry::GROUP_CHANGE_POLL`]) — in the same task, so that
/// a refresh waiting for a slow database holds neither up.
pub async fn run_registry_refresh(directory: Arc<Directory>, every: Duration, shutdown: CancellationToken) {
    let up_clock = async {
        let mut ticks = tokio::time::interval(crate::registry::clock::TICK);
        // A tick missed (a pause, a stalled process) is not made up for: the next one measures
        // the gap, which is what tells the pause.
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = ticks.tick() => directory.tick(),
            }
        }
    };
    let refresh = async {
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(every) => {}
            }
            if let Err(e) = directory.refresh().await {
                tracing::warn!(error = %e, "registry refresh failed");
            }
        }
    };
    // A group created or changed through another admin is loaded within this, not at the next
    // refresh (see `store::groups`).
    let group_changes = async {
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(crate::registry::GROUP_CHANGE_POLL) => {}
            }
            if let Err(e) = directory.reload_groups_if_changed().await {
                tracing::debug!(error = %e, "reading the version of the groups failed");
            }
        }
    };
    tokio::join!(up_clock, refresh, group_changes);
}

/// Running runs the lost-run sweep reads per query; it pages through all of them by id.
pub const SWEEP_PAGE: i64 = 1_000;

/// How long after an admin first hears of a restarted Chime executor the runs its predecessor
/// accepted may be failed. A new process first re-sends the results its predecessor left in
/// the callback spool (it starts doing so before it even registers), so a run finished just
/// before the restart reports in within this time: each attempt waits at most 3 s for an admin
/// (`admin_timeout`), and a round no admin accepted is retried after 3 s
/// (`callback_retry_interval`), so 15 s cover the first attempt, a failed round over two
/// admins and the retry after it. Longer would only delay the runs that are really lost.
pub const RESTART_REPLAY_GRACE: Duration = Duration::from_secs(15);

/// A run sent less than this before the start of the process now at its address may still have
/// reached that process: the admin's clock started before the call was made, and the call may
/// wait for the connection for up to the executor timeout (a SYN retried while the new process
/// came up). One more second covers the delay of the registration the start was told by. Such a
/// run — sent just before a quick restart — is left to the idle rule, which asks the new
/// process whether it has the job.
fn restart_margin(sweeper: &Sweeper) -> i64 {
    (sweeper.executor_timeout + Duration::from_secs(1)).as_millis() as i64
}

/// What the sweep knows about an executor address, asked at most once per sweep.
#[derive(Default)]
struct Probes {
    beats: HashMap<String, bool>,
    /// `Some(when it answered, epoch ms)` for an executor that said it is idle for the job.
    idle: HashMap<(String, i64), Option<i64>>,
}

/// The result message of a run that waited `waited` for its result (the job's executor
/// timeout plus a grace, or `--lost-result-after` for a job without timeout) while the
/// executor, still alive, says the job is not running there.
pub fn no_result_message(timeout_secs: i64, waited: Duration) -> String {
    let waited = if timeout_secs > 0 {
        format!(
            "the executor timeout ({timeout_secs}s) plus {}s",
            waited.as_secs() - timeout_secs as u64
        )
    } else {
        format!("{}s", waited.as_secs())
    };
    format!(
        "{JOB_RESULT_LOST}: no result within {waited}, and the executor is not running the job any more \
         (its result was never delivered)"
    )
}

/// The result message of a run whose executor said twice, `apart` between the answers, that it
/// neither runs nor queues the run's job.
pub fn idle_twice_message(apart: Duration) -> String {
    format!(
        "{JOB_RESULT_LOST}: the executor said twice, {}s apart, that it is neither running nor queueing \
         the job (its result was never delivered)",
        apart.as_secs()
    )
}

/// The result message of a run accepted by an executor process that was replaced at its
/// address (restarted) before reporting on it.
pub fn restarted_message(address: &str) -> String {
    format!(
        "{JOB_RESULT_LOST}: the executor at {address} restarted after it accepted the run, and the result \
         was not among those it delivered since"
    )
}

/// How long a run may wait for its result before its executor is asked whether it still has
/// the job: the job's executor timeout plus the dead timeout (the time an executor gets to
/// deliver a result), or `--lost-result-after` for a job without timeout.
fn result_wait(sweeper: &Sweeper, timeout_secs: i64) -> Duration {
    if timeout_secs > 0 {
        Duration::from_secs(timeout_secs as u64) + sweeper.dead_timeout
    } else {
        sweeper.lost_result_after
    }
}

/// How long after its trigger a running run is first looked at by the sweep.
///
/// An executor is declared gone a dead timeout after its last heartbeat, and it sent one at
/// most a heartbeat period (a third of the dead timeout: three missed beats) before it took
/// the run, so a younger run cannot be on a gone executor yet, and none is overdue before
/// `--lost-result-after`. Skipping them keeps the sweep's reads to runs that have been running
/// a while: reading every running run each sweep cost the admin about a tenth of its
/// throughput at 20,000 fires/s, when callbacks lag and hundreds of thousands are running.
/// A run lost younger (its executor restarted at once) is found from this age on: with the
/// defaults 30 s, plus the 35 s of `--lost-idle-confirm` for executors that do not say which
/// process they are, which keeps it within the 90 s of the dead timeout.
pub fn sweep_min_age(dead_timeout: Duration, lost_result_after: Duration) -> Duration {
    (dead_timeout / 3).min(lost_result_after).max(Duration::from_secs(1))
}

/// What the lost-run sweep works with. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Sweeper {
    /// Where running runs are read.
    pub(crate) store: Store,
    /// Live executors, groups and the executor processes heard.
    pub(crate) directory: Arc<Directory>,
    /// Asks executors (`/beat`, `/idleBeat`).
    pub(crate) client: ExecutorClient,
    /// Bounds those probes, shared with the probes of routing.
    pub(crate) probe_gate: Arc<Gate>,
    /// Where the results of lost runs go.
    pub(crate) results: ResultsQueue,
    /// Lost runs are counted here.
    pub(crate) metrics: Arc<Metrics>,
    /// `--executor-timeout`.
    pub(crate) executor_timeout: Duration,
    /// `--dead-timeout`.
    pub(crate) dead_timeout: Duration,
    /// `--lost-result-after`.
    pub(crate) lost_result_after: Duration,
    /// `--lost-idle-confirm`.
    pub(crate) lost_idle_confirm: Duration,
}

/// Fails runs still waiting for a result that will never come, and returns how many (see
/// [`LostRunSweep::sweep`]). Starts from nothing: the idle answers of earlier sweeps are not
/// known to it, so it fails no run for two of them. The admin's own sweep loop keeps one
/// [`LostRunSweep`] for its lifetime.
pub async fn sweep_lost_runs(sweeper: &Sweeper) -> crate::store::StoreResult<usize> {
    LostRunSweep::default().sweep(sweeper).await
}

/// The lost-run sweep, with what it remembers from one sweep to the next.
#[derive(Debug, Default)]
pub struct LostRunSweep {
    /// Run id → when its executor first said it is idle for the run's job (up-clock ms), with no
    /// busy answer since. Only runs still running and old enough to be swept, not sent to the
    /// Chime executor process serving now: an entry is dropped on a busy answer, and at the
    /// end of each complete sweep for runs it did not keep.
    first_idle: HashMap<i64, i64>,
}

impl LostRunSweep {
    /// Fails runs still waiting for a result that will never come, and returns how many.
    /// Running runs sent at least [`sweep_min_age`] ago are looked at, 1,000 per query:
    ///
    /// * their executor is gone: for groups that register, an address not heard for the dead
    ///   timeout of this admin's up time (and none before this admin has been up for a dead
    ///   timeout since its last disruption: see [`crate::registry::clock`]); for manual groups,
    ///   an address that does not answer `/beat`. XXL-JOB waits ten minutes; here it is the dead
    ///   timeout plus at most one sweep.
    /// * their executor restarted: a Chime executor says in each registration which process it
    ///   is and how long it has been serving, so a run sent before the process now at its
    ///   address started (less a margin for the time the call took) was accepted by an earlier
    ///   one, which is gone with the run. Failed once the new process had
    ///   [`RESTART_REPLAY_GRACE`] to re-send the results its predecessor spooled. Found however
    ///   busy the new process is with the same job.
    /// * their executor twice said, at least `--lost-idle-confirm` apart and with no busy
    ///   answer between, that it is neither running nor queueing the run's job (`/idleBeat`):
    ///   the run is finished or forgotten there (a Java or pyxxl executor restarted within the
    ///   dead timeout forgets its queue; pyxxl drops a result the admin did not accept), and a
    ///   result still on its way would have come by then (xxl-job-core re-sends every 30 s).
    ///   Not for runs sent to the Chime executor process serving now: it loses a result only
    ///   with its process, and its spooled results may wait behind a backlog. It does apply to
    ///   a run sent just before such a process started (within the margin of the rule above).
    /// * the run was sent longer ago than its job's executor timeout plus the dead timeout (the
    ///   time an executor gets to deliver a result) — or, for a job without timeout, longer
    ///   ago than `--lost-result-after` — and the executor says once that it is idle for the
    ///   job.
    ///
    /// A run queued behind others of a SERIAL_EXECUTION job is still waiting in its executor,
    /// which answers busy, so it is left alone however long it takes; an executor that cannot
    /// be asked counts as busy (whether it is gone is the first rule's business). Every kind
    /// is failed with a retry, as XXL-JOB's fail monitor does, and marked as lost: a success
    /// that arrives after all replaces the failure and stops the retry
    /// (`follow_up::plan_late_success`); a late failure changes nothing.
    pub async fn sweep(&mut self, sweeper: &Sweeper) -> crate::store::StoreResult<usize> {
        let now = now_ms();
        let min_age = sweep_min_age(sweeper.dead_timeout, sweeper.lost_result_after);
        let triggered_before = now - min_age.as_millis() as i64;
        let mut pass = SweepPass::new(sweeper, now);
        let mut after_id = 0;
        let mut total = 0;
        loop {
            let page = sweeper
                .store
                .unfinished_runs(triggered_before, after_id, SWEEP_PAGE)
                .await?;
            let full = page.len() as i64 >= SWEEP_PAGE;
            let Some(last) = page.last() else { break };
            after_id = last.id;
            let mut lost = Vec::new();
            let mut kinds = LostKinds::default();
            for run in page {
                let Some(msg) = self.judge(sweeper, &mut pass, &run, &mut kinds).await else {
                    continue;
                };
                self.first_idle.remove(&run.id);
                lost.push(HandleOutcome {
                    run_id: run.id,
                    code: 500,
                    msg: Some(msg),
                    retry: true,
                    lost: true,
                });
            }
            total += fail_lost(sweeper, lost, &kinds).await;
            if !full {
                break;
            }
        }
        // Runs no longer running (or not looked at: their group is gone) are forgotten.
        self.first_idle.retain(|id, _| pass.watched.contains(id));
        Ok(total)
    }

    /// Judges one running run by the rules of [`LostRunSweep::sweep`]: `Some(its result
    /// message)` when it is lost (counted in `kinds`), `None` when it is left running.
    async fn judge(
        &mut self,
        sweeper: &Sweeper,
        pass: &mut SweepPass,
        run: &UnfinishedRun,
        kinds: &mut LostKinds,
    ) -> Option<String> {
        let group = pass
            .groups
            .entry(run.group_id)
            .or_insert_with(|| sweeper.directory.group(run.group_id));
        let group = group.as_ref()?;
        let target = Target::of(group, &run.address);
        let gone = match group.address_type {
            // `None`: not up long enough since a disruption to call any executor gone.
            AddressType::Auto => pass
                .alive
                .as_ref()
                .is_some_and(|alive| !alive.contains(normalize_address(&run.address))),
            AddressType::Manual => !beat(sweeper, &mut pass.probes, target).await,
        };
        let process = sweeper.directory.executor_process(&group.app_name, &run.address);
        let wait = result_wait(sweeper, run.timeout_secs);
        // By the wall clock (the run's stamp is one), and only once this admin has been
        // up for the dead timeout — the time an executor gets to deliver — since its last
        // disruption: a result finished while this admin could not take it comes first.
        let overdue = pass.now > run.triggered_at.saturating_add(wait.as_millis() as i64)
            && pass.clock.up.settled_for(sweeper.dead_timeout);
        if gone {
            kinds.gone += 1;
            Some(JOB_RESULT_LOST.to_owned())
        } else if process.is_some_and(|p| pass.clock.restarted_since(run, p)) {
            kinds.restarted += 1;
            Some(restarted_message(&run.address))
        } else if overdue && idle(sweeper, &mut pass.probes, target, run.job_id).await.is_some() {
            kinds.overdue += 1;
            Some(no_result_message(run.timeout_secs, wait))
        } else if process.is_some_and(|p| run.triggered_at >= p.started_at) {
            // Sent to the process serving now, which says which it is: a Chime
            // executor, which keeps every result until an admin takes it.
            self.first_idle.remove(&run.id);
            None
        } else if let Some(answered) = idle(sweeper, &mut pass.probes, target, run.job_id).await {
            // Timed by the answers, not by the sweeps: probes late in one sweep and
            // early in the next are closer together than the sweeps' starts. In up
            // time, from the last disruption at the earliest: an answer before it
            // says nothing of the time the executor had to deliver since.
            let first = (*self.first_idle.entry(run.id).or_insert(answered)).max(pass.clock.up.disrupted);
            let apart = Duration::from_millis((answered - first).max(0) as u64);
            if apart < sweeper.lost_idle_confirm {
                pass.watched.insert(run.id);
                return None;
            }
            kinds.idle += 1;
            Some(idle_twice_message(apart))
        } else {
            self.first_idle.remove(&run.id);
            None
        }
    }
}

/// What one sweep reads once and keeps while it goes through the pages.
struct SweepPass {
    /// When the sweep started, epoch ms.
    now: i64,
    clock: SweepClock,
    /// The addresses heard within the dead timeout (`None`: not up long enough to tell).
    alive: Option<HashSet<String>>,
    probes: Probes,
    /// Looked up once per sweep: there may be many more running runs than groups.
    groups: HashMap<i64, Option<Group>>,
    /// Runs whose first idle answer is kept for the next sweep; the others' are dropped.
    watched: HashSet<i64>,
}

impl SweepPass {
    fn new(sweeper: &Sweeper, now: i64) -> SweepPass {
        SweepPass {
            now,
            clock: SweepClock {
                margin: restart_margin(sweeper),
                grace: RESTART_REPLAY_GRACE.as_millis() as i64,
                up: sweeper.directory.up_time(),
                stepped_at: sweeper.directory.wall_stepped_at(),
            },
            alive: sweeper.directory.alive_addresses(),
            probes: Probes::default(),
            groups: HashMap::new(),
            watched: HashSet::new(),
        }
    }
}

/// The clocks one sweep reads once, by which its rules are timed.
struct SweepClock {
    /// See [`restart_margin`].
    margin: i64,
    /// [`RESTART_REPLAY_GRACE`] in ms.
    grace: i64,
    /// Every wait is measured in this admin's up time ([`crate::registry::clock`]), counted
    /// from its last disruption at the earliest: an executor is never judged over time in
    /// which this admin could not hear it (down, paused, without its database) or in which
    /// its wall clock stepped.
    up: UpTime,
    /// When the wall clock last stepped, epoch ms.
    stepped_at: i64,
}

impl SweepClock {
    /// Was `run` sent to a process earlier than `process`, now at its address, which has had
    /// its grace to re-send what its predecessor spooled?
    fn restarted_since(&self, run: &UnfinishedRun, process: ExecutorProcess) -> bool {
        // Start estimates and run stamps are compared only on one side of a step
        // of the wall clock (the estimates are learnt anew after one).
        run.triggered_at >= self.stepped_at
            && run.triggered_at < process.started_at - self.margin
            && self.up.now >= process.first_seen.max(self.up.disrupted) + self.grace
    }
}

/// Hands the lost runs of one page to the results writer, waits until they are recorded, and
/// returns how many there were.
async fn fail_lost(sweeper: &Sweeper, lost: Vec<HandleOutcome>, kinds: &LostKinds) -> usize {
    let n = lost.len();
    if n > 0 {
        tracing::info!(
            runs = n,
            executor_gone = kinds.gone,
            executor_restarted = kinds.restarted,
            idle_twice = kinds.idle,
            overdue_and_idle = kinds.overdue,
            "runs without a result to come marked as failed"
        );
        sweeper.metrics.runs_lost.inc_by(n as u64);
        let (tx, rx) = tokio::sync::oneshot::channel();
        sweeper.results.send(ResultMsg::Handle(lost, Some(tx)));
        let _ = rx.await;
    }
    n
}

/// Runs failed by one page of a sweep, by reason (for the log line).
#[derive(Default)]
struct LostKinds {
    gone: usize,
    restarted: usize,
    idle: usize,
    overdue: usize,
}

/// Does the executor answer `/beat`?
async fn beat(sweeper: &Sweeper, probes: &mut Probes, target: Target<'_>) -> bool {
    if let Some(ok) = probes.beats.get(target.address) {
        return *ok;
    }
    let ok = match sweeper.probe_gate.enter(target.address).await {
        Some(_pass) => sweeper.client.beat(target).await.is_success(),
        None => true,
    };
    probes.beats.insert(target.address.to_owned(), ok);
    ok
}

/// Does the executor say `job_id` is neither running nor queued there? `Some(when it said so,
/// up-clock ms)` if it does. An executor that cannot be asked counts as busy: the run is left to the
/// dead-executor check.
async fn idle(sweeper: &Sweeper, probes: &mut Probes, target: Target<'_>, job_id: i64) -> Option<i64> {
    let key = (target.address.to_owned(), job_id);
    if let Some(idle) = probes.idle.get(&key) {
        return *idle;
    }
    let idle = match sweeper.probe_gate.enter(target.address).await {
        Some(_pass) => {
            let reply = sweeper.client.idle_beat(target, job_id).await;
            reply.is_success().then(|| sweeper.directory.up_time().now)
        }
        None => None,
    };
    probes.idle.insert(key, idle);
    idle
}

/// Runs the lost-run sweep every `every` (`--lost-sweep`) until `shutdown`.
pub async fn run_lost_sweep(sweeper: Sweeper, every: Duration, shutdown: CancellationToken) {
    let mut sweep = LostRunSweep::default();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        if let Err(e) = sweep.sweep(&sweeper).await {
            tracing::warn!(error = %e, "lost-run sweep failed");
        }
    }
}
