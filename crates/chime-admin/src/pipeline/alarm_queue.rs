//! The alarm task's inbox, apart from the task itself: the results writer holds the sending
//! end and needs nothing of the task.

use tokio::sync::mpsc;

/// The alarm task's inbox. Cheap to clone; sending never blocks.
#[derive(Debug, Clone)]
pub struct AlarmQueue {
    tx: mpsc::UnboundedSender<Vec<i64>>,
}

impl AlarmQueue {
    /// A queue and the receiver `alarm::run` reads.
    pub fn new() -> (AlarmQueue, mpsc::UnboundedReceiver<Vec<i64>>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (AlarmQueue { tx }, rx)
    }

    /// Called by the results writer after a batch is committed: passes on the ids of runs that
    /// failed for good (`follow_up` decides which; the alarm task's claim still checks each).
    /// Returns at once.
    pub fn after_commit(&self, failed: Vec<i64>) {
        if !failed.is_empty() {
            // Closed only at shutdown; the start-up sweep of the next start covers these.
            let _ = self.tx.send(failed);
        }
    }
}
