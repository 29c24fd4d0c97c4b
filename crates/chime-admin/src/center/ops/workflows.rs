//! Operations on workflows and their instances. A change to a workflow wakes the workflow
//! loop; runs an operation starts are put on the timer here and watched by the loop.

use crate::center::{Admin, OpError};
use crate::store::{retry_deadlocked, NodeChange, NodeTickets};
use crate::workflow::spec::{Workflow, WorkflowDraft, WorkflowSpec};
use chime_protocol::TriggerType;

impl Admin {
    /// Checks a workflow body against `base` (on update) and the jobs its nodes name.
    async fn workflow_draft(&self, spec: &WorkflowSpec, base: Option<&Workflow>) -> Result<WorkflowDraft, OpError> {
        let ids: Vec<i64> = spec
            .definition
            .as_ref()
            .or(base.map(|b| &b.definition))
            .map(|d| d.nodes.iter().map(|n| n.job_id).filter(|id| *id > 0).collect())
            .unwrap_or_default();
        let jobs = self.store.node_jobs(&ids).await?;
        let mut draft = spec.validate(base, &self.config.default_time_zone, |id| jobs.get(&id).copied())?;
        // Each named channel must exist; a list kept unchanged is not looked up again.
        if base.is_none_or(|b| b.alarm_channels != draft.alarm_channels) {
            draft.alarm_channels = self
                .checked_channel_names("alarm_channels", &draft.alarm_channels)
                .await?;
        }
        Ok(draft)
    }

    /// Creates a workflow.
    pub async fn create_workflow(&self, spec: &WorkflowSpec) -> Result<Workflow, OpError> {
        let draft = self.workflow_draft(spec, None).await?;
        let workflow = self.store.insert_workflow(&draft).await?;
        self.workflows.now();
        Ok(workflow)
    }

    /// Changes a workflow: fields `spec` leaves out keep their value; running instances keep
    /// the graph they started with.
    pub async fn update_workflow(&self, id: i64, spec: &WorkflowSpec) -> Result<Workflow, OpError> {
        let current = self.store.workflow(id).await?;
        let draft = self.workflow_draft(spec, Some(&current)).await?;
        let workflow = retry_deadlocked(|| self.store.update_workflow(id, &draft)).await?;
        self.workflows.now();
        Ok(workflow)
    }

    /// Deletes a workflow and its finished instances (refused while one is queued or running).
    pub async fn delete_workflow(&self, id: i64) -> Result<(), OpError> {
        Ok(retry_deadlocked(|| self.store.delete_workflow(id)).await?)
    }

    /// Schedules a workflow.
    pub async fn start_workflow(&self, id: i64) -> Result<Workflow, OpError> {
        let workflow = retry_deadlocked(|| self.store.set_workflow_running(id, true)).await?;
        self.workflows.now();
        Ok(workflow)
    }

    /// Stops scheduling a workflow (its instances go on).
    pub async fn stop_workflow(&self, id: i64) -> Result<Workflow, OpError> {
        Ok(retry_deadlocked(|| self.store.set_workflow_running(id, false)).await?)
    }

    /// Starts an instance of a workflow now; returns the instance's id.
    pub async fn trigger_workflow(&self, id: i64, trigger_type: TriggerType) -> Result<i64, OpError> {
        let (instance, tickets) = self.store.trigger_workflow(id, trigger_type).await?;
        self.send_node_runs(tickets);
        Ok(instance)
    }

    /// Stops an instance: its running nodes are stopped and their runs killed on their
    /// executors (a run its executor cannot be reached for is left to finish, and is not
    /// followed); `by` is the user. An instance of the workflow queued behind it starts.
    pub async fn stop_instance(&self, id: i64, by: &str) -> Result<(), OpError> {
        let stopped = self.store.stop_instance(id, by).await?;
        // This admin's own sends of them, waiting on the timer or for a permit, are dropped.
        for run in &stopped.withdrawn {
            self.withdrawn.insert(*run);
        }
        for run in stopped.to_kill {
            if let Err(e) = self.kill_run(run, by).await {
                tracing::info!(run, error = %e, "run of a stopped workflow instance not killed");
            }
        }
        let tickets = self.store.start_queued_instance(stopped.workflow_id).await?;
        self.send_node_runs(tickets);
        Ok(())
    }

    /// Retries, skips or marks as succeeded one node of an instance.
    pub async fn change_node(&self, instance: i64, node: &str, change: NodeChange) -> Result<(), OpError> {
        let tickets = self.store.change_node(instance, node, change).await?;
        self.send_node_runs(tickets);
        Ok(())
    }

    /// Puts the runs an operation started for workflow nodes on the timer, and tells the
    /// workflow loop to watch them (their results move their instances on).
    fn send_node_runs(&self, tickets: NodeTickets) {
        self.workflows.sent_by_api(tickets.iter().map(|(_, t)| t.id));
        crate::schedule::workflows::enqueue(&self.wheel, tickets);
    }
}
