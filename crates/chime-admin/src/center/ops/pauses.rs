//! Pausing a job, the jobs of a group (maintenance) or a workflow until a time, and resuming
//! early. A pause holds back fires, never runs already sent or claimed (the next few seconds'
//! fires may still go); when it ends, by itself or by a resume, the fires it covered follow the
//! misfire policy of their job or workflow.

use crate::center::{Admin, OpError};
use crate::model::{now_ms, Invalid, Job};
use crate::store::{retry_deadlocked, Paused};
use crate::workflow::spec::Workflow;

/// The longest pause: a year and a day. A longer one is a stop, which says so.
pub const MAX_PAUSE_MS: i64 = 366 * 24 * 3600 * 1000;

/// `until` checked as the end of a pause starting now.
fn pause_end(until: i64) -> Result<i64, OpError> {
    let now = now_ms();
    if until <= now {
        return Err(Invalid::new("until", format!("must be in the future (now is {now}, epoch ms)")).into());
    }
    if until - now > MAX_PAUSE_MS {
        return Err(Invalid::new("until", "must be within 366 days; stop the job to pause it for longer").into());
    }
    Ok(until)
}

impl Admin {
    /// Pauses a job until `until` (epoch ms); answers it.
    pub async fn pause_job(&self, id: i64, until: i64) -> Result<Job, OpError> {
        let until = pause_end(until)?;
        self.store.job(id).await?;
        retry_deadlocked(|| self.store.set_paused(Paused::Job(id), until)).await?;
        Ok(self.store.job(id).await?)
    }

    /// Ends a job's pause now; the fires it covered follow its misfire policy at once.
    pub async fn resume_job(&self, id: i64) -> Result<Job, OpError> {
        self.store.job(id).await?;
        retry_deadlocked(|| self.store.end_pause(Paused::Job(id), now_ms())).await?;
        let job = self.store.job(id).await?;
        self.wake_scheduler_for(&job);
        Ok(job)
    }

    /// Pauses every job of group `group_id` until `until`; answers how many jobs.
    pub async fn pause_group(&self, group_id: i64, until: i64) -> Result<u64, OpError> {
        let until = pause_end(until)?;
        Ok(retry_deadlocked(|| self.store.set_paused(Paused::GroupJobs(group_id), until)).await?)
    }

    /// Ends the pause of every paused job of group `group_id` now; answers how many.
    pub async fn resume_group(&self, group_id: i64) -> Result<u64, OpError> {
        let n = retry_deadlocked(|| self.store.end_pause(Paused::GroupJobs(group_id), now_ms())).await?;
        self.wake_scheduler();
        Ok(n)
    }

    /// Pauses a workflow until `until`: no instance is fired before then.
    pub async fn pause_workflow(&self, id: i64, until: i64) -> Result<Workflow, OpError> {
        let until = pause_end(until)?;
        retry_deadlocked(|| self.store.set_paused(Paused::Workflow(id), until)).await?;
        Ok(self.store.workflow(id).await?)
    }

    /// Ends a workflow's pause now.
    pub async fn resume_workflow(&self, id: i64) -> Result<Workflow, OpError> {
        retry_deadlocked(|| self.store.end_pause(Paused::Workflow(id), now_ms())).await?;
        self.workflows.now();
        Ok(self.store.workflow(id).await?)
    }
}
