//! Pausing jobs and workflows until a time: one column, `paused_until`, that the claim loop and
//! the workflow loop compare with their horizon (`runs/claim.rs`, `workflow_steps.rs`). The fire
//! times stay where the pause found them, so the fires it covered are planned as missed fires
//! when it ends (`schedule::plan_fires`).

use super::jobs::BUMP_UPDATED_AT;
use super::{Store, StoreResult};
use crate::model::now_ms;

/// What a pause or a resume applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paused {
    /// One job.
    Job(i64),
    /// Every job of one executor group.
    GroupJobs(i64),
    /// One workflow.
    Workflow(i64),
}

impl Store {
    /// Pauses what `what` names until `until`; returns how many rows changed. Each changed
    /// row's `updated_at` moves forward, as after any edit.
    pub async fn set_paused(&self, what: Paused, until: i64) -> StoreResult<u64> {
        self.write_pause(what, until, "").await
    }

    /// Ends now the pauses of what `what` names that have not ended; returns how many. The end
    /// is kept (`paused_until` = now, a time passed), so the fires the pause covered are still
    /// missed fires for the planner, however recent, as when a pause ends by itself.
    pub async fn end_pause(&self, what: Paused, now: i64) -> StoreResult<u64> {
        self.write_pause(what, now, " AND paused_until > ?").await
    }

    async fn write_pause(&self, what: Paused, until: i64, only: &str) -> StoreResult<u64> {
        let (table, key, id) = match what {
            Paused::Job(id) => ("job", "id", id),
            Paused::GroupJobs(group) => ("job", "group_id", group),
            Paused::Workflow(id) => ("workflow", "id", id),
        };
        let q = self.sql_text(format!(
            "UPDATE {table} SET paused_until = ?, updated_at = {BUMP_UPDATED_AT} WHERE {key} = ?{only}"
        ));
        let now = now_ms();
        let mut query = sqlx::query(&q).bind(until).bind(now).bind(now).bind(id);
        if !only.is_empty() {
            query = query.bind(until);
        }
        Ok(query.execute(&self.write).await?.rows_affected())
    }
}
