//! The workflow loop: fires due workflows on the jobs' schedule engine and moves instances on
//! when their nodes' runs finish, as the results writer reports them (through
//! `pipeline::workflow_wake`) and as a search of the database finds them every tick. It sits
//! beside the claim loop because it is one: the same partitions, calendars and misfire rules.
//! `store/workflow_steps.rs` does each step in one transaction; what a step decides is
//! `workflow::step`'s, without I/O.

use super::{Calendars, MisfireRules};
use crate::metrics::{Metrics, StateLabel};
use crate::model::{now_ms, Job};
use crate::pipeline::partitions::Partitions;
use crate::pipeline::wheel_queue::WheelQueue;
use crate::pipeline::workflow_wake::WorkflowWake;
use crate::store::{Advanced, NodeTickets, Store, StoreResult, ADVANCE_BATCH};
use crate::workflow::dag;
use crate::workflow::live::LiveInstances;
use crate::workflow::spec::Workflow;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How long a wake-up by new results waits for more before the round, when results are
/// flowing: many instances then move on in one transaction instead of a few in each.
const GATHER: Duration = Duration::from_millis(10);
/// Results are gathered only while this many or more arrive together (pending at the wake-up,
/// or reported in the round before): a lone chain has nothing to batch with, and its step
/// costs no gathering.
const GATHER_FROM: usize = 16;
/// How often the open instances (queued, running) are counted for `chime_workflow_instances`.
const COUNTS_EVERY: Duration = Duration::from_secs(5);
/// How often the instances in every state are counted for it: the finished ones are all the
/// instances kept (a million is 47 ms to count on SQLite). In between, the instances this admin
/// finishes are added to their states' gauges as they finish; the count puts in those that other
/// admins finished and operators stopped, and takes out those retention deleted.
const ALL_COUNTS_EVERY: Duration = Duration::from_secs(300);

/// Most batches of one kind a round runs (a full batch may have left more).
const BATCHES_PER_ROUND: usize = 50;

/// Whether another batch should follow one whose outcome is `batch` (whether it did anything,
/// and whether more may be left), adding what it did to `busy`. A failure is logged as `doing`
/// failed and ends the round's batches: the next round tries again.
fn more_batches(doing: &str, batch: StoreResult<(bool, bool)>, busy: &mut bool) -> bool {
    match batch {
        Ok((did, more)) => {
            *busy |= did;
            more
        }
        Err(e) => {
            tracing::warn!(error = %e, "{doing} failed; trying again next round");
            false
        }
    }
}

/// What the workflow loop works with.
#[derive(Debug)]
pub struct WorkflowLoop {
    /// Where workflows and instances are.
    pub(crate) store: Store,
    /// The partitions whose workflows this admin fires and moves on.
    pub(crate) partitions: Arc<Partitions>,
    /// Where node runs go.
    pub(crate) wheel: WheelQueue,
    /// Misfire settings, as for jobs.
    pub(crate) rules: MisfireRules,
    /// `--lookahead`: fires are made this far ahead, their first runs wait on the timer.
    pub(crate) lookahead: Duration,
    /// `--tick`: the longest wait between rounds.
    pub(crate) tick: Duration,
    /// Instance counts and node lateness.
    pub(crate) metrics: Arc<Metrics>,
    /// Wakes a round early.
    pub(crate) wake: Arc<WorkflowWake>,
    /// Cancelled to stop.
    pub(crate) shutdown: CancellationToken,
}

/// A workflow's schedule as the jobs' fire planner reads it: the same engine, zones and
/// misfire policies.
fn schedule_of(w: &Workflow) -> Job {
    Job {
        id: w.id,
        key: String::new(),
        group_id: 0,
        partition: w.partition,
        description: String::new(),
        info: crate::model::JobInfo::default(),
        flow: crate::model::JobFlow::default(),
        schedule_type: w.schedule_type,
        schedule_expr: w.schedule_expr.clone(),
        time_zone: w.time_zone.clone(),
        misfire_strategy: w.misfire_strategy,
        more_schedules: Vec::new(),
        calendar: w.calendar.clone(),
        business_days: w.business_days.clone(),
        route_strategy: chime_protocol::RouteStrategy::First,
        handler: String::new(),
        param: String::new(),
        block_strategy: Default::default(),
        timeout_secs: 0,
        retry_count: 0,
        child_job_ids: Vec::new(),
        glue_type: chime_protocol::GlueType::Bean,
        glue_source: String::new(),
        glue_updated_at: 0,
        running: w.running,
        anchor_at: w.anchor_at,
        next_fire_at: w.next_fire_at,
        paused_until: w.paused_until,
        last_fire_at: w.last_fire_at,
        created_at: w.created_at,
        updated_at: w.updated_at,
    }
}

