//! Operations on jobs, and applying a jobs document. A job that is created, changed or started
//! wakes the claim loop when it is due soon ([`Admin::wake_scheduler_for`]).

use crate::center::{Admin, OpError};
use crate::model::{Invalid, Job, JobSpec, NamedGroup};
use crate::store::{retry_deadlocked, ApplyOptions, ApplyPlan, JobsDocument, NewAuditEntry};

/// How a jobs document is applied.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApplyMode {
    /// Only plan: write nothing.
    pub dry_run: bool,
    /// Delete the jobs of the document's groups that the document does not name.
    pub prune: bool,
}

impl Admin {
    /// The one executor group a job body names, resolved once: this id is what the caller is
    /// authorised for and what is stored. A body may name the group by id, by app name, or both
    /// when both are the same group; two different groups are refused (422) rather than one of
    /// them silently winning. Without either, an update (`current`) keeps the job's group.
    pub async fn job_group(&self, spec: &JobSpec, current: Option<&Job>) -> Result<i64, OpError> {
        match spec.named_group() {
            NamedGroup::Id(id) => Ok(id),
            NamedGroup::AppName(app) => self.group_id_of_app(app).await,
            NamedGroup::Both(id, app) => {
                let named = self.group_id_of_app(app).await?;
                if named != id {
                    return Err(Invalid::new(
                        "group",
                        format!("'group' names executor group {named} but 'group_id' is {id}: give one of them"),
                    )
                    .into());
                }
                Ok(id)
            }
            NamedGroup::Unnamed => current.map(|j| j.group_id).ok_or_else(|| {
                Invalid::new("group_id", "is required (or give the group's app name as 'group')").into()
            }),
        }
    }

    async fn group_id_of_app(&self, app: &str) -> Result<i64, OpError> {
        self.store
            .group_by_app_name(app.trim())
            .await?
            .map(|g| g.id)
            .ok_or_else(|| Invalid::new("group", "no executor group has this app name").into())
    }

    /// Creates a job in group `group_id` (see [`Admin::job_group`]); `author` is recorded with
    /// its GLUE version, and `audit`, when given, is written in the create's transaction.
    pub async fn create_job(
        &self,
        spec: &JobSpec,
        group_id: i64,
        author: &str,
        audit: Option<NewAuditEntry>,
    ) -> Result<Job, OpError> {
        let mut draft = spec.validate(None, &self.config.default_time_zone, group_id)?;
        self.check_alarm_fields(&mut draft.info, None).await?;
        let job = self.store.insert_job_audited(&draft, author, audit).await?;
        self.wake_scheduler_for(&job);
        Ok(job)
    }

    /// Changes the job `current`, moving it to group `group_id`: fields `spec` leaves out keep
    /// their value.
    pub async fn update_job(&self, current: &Job, spec: &JobSpec, group_id: i64, author: &str) -> Result<Job, OpError> {
        let mut draft = spec.validate(Some(current), &self.config.default_time_zone, group_id)?;
        self.check_alarm_fields(&mut draft.info, Some(&current.info)).await?;
        let job = retry_deadlocked(|| self.store.update_job(current.id, &draft, author)).await?;
        self.wake_scheduler_for(&job);
        Ok(job)
    }

    /// Deletes a job.
    pub async fn delete_job(&self, id: i64) -> Result<(), OpError> {
        Ok(retry_deadlocked(|| self.store.delete_job(id)).await?)
    }

    /// Schedules a job from its next fire time on.
    pub async fn start_job(&self, id: i64) -> Result<Job, OpError> {
        let job = retry_deadlocked(|| self.store.set_job_running(id, true)).await?;
        self.wake_scheduler_for(&job);
        Ok(job)
    }

    /// Stops scheduling a job (runs already claimed still run).
    pub async fn stop_job(&self, id: i64) -> Result<Job, OpError> {
        Ok(retry_deadlocked(|| self.store.set_job_running(id, false)).await?)
    }

    /// Applies a jobs document and answers its plan, written unless `mode.dry_run`. Prune
    /// deletes only in the groups the document names, so a document without groups prunes
    /// nothing (an empty document cannot empty the admin).
    pub async fn apply_jobs(&self, doc: &JobsDocument, mode: ApplyMode, author: &str) -> Result<ApplyPlan, OpError> {
        let opts = ApplyOptions {
            networks: &self.config.executor_networks,
            default_zone: &self.config.default_time_zone,
            author,
            dry_run: mode.dry_run,
            prune: mode.prune && !doc.groups.is_empty(),
        };
        self.check_document_alarms(doc).await?;
        let plan = self.store.apply_jobs(doc, opts).await?;
        if plan.applied {
            self.refresh_directory().await;
            self.partitions.wake_claims();
            if !doc.workflows.is_empty() {
                self.workflows.now();
            }
        }
        Ok(plan)
    }
}
