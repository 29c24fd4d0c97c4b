//! The millisecond timer: claimed runs wait here until their scheduled time, then go to the
//! dispatcher. They come in through its inbox, [`WheelQueue`].
//!
//! A binary heap keyed by due time (ms) and one `sleep_until` for the earliest entry: O(log n)
//! per run, 1 ms resolution from tokio's timer, and no per-entry timer allocations. (XXL-JOB's
//! ring has one-second buckets, so a fire at 12:00:00.900 waits for the next second's bucket.)
//! `tokio_util::time::DelayQueue` would do too; the heap is smaller and needs no keys because
//! entries are never cancelled — a run that must not go out any more is skipped at dispatch.

use crate::dispatch::Dispatcher;
use crate::model::{now_ms, Job};
use crate::results::run_ids::RunIds;
pub use crate::run::WheelEntry;
use crate::store::RunTicket;
use chime_protocol::TriggerType;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The timer's inbox: the claim loop, recovery, the results writer (retries, child runs) and
/// manual triggers put runs on the timer through it. Cheap to clone.
#[derive(Debug, Clone)]
pub struct WheelQueue {
    tx: mpsc::UnboundedSender<WheelEntry>,
    /// Runs in flight: every run put on the timer joins them.
    inflight: Arc<RunIds>,
    /// `--catch-up-rate`: misfire replays sent per second and job.
    catch_up_rate: u32,
}

impl WheelQueue {
    /// A queue and the receiver [`run`] reads; runs put on it count as in flight in `inflight`.
    pub(crate) fn new(inflight: Arc<RunIds>, catch_up_rate: u32) -> (WheelQueue, mpsc::UnboundedReceiver<WheelEntry>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let queue = WheelQueue {
            tx,
            inflight,
            catch_up_rate,
        };
        (queue, rx)
    }

    /// Puts runs of `job` on the timer; misfire replays are paced at `catch_up_rate` per second.
    pub(crate) fn enqueue(&self, job: Arc<Job>, tickets: Vec<RunTicket>, address: Option<String>) {
        let now = now_ms();
        let spacing = 1000 / i64::from(self.catch_up_rate.max(1));
        let mut replay = 0;
        for t in tickets {
            let due = if t.trigger_type == TriggerType::Misfire && t.scheduled_at < now {
                replay += 1;
                now + (replay - 1) * spacing
            } else {
                t.scheduled_at
            };
            self.inflight.insert(t.id);
            let _ = self.tx.send(WheelEntry {
                due,
                job: job.clone(),
                ticket: t,
                address: address.clone(),
            });
        }
    }
}

/// What the timer works with.
#[derive(Debug)]
pub struct WheelLoop {
    /// Where due runs go.
    pub(crate) dispatcher: Arc<Dispatcher>,
    /// Runs in flight: those still on the timer at shutdown leave them unsent.
    pub(crate) inflight: Arc<RunIds>,
    /// Cancelled to stop.
    pub(crate) shutdown: CancellationToken,
}

struct Keyed(i64, u64, WheelEntry);

impl PartialEq for Keyed {
    fn eq(&self, o: &Self) -> bool {
        (self.0, self.1) == (o.0, o.1)
    }
}
impl Eq for Keyed {}
impl PartialOrd for Keyed {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Keyed {
    fn cmp(&self, o: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap, the earliest entry must be on top.
        (o.0, o.1).cmp(&(self.0, self.1))
    }
}

/// Runs the timer until shutdown.
pub async fn run(wheel: WheelLoop, mut rx: mpsc::UnboundedReceiver<WheelEntry>) {
    let mut heap: BinaryHeap<Keyed> = BinaryHeap::new();
    let mut seq: u64 = 0;
    loop {
        let now = now_ms();
        while heap.peek().is_some_and(|k| k.0 <= now) {
            if let Some(Keyed(_, _, entry)) = heap.pop() {
                crate::dispatch::spawn(&wheel.dispatcher, entry);
            }
        }
        let sleep_for = heap
            .peek()
            .map(|k| Duration::from_millis((k.0 - now).max(0) as u64))
            .unwrap_or(Duration::from_secs(3600));
        tokio::select! {
            _ = wheel.shutdown.cancelled() => {
                // Not sent: they stay pending in the database for the next start.
                for Keyed(_, _, entry) in heap.drain() {
                    wheel.inflight.remove(entry.ticket.id);
                }
                return;
            }
            got = rx.recv() => match got {
                Some(entry) => {
                    seq += 1;
                    heap.push(Keyed(entry.due, seq, entry));
                    // Take everything queued at once: claims arrive in bursts.
                    while let Ok(entry) = rx.try_recv() {
                        seq += 1;
                        heap.push(Keyed(entry.due, seq, entry));
                    }
                }
                None => return,
            },
            _ = tokio::time::sleep_until(Instant::now() + sleep_for) => {}
        }
    }
}
