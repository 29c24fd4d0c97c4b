//! Workflows: jobs as a DAG, each node run exactly once, across crashes and several admins.
//!
//! `dag.rs` holds the graph and the rules of an instance's progress (no I/O), `spec.rs` a
//! workflow as stored and as typed in. The loop here fires due workflows on the jobs' schedule
//! engine and moves instances on when their nodes' runs finish; `store/workflows.rs` does each
//! step in one transaction.

pub mod dag;
pub mod spec;

use crate::metrics::{Metrics, StateLabel};
use crate::model::{now_ms, Job};
use crate::schedule::partitions::Partitions;
use crate::schedule::wheel::WheelQueue;
use crate::schedule::{plan_fires, MisfireRules};
use crate::store::{NodeTickets, Store};
use spec::Workflow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// How long a wake-up by new results waits for more before the round.
const GATHER: Duration = Duration::from_millis(10);
/// How often instance counts are read for `chime_workflow_instances`.
const COUNTS_EVERY: Duration = Duration::from_secs(5);

/// Wakes the workflow loop when runs may have finished: the results writer calls
/// [`WorkflowWake::results_written`] after each batch, which wakes the loop only while some
/// node is running, so admins without workflows pay nothing per result.
#[derive(Debug, Default)]
pub struct WorkflowWake {
    notify: Notify,
    active: AtomicBool,
}

impl WorkflowWake {
    /// A batch of results was written.
    pub fn results_written(&self) {
        if self.active.load(Ordering::Relaxed) {
            self.notify.notify_one();
        }
    }

    /// Something changed now (a workflow was started or triggered, an operator changed a node).
    pub fn now(&self) {
        self.active.store(true, Ordering::Relaxed);
        self.notify.notify_one();
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
        owner: String::new(),
        alarm_contacts: String::new(),
        schedule_type: w.schedule_type,
        schedule_expr: w.schedule_expr.clone(),
        time_zone: w.time_zone.clone(),
        misfire_strategy: w.misfire_strategy,
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
/// in the held partitions, then move on every instance with a finished node run (in batches,
/// until none is left); then wait for the next tick or a wake-up.
pub async fn run(l: WorkflowLoop) {
    let lookahead = l.lookahead.as_millis() as i64;
    let mut counted = Instant::now() - COUNTS_EVERY;
    loop {
        let held = l.partitions.held();
        let now = now_ms();
        let horizon = now + lookahead;
        let rules = l.rules;
        let mut busy = false;
        match l
            .store
            .fire_workflows(&held, horizon, |w| plan_fires(&schedule_of(w), now, horizon, rules))
            .await
        {
            Ok(tickets) => {
                busy |= !tickets.is_empty();
                enqueue(&l.wheel, tickets);
            }
            Err(e) => tracing::warn!(error = %e, "firing workflows failed; trying again next round"),
        }
        // Every batch moves its instances on; a full one may have left more.
        for _ in 0..50 {
            match l.store.advance_workflows(&held).await {
                Ok(a) => {
                    let more = !a.lateness_ms.is_empty() || !a.tickets.is_empty();
                    for ms in &a.lateness_ms {
                        l.metrics.workflow_node_lateness.observe(*ms as f64 / 1000.0);
                    }
                    busy |= more;
                    enqueue(&l.wheel, a.tickets);
                    if !more {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "moving workflow instances on failed; trying again next round");
                    break;
                }
            }
        }
        // A busy round leaves nodes running; an idle one asks whether any still are.
        let active = busy || l.store.has_running_nodes().await.unwrap_or(true);
        l.wake.active.store(active, Ordering::Relaxed);
        if counted.elapsed() >= COUNTS_EVERY {
            counted = Instant::now();
            if let Ok(counts) = l.store.instance_counts().await {
                for state in dag::InstanceState::ALL {
                    let n = counts.iter().find(|(s, _)| *s == state).map_or(0, |(_, n)| *n);
                    l.metrics
                        .workflow_instances
                        .get_or_create(&StateLabel {
                            state: state.as_str().to_owned(),
                        })
                        .set(n);
                }
            }
        }
        tokio::select! {
            _ = l.shutdown.cancelled() => return,
            _ = tokio::time::sleep(l.tick) => {}
            _ = l.wake.notify.notified() => {
                // Results arrive in many small batches: gathering a few milliseconds of them
                // moves many instances on in one transaction instead of a few in each.
                tokio::time::sleep(GATHER).await;
            }
        }
    }
}