/// Puts node runs on the timer.
pub fn enqueue(wheel: &WheelQueue, tickets: NodeTickets) {
    for (job, ticket) in tickets {
        wheel.enqueue(job, vec![ticket], None);
    }
}

/// Fires due workflows and moves instances on, until shutdown. Each round: fire what is due
/// in the held partitions; move on the instances whose node runs the results writer reported
/// finished; every tick (or when an operator changed something), also look in the database for
/// node runs finished that were not reported here (recorded by another admin, or by the
/// lost-run sweep); then wait for the next tick or a wake-up.
pub async fn run(l: WorkflowLoop) {
    let mut counts = Counts {
        open: Instant::now() - COUNTS_EVERY,
        all: Instant::now() - ALL_COUNTS_EVERY,
    };
    let mut looked = Instant::now() - l.tick;
    let mut live = LiveInstances::default();
    let mut calendars = Calendars::default();
    let mut held_before: Vec<(i64, i64)> = Vec::new();
    loop {
        let held = l.held_partitions(&mut held_before, &mut live);
        // The database is looked in (for due workflows, and for nodes finished where the
        // results writer did not see them) once a tick, or at once when told; a round woken by
        // results only moves on the instances they name. Fires are made up to the lookahead
        // ahead of their time, and the lookahead is at least a tick, so none waits for this;
        // a tick fires every due workflow, a batch at a time, where one batch (200) a round
        // left the rest of a larger second to the next ticks.
        let look = looked.elapsed() >= l.tick || l.wake.look.swap(false, Ordering::Relaxed);
        let mut busy = false;
        if look {
            busy |= l.fire_due(&held, &mut live, &mut calendars).await;
        }
        let (reported_last, stepped) = l.advance_reported(&mut live).await;
        busy |= stepped;
        if look {
            looked = Instant::now();
            busy |= l.advance_found(&held, &mut live).await;
            // What the loop waits for, rebuilt from what it keeps.
            l.wake.watch_only(live.running_runs());
        }
        // A busy round leaves nodes running; an idle one asks whether any still are.
        let active = busy || !live.is_empty() || l.store.has_running_nodes().await.unwrap_or(true);
        l.wake.active.store(active, Ordering::Relaxed);
        l.count_instances(&mut counts).await;
        tokio::select! {
            _ = l.shutdown.cancelled() => return,
            _ = tokio::time::sleep(l.tick.saturating_sub(looked.elapsed())) => {}
            _ = l.wake.notify.notified() => {
                // Results arrive in many small batches while many nodes run: gathering a few
                // milliseconds of them moves many instances on in one transaction. A few
                // results after a quiet spell have nothing to gather with.
                if reported_last.max(l.wake.pending()) >= GATHER_FROM {
                    tokio::time::sleep(GATHER).await;
                }
            }
        }
    }
}

/// When the instances were last counted: the open ones, and those in every state.
struct Counts {
    open: Instant,
    all: Instant,
}

impl WorkflowLoop {
    /// The partitions held now. What is kept of a partition no longer held, or held in another
    /// lease epoch than at the last round, is let go.
    fn held_partitions(&self, held_before: &mut Vec<(i64, i64)>, live: &mut LiveInstances) -> Vec<i64> {
        let held_now = self.partitions.held_epochs();
        if held_now != *held_before {
            // What is kept of a partition held throughout, in one lease epoch, is still true.
            let kept: Vec<i64> = held_now
                .iter()
                .filter(|p| held_before.contains(p))
                .map(|(p, _)| *p)
                .collect();
            live.keep_partitions(&kept);
            held_before.clone_from(&held_now);
        }
        held_now.iter().map(|(p, _)| *p).collect()
    }

