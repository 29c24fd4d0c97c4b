//! Operations on runs: a manual trigger of a job, and killing a run on its executor.

use crate::center::{Admin, OpError};
use crate::dispatch::client::Target;
use crate::model::{now_ms, Group, Job, Run, RunStatus};
use crate::store::{HandleOutcome, NewRun};
use chime_protocol::TriggerType;
use std::sync::Arc;

impl Admin {
    /// Triggers a job now, outside its schedule: MANUAL (console/CLI), API, … Optional `param`
    /// replaces the job's; optional `address` must be one of the group's current addresses.
    /// Returns the new run's id.
    pub async fn trigger_job(
        &self,
        job_id: i64,
        trigger_type: TriggerType,
        param: Option<String>,
        address: Option<String>,
    ) -> Result<i64, OpError> {
        let job = self.store.job(job_id).await?;
        let address = match address {
            None => None,
            Some(a) => Some(self.check_trigger_address(job.group_id, &a)?),
        };
        let mut run = NewRun::of_job(&job, trigger_type, now_ms(), None);
        if let Some(p) = param {
            // Parsed once: refused when malformed, else resolved (kept as written only if an
            // offset leaves the dates chrono holds).
            let template =
                chime_params::Template::parse(&p).map_err(|e| crate::model::Invalid::new("param", e.to_string()))?;
            let zone = chime_params::zone_or_utc(&job.time_zone);
            run.payload.param = template.resolve(run.scheduled_at, zone).unwrap_or_else(|_| p.clone());
        }
        let tickets = self.store.insert_runs(&[run]).await?;
        let id = tickets
            .first()
            .map(|t| t.id)
            .ok_or_else(|| OpError::Conflict("run was not created".into()))?;
        self.wheel.enqueue(Arc::new(job), tickets, address);
        Ok(id)
    }

    /// Checks an address a manual trigger names: it must be one of the group's current
    /// executors (the admin calls no address a caller makes up). Returns it normalised.
    pub fn check_trigger_address(&self, group_id: i64, address: &str) -> Result<String, OpError> {
        use chime_protocol::paths::normalize_address;
        let a = normalize_address(address).to_owned();
        let view = self.directory.view(group_id);
        let known = view
            .as_ref()
            .is_some_and(|v| v.addresses.iter().any(|r| normalize_address(r) == a));
        if known {
            return Ok(a);
        }
        let list = view
            .map(|v| {
                let bare: Vec<&str> = v.addresses.iter().map(|r| normalize_address(r)).collect();
                bare.join(", ")
            })
            .unwrap_or_default();
        Err(crate::model::Invalid::new(
            "address",
            format!("'{a}' is not an executor of this job's group (current: [{list}])"),
        )
        .into())
    }

    /// Asks the executor running `run_id` to kill its job, and records the run as failed
    /// (without retry) and killed by `by` (a user name). Returns the run as it is then.
    pub async fn kill_run(&self, run_id: i64, by: &str) -> Result<Run, OpError> {
        let run = self.store.run(run_id).await?;
        if run.status != RunStatus::Running {
            return Err(OpError::Conflict(
                format!("run {run_id} is {:?}, not running", run.status).to_lowercase(),
            ));
        }
        let (job, group) = self.executor_of(&run).await?;
        self.killing.insert(run_id);
        let result = self.kill_sent_run(&run, &job, &group).await;
        self.killing.remove(run_id);
        result?;
        // Only now: the executor accepted the kill, and the run's failure is recorded (by the
        // kill's result, or by the executor's own report of the kill that came first).
        self.store.mark_killed(run_id, by).await?;
        Ok(self.store.run(run_id).await?)
    }

    async fn kill_sent_run(&self, run: &Run, job: &Job, group: &Group) -> Result<(), OpError> {
        let run_id = run.id;
        let reply = self.client.kill(Target::of(group, &run.executor_address), job.id).await;
        if !reply.is_success() {
            return Err(OpError::Executor(
                reply.msg.unwrap_or_else(|| format!("code {}", reply.code)),
            ));
        }
        let msg = format!(
            "Job killed by user through the admin (executor: {})",
            reply.msg.as_deref().unwrap_or("ok")
        );
        self.record_results(vec![HandleOutcome {
            run_id,
            code: 500,
            msg: Some(msg),
            retry: false,
            lost: false,
        }])
        .await
        .map_err(|e| {
            // The executor has stopped the job; what failed is the admin's own write. Not a
            // conflict with the run's state (409): the admin could not finish, and a second
            // kill of the still-running run tries the write again.
            OpError::Unavailable(format!(
                "the executor killed run {run_id}, but recording its failure did not finish ({e}); try again"
            ))
        })
    }

    async fn executor_of(&self, run: &Run) -> Result<(Job, Group), OpError> {
        if run.executor_address.is_empty() {
            return Err(OpError::Conflict(format!(
                "run {} was not sent to any executor",
                run.id
            )));
        }
        let job = self.store.job(run.job_id).await?;
        let group = self.store.group(run.group_id).await?;
        Ok((job, group))
    }
}
