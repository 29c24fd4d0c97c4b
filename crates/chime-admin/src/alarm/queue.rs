//! The alarm task's inbox, apart from the task itself: the results writer holds the sending
//! end and needs nothing of the task.

use tokio::sync::mpsc;

/// The alarm task's inbox. Cheap to clone; sending never blocks.
#[derive(Debug, Clone)]
pub struct AlarmQueue {
    pub(super) tx: mpsc::UnboundedSender<Vec<i64>>,
}

impl AlarmQueue {
    /// A queue and the receiver `alarm::run` reads.
    pub fn new() -> (AlarmQueue, mpsc::UnboundedReceiver<Vec<i64>>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (AlarmQueue { tx }, rx)
    }
}