    /// Fires the due workflows of `held`, batch after batch (a full batch may have left more
    /// due). Returns whether it did anything.
    async fn fire_due(&self, held: &[i64], live: &mut LiveInstances, calendars: &mut Calendars) -> bool {
        let lookahead = self.lookahead.as_millis() as i64;
        let rules = self.rules;
        let mut busy = false;
        for _ in 0..BATCHES_PER_ROUND {
            let now = now_ms();
            let horizon = now + lookahead;
            let fired = self
                .store
                .fire_workflows(held, horizon, live, |w| {
                    calendars.plan(&schedule_of(w), now, horizon, rules)
                })
                .await
                .map(|a| {
                    let more = a.more;
                    (self.after_step(a), more)
                });
            if !more_batches("firing workflows", fired, &mut busy) {
                break;
            }
        }
        busy
    }

    /// Moves on the instances whose node runs the results writer reported finished, a batch at
    /// a time, each batch's runs on the timer before the next is stepped. Returns how many runs
    /// were reported, and whether a step did anything.
    async fn advance_reported(&self, live: &mut LiveInstances) -> (usize, bool) {
        let finished = self.wake.take_finished();
        if finished.is_empty() {
            return (0, false);
        }
        let mut ids: Vec<i64> = finished.keys().filter_map(|r| live.instance_of_run(*r)).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut busy = false;
        for batch in ids.chunks(ADVANCE_BATCH) {
            match self.store.advance_reported(batch, &finished, live).await {
                Ok(a) => busy |= self.after_step(a),
                Err(e) => {
                    // Looked for in the database instead, right away.
                    tracing::warn!(error = %e, "moving workflow instances on failed; trying again");
                    self.wake.look.store(true, Ordering::Relaxed);
                }
            }
        }
        (finished.len(), busy)
    }

    /// Looks in the database for instances of `held`'s workflows with a finished node, and moves
    /// them on, batch after batch (a full one may have left more).
    async fn advance_found(&self, held: &[i64], live: &mut LiveInstances) -> bool {
        let mut busy = false;
        for _ in 0..BATCHES_PER_ROUND {
            let stepped = self.store.advance_found(held, live).await;
            // A batch that did something may have been a full one.
            let stepped = stepped.map(|a| self.after_step(a)).map(|did| (did, did));
            if !more_batches("moving workflow instances on", stepped, &mut busy) {
                break;
            }
        }
        busy
    }

    /// Counts the instances for `chime_workflow_instances`: the open ones every
    /// [`COUNTS_EVERY`], those in every state every [`ALL_COUNTS_EVERY`].
    async fn count_instances(&self, counts: &mut Counts) {
        if counts.open.elapsed() < COUNTS_EVERY {
            return;
        }
        counts.open = Instant::now();
        let all = counts.all.elapsed() >= ALL_COUNTS_EVERY;
        let Ok(found) = self.store.instance_counts(!all).await else {
            return;
        };
        if all {
            counts.all = counts.open;
        }
        // A state not counted this time keeps its gauge; one counted but not listed has no
        // instance.
        for state in dag::InstanceState::ALL.into_iter().filter(|s| all || !s.is_final()) {
            let n = found.iter().find(|(s, _)| *s == state).map_or(0, |(_, n)| *n);
            let label = StateLabel {
                state: state.as_str().to_owned(),
            };
            self.metrics.workflow_instances.get_or_create(&label).set(n);
        }
    }

    /// Watches the runs a step made or adopted, then puts the new ones on the timer (in that
    /// order: a run cannot finish before it is sent). Returns whether the step did anything.
    fn after_step(&self, a: Advanced) -> bool {
        let busy = !a.is_empty();
        for ms in &a.lateness_ms {
            self.metrics.workflow_node_lateness.observe(*ms as f64 / 1000.0);
        }
        // Final states are counted in the database every few minutes only; until then the
        // instances this admin finishes are added here.
        for end in &a.finished {
            self.metrics
                .workflow_instances
                .get_or_create(&StateLabel {
                    state: end.as_str().to_owned(),
                })
                .inc();
        }
        if !a.waiting.is_empty() {
            self.wake.active.store(true, Ordering::Relaxed);
            self.wake.watch(a.waiting);
        }
        enqueue(&self.wheel, a.tickets);
        busy
    }
}
