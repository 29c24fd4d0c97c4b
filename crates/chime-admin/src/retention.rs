//! Retention (`--run-retention-days`, `--audit-retention-days`): at start and then daily,
//! finished runs and audit log entries older than their retention period are deleted, in
//! batches so the scheduler's writes get through in between. Pending and running runs are never
//! deleted. Every admin sweeps; deleting is idempotent, so several admins need no coordination.

use crate::store::Store;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Time between sweeps.
const EVERY: Duration = Duration::from_secs(24 * 3600);
/// Rows read and deleted per batch.
const BATCH: i64 = 1000;

/// What one sweep deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Deleted {
    /// Finished runs.
    pub runs: u64,
    /// Audit log entries.
    pub audit_entries: u64,
    /// Finished workflow instances (with their nodes).
    pub workflow_instances: u64,
    /// Alarms no run raised (`alarm_event`, with their deliveries).
    pub alarm_events: u64,
}

fn cutoff(days: u32) -> i64 {
    crate::model::now_ms() - i64::from(days) * 24 * 3600 * 1000
}

/// What retention works with: the database and the two retention periods.
#[derive(Debug, Clone)]
pub struct Retention {
    /// Where the old rows are deleted.
    pub(crate) store: Store,
    /// `--run-retention-days` (0: keep forever).
    pub(crate) run_days: u32,
    /// `--audit-retention-days` (0: keep forever).
    pub(crate) audit_days: u32,
}

/// Deletes the expired runs and audit entries once (a retention of 0 keeps them).
pub async fn sweep(retention: &Retention) -> Result<Deleted, crate::store::StoreError> {
    let mut deleted = Deleted::default();
    if retention.run_days > 0 {
        deleted.runs = retention
            .store
            .delete_finished_runs_before(cutoff(retention.run_days), BATCH)
            .await?;
        // Instances go with their runs: a finished one older than the runs' retention.
        deleted.workflow_instances = retention
            .store
            .delete_finished_instances_before(cutoff(retention.run_days), BATCH)
            .await?;
        // The alarms of failed instances and of groups without executors, likewise.
        deleted.alarm_events = retention
            .store
            .delete_alarm_events_before(cutoff(retention.run_days))
            .await?;
    }
    if retention.audit_days > 0 {
        deleted.audit_entries = retention
            .store
            .delete_audit_before(cutoff(retention.audit_days), BATCH)
            .await?;
    }
    Ok(deleted)
}

/// Sweeps at start and every day until `shutdown` (nothing when both retentions are 0, keep
/// forever).
pub async fn run(retention: Retention, shutdown: CancellationToken) {
    if retention.run_days == 0 && retention.audit_days == 0 {
        return;
    }
    let mut every = tokio::time::interval(EVERY);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = every.tick() => {}
        }
        let sweeping = sweep(&retention);
        tokio::select! {
            _ = shutdown.cancelled() => return,
            done = sweeping => match done {
                Ok(d) if d == Deleted::default() => {}
                Ok(d) => tracing::info!(
                    runs = d.runs,
                    audit_entries = d.audit_entries,
                    run_days = retention.run_days,
                    audit_days = retention.audit_days,
                    "old runs and audit entries deleted"
                ),
                Err(e) => tracing::warn!(error = %e, "deleting old runs or audit entries failed; trying again tomorrow"),
            },
        }
    }
}
