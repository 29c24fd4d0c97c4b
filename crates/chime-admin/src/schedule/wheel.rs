//! The millisecond timer: claimed runs wait here until their scheduled time, then go to the
//! dispatcher. They come in through its inbox, `pipeline::wheel_queue::WheelQueue`.
//!
//! A binary heap keyed by due time (ms) and one `sleep_until` for the earliest entry: O(log n)
//! per run, 1 ms resolution from tokio's timer, and no per-entry timer allocations. (XXL-JOB's
//! ring has one-second buckets, so a fire at 12:00:00.900 waits for the next second's bucket.)
//! `tokio_util::time::DelayQueue` would do too; the heap is smaller and needs no keys because
//! entries are never cancelled — a run that must not go out any more is skipped at dispatch.

use crate::dispatch::Dispatcher;
use crate::model::now_ms;
use crate::pipeline::run_ids::RunIds;
pub use crate::run::WheelEntry;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

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
