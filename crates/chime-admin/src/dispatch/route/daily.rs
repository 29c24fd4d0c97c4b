//! Per-job routing state forgotten once a day, as XXL-JOB's routers forget theirs: jobs and
//! addresses long gone do not pile up, and no counter grows without end.

use std::collections::HashMap;
use std::sync::Mutex;

const DAY_MS: i64 = 86_400_000;

/// Each job's state `T`, all of it cleared a day after it was last cleared.
#[derive(Debug, Default)]
pub struct DailyJobs<T> {
    state: Mutex<(HashMap<i64, T>, i64)>,
}

impl<T: Default> DailyJobs<T> {
    /// Runs `f` on the state of `job_id` (a default one for a job not seen since the last
    /// clearing), clearing every job's first when the day is over.
    pub fn with<R>(&self, job_id: i64, now_ms: i64, f: impl FnOnce(&mut T) -> R) -> R {
        let mut guard = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (jobs, reset_at) = &mut *guard;
        if now_ms >= *reset_at {
            jobs.clear();
            *reset_at = now_ms + DAY_MS;
        }
        f(jobs.entry(job_id).or_default())
    }
}
