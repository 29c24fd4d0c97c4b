//! The workflow loop's wake-up, apart from the loop itself: the results writer hands it the node
//! runs it recorded, and the API tells it of an operator's change, without importing the loop.

use crate::run::WrittenResult;
use crate::workflow::Reported;
use rustc_hash::FxHashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use tokio::sync::Notify;

/// Tells the workflow loop what changed. The results writer calls
/// [`WorkflowWake::results_written`] after each batch with the runs it recorded; those that
/// are node runs the loop waits for are handed to it, and wake it. Only while some node is
/// running does the writer even look, so admins without workflows pay nothing per result.
#[derive(Debug, Default)]
pub struct WorkflowWake {
    /// Wakes the loop.
    pub(crate) notify: Notify,
    /// Whether any node is running, as far as the loop knows; while not, results are not looked at.
    pub(crate) active: AtomicBool,
    /// Look in the database too, in the next round (an operator changed something).
    pub(crate) look: AtomicBool,
    runs: Mutex<Watched>,
}

/// The node runs the loop waits for, and those of them recorded since its last round.
#[derive(Debug, Default)]
struct Watched {
    waiting: FxHashSet<i64>,
    finished: Reported,
}

impl WorkflowWake {
    fn watched(&self) -> MutexGuard<'_, Watched> {
        // Each change is a few inserts and removes: a panic elsewhere cannot leave it torn.
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A batch of results was written: `runs` had a result or failed to be sent; `written`
    /// are the results among them seen to end their runs.
    pub fn results_written(&self, runs: impl IntoIterator<Item = i64>, written: Vec<WrittenResult>) {
        if !self.active.load(Ordering::Relaxed) {
            return;
        }
        let mut w = self.watched();
        let before = w.finished.len();
        for end in written {
            if w.waiting.remove(&end.run_id) {
                w.finished.insert(end.run_id, Some(end));
            }
        }
        for run in runs {
            if w.waiting.remove(&run) {
                w.finished.insert(run, None);
            }
        }
        if w.finished.len() > before {
            drop(w);
            self.notify.notify_one();
        }
    }

    /// Something changed now (a workflow was started or triggered, an operator changed a node).
    pub fn now(&self) {
        self.active.store(true, Ordering::Relaxed);
        self.look.store(true, Ordering::Relaxed);
        self.notify.notify_one();
    }

    /// The loop waits for these runs' results.
    pub(crate) fn watch(&self, runs: impl IntoIterator<Item = i64>) {
        self.watched().waiting.extend(runs);
    }

    /// The loop waits for exactly these runs (forgetting runs of instances it let go).
    pub(crate) fn watch_only(&self, runs: impl IntoIterator<Item = i64>) {
        let mut w = self.watched();
        w.waiting.clear();
        w.waiting.extend(runs);
    }

    /// The watched runs recorded since the last call.
    pub(crate) fn take_finished(&self) -> Reported {
        std::mem::take(&mut self.watched().finished)
    }
}
