//! Operations of flow control: limits on running runs and the queue of runs waiting for a slot.

use crate::api::limits::validate_limit_name;
use crate::api::{Limit, LimitSpec, QueuedRunEntry};
use crate::center::{Admin, OpError};
use crate::model::now_ms;
use crate::store::StoreError;

/// Most queued runs one listing shows.
pub const MAX_QUEUE_LISTED: i64 = 1000;

impl Admin {
    /// Every limit with its running and queued runs.
    pub async fn limits(&self) -> Result<Vec<Limit>, OpError> {
        let all = self.store.limit_usage().await?;
        Ok(all
            .into_iter()
            .map(|l| Limit::shown(l.name, l.rule, l.running, l.queued, l.updated_at))
            .collect())
    }

    /// Sets limit `name` as `spec` says (creating it); true when it was created. Applies here
    /// at once, on other admins at their queue's next round.
    pub async fn set_limit(&self, name: &str, spec: &LimitSpec) -> Result<bool, OpError> {
        validate_limit_name(name)?;
        let rule = spec.validate()?;
        let created = self.store.put_limit(name, &rule, now_ms()).await?;
        self.known_limits_changed().await?;
        Ok(created)
    }

    /// Deletes limit `name`: the runs waiting only on it go on at the queue's next round.
    pub async fn delete_limit(&self, name: &str) -> Result<(), OpError> {
        validate_limit_name(name)?;
        if !self.store.delete_limit(name).await? {
            return Err(StoreError::NotFound(format!("limit '{name}'")).into());
        }
        self.known_limits_changed().await?;
        Ok(())
    }

    /// After a change of limits: this admin's sends follow it from the next one on (the queue's
    /// loop would only read it at its next round, and runs sent meanwhile would pass a new
    /// limit), and the queue goes through its runs again.
    async fn known_limits_changed(&self) -> Result<(), OpError> {
        let limits = self.store.limits().await?;
        self.flow.set(limits.into_iter().map(|l| l.name));
        self.flow.wake();
        Ok(())
    }

    /// The queue, in the order its runs will go (`groups`: only runs of these groups' jobs).
    pub async fn queue(&self, groups: Option<&[i64]>) -> Result<Vec<QueuedRunEntry>, OpError> {
        let now = now_ms();
        let entries = self.store.queue_entries(groups, MAX_QUEUE_LISTED).await?;
        Ok(entries
            .into_iter()
            .zip(1..)
            .map(|(e, position)| QueuedRunEntry {
                run_id: e.run.run_id,
                job_id: e.run.job_id,
                group_id: e.group_id,
                description: e.description,
                waits_on: e.run.waits_on,
                priority: e.run.priority,
                queued_at: e.run.queued_at,
                waited_ms: (now - e.run.queued_at).max(0),
                position,
                skip_queue: e.run.skip_queue,
                leaving: e.admitted_at > 0,
            })
            .collect())
    }

    /// Sends queued run `run_id` on regardless of its limits, at the queue's next round (at
    /// once on this admin).
    pub async fn run_now(&self, run_id: i64) -> Result<(), OpError> {
        if !self.store.skip_queue(run_id).await? {
            return Err(OpError::Conflict(format!("run {run_id} is not waiting in the queue")));
        }
        self.flow.wake();
        Ok(())
    }

    /// Cancels queued run `run_id`: it ends without being sent, as killed by `by`.
    pub async fn cancel_queued(&self, run_id: i64, by: &str) -> Result<(), OpError> {
        let msg = format!("Cancelled in the queue by {by}; never sent");
        if !self.store.cancel_queued(run_id, by, &msg, now_ms()).await? {
            return Err(OpError::Conflict(format!(
                "run {run_id} is not waiting in the queue (it may be on its way to its executor)"
            )));
        }
        self.flow.wake();
        Ok(())
    }
}
