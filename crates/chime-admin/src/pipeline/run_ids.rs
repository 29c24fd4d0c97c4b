//! Sets of run ids shared between the loops, apart from the results writer itself: the timer,
//! dispatch and the API add to them, and the writer reads them.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard};

/// A set of run ids shared between tasks. The admin keeps three:
///
/// * the runs in flight: on the timer or being sent, their trigger result not yet written.
///   Recovery does not load them a second time, and at shutdown the results writer waits for
///   them.
/// * the runs a user is killing: the executor's own callback for such a run (it reports the
///   kill, often before the admin records it) must not start a retry.
/// * the runs withdrawn before their send (a stopped workflow instance's): dispatch drops them.
#[derive(Debug, Default)]
pub struct RunIds(Mutex<HashSet<i64>>);

impl RunIds {
    fn set(&self) -> MutexGuard<'_, HashSet<i64>> {
        // Every change is one insert or remove: a panic elsewhere cannot leave the set torn.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a run.
    pub fn insert(&self, run_id: i64) {
        self.set().insert(run_id);
    }

    /// Removes a run; whether it was in the set.
    pub fn remove(&self, run_id: i64) -> bool {
        self.set().remove(&run_id)
    }

    /// Whether the run is in the set.
    pub fn contains(&self, run_id: i64) -> bool {
        self.set().contains(&run_id)
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.set().is_empty()
    }
}
