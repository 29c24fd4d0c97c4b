//! The timer's inbox, apart from the timer itself: the claim loop, recovery, the results writer,
//! the workflow loop and manual triggers put runs on the timer without importing it.

use super::run_ids::RunIds;
use crate::model::{now_ms, Job};
use crate::run::{RunTicket, WheelEntry};
use chime_protocol::TriggerType;
use std::sync::Arc;
use tokio::sync::mpsc;

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
    /// A queue and the receiver `schedule::wheel::run` reads; runs put on it count as in flight in `inflight`.
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
