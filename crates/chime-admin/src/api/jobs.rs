//! Jobs on the wire: a job as the API answers it ([`Job`]) and the body that creates or
//! changes one ([`JobSpec`]). Their descriptive fields come from [`super::JobInfo`].

use super::schedule::{calendar_with_more, keeping_to, MoreSchedule};
use super::schema::{nullable_enum, schema_of_names};
use super::{JobFlow, JobFlowPatch, JobInfo, JobInfoPatch, SchedulePatch};
use crate::calendar::Calendar;
use chime_protocol::{BlockStrategy, GlueType, MisfireStrategy, RouteStrategy, ScheduleType};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A job definition.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(transform = super::schema::exact)]
pub struct Job {
    /// Job id.
    pub id: i64,
    /// The job's stable name within its group (`job-<id>` unless one was given): what a jobs
    /// document (`/v1/export`, `/v1/apply`) knows it by.
    pub key: String,
    /// Executor group id.
    pub group_id: i64,
    /// Partition (`id % PARTITIONS`) whose lease holder schedules this job.
    pub partition: i64,
    /// What the job does, for people.
    pub description: String,
    /// Descriptive fields: owner, alarm contacts, …
    #[serde(flatten)]
    pub info: JobInfo,
    /// Priority and concurrency key (flow control).
    #[serde(flatten)]
    pub flow: JobFlow,
    /// CRON, FIX_RATE, FIX_DELAY or NONE.
    #[schemars(schema_with = "schema_of_names::<ScheduleType>")]
    pub schedule_type: ScheduleType,
    /// Cron expression, or fixed-rate seconds (`30`, `1500ms`); empty for NONE.
    pub schedule_expr: String,
    /// IANA time zone the cron expression is read in.
    pub time_zone: String,
    /// What to do with missed fires.
    #[schemars(schema_with = "schema_of_names::<MisfireStrategy>")]
    pub misfire_strategy: MisfireStrategy,
    /// Further schedules: the job also fires at each of their fire times (once per instant).
    #[serde(default)]
    pub more_schedules: Vec<MoreSchedule>,
    /// The business calendar (`/v1/calendars`) whose business days it fires on; empty: every
    /// day.
    #[serde(default)]
    pub calendar: String,
    /// That calendar's days, read with the row (not on the wire).
    #[serde(skip)]
    #[schemars(skip)]
    pub business_days: Option<std::sync::Arc<crate::business_days::BusinessDays>>,
    /// How an executor is picked.
    #[schemars(schema_with = "schema_of_names::<RouteStrategy>")]
    pub route_strategy: RouteStrategy,
    /// BEAN handler name.
    pub handler: String,
    /// Parameter sent with each run.
    pub param: String,
    /// What the executor does when the job is already running there.
    #[schemars(schema_with = "schema_of_names::<BlockStrategy>")]
    pub block_strategy: BlockStrategy,
    /// Seconds the executor lets a run take (0 = no limit).
    pub timeout_secs: i64,
    /// Retries after a failure.
    pub retry_count: i64,
    /// Jobs triggered after each successful run.
    pub child_job_ids: Vec<i64>,
    /// BEAN or a script type.
    #[schemars(schema_with = "schema_of_names::<GlueType>")]
    pub glue_type: GlueType,
    /// Script source (GLUE types).
    pub glue_source: String,
    /// Version stamp of the script source, epoch ms.
    pub glue_updated_at: i64,
    /// Scheduled (true) or stopped.
    pub running: bool,
    /// Start of the fixed-rate grid, epoch ms.
    pub anchor_at: i64,
    /// The next fire time not yet claimed, epoch ms (0 when stopped).
    pub next_fire_at: i64,
    /// Not fired before this time, epoch ms (0, or a time passed: not paused). Set by
    /// `POST /v1/jobs/{id}/pause`, by its group's pause, set to the time of a resume (which ends it).
    #[serde(default)]
    pub paused_until: i64,
    /// The last fire time claimed, epoch ms.
    pub last_fire_at: i64,
    /// Creation time, epoch ms.
    pub created_at: i64,
    /// Last change, epoch ms.
    pub updated_at: i64,
}

/// Input to create or update a job. Fields left out keep their value on update and take the
/// documented default on create.
#[derive(Debug, Clone, Deserialize, Serialize, Default, JsonSchema)]
// `default`: every field may be left out (the derived schema then requires none).
#[serde(deny_unknown_fields, default)]
pub struct JobSpec {
    /// The job's stable name within its group, 1–64 of `A-Z a-z 0-9 . _ -` (on create without
    /// one: `job-<id>`; on update without one: unchanged).
    #[schemars(regex(pattern = r"^[A-Za-z0-9._-]{1,64}$"))]
    pub key: Option<String>,
    /// Group id, or its app name (`group`).
    pub group_id: Option<i64>,
    /// The group's app name (alternative to `group_id`).
    pub group: Option<String>,
    /// Description (defaults to the handler name).
    pub description: Option<String>,
    /// Descriptive fields: owner, alarm contacts, …
    #[serde(flatten)]
    pub info: JobInfoPatch,
    /// Priority and concurrency key (flow control).
    #[serde(flatten)]
    pub flow: JobFlowPatch,
    /// When it fires: schedule type, expression, zone and misfire strategy.
    #[serde(flatten)]
    pub schedule: SchedulePatch,
    /// Further schedules, CRON or FIX_RATE, each in its own zone (default: the job's); the
    /// whole list is replaced; `[]` removes them. At most 8.
    #[schemars(length(max = 8))]
    pub more_schedules: Option<Vec<MoreSchedule>>,
    /// What the executor is asked to do: route, handler, parameter, block strategy, timeout,
    /// retries and script.
    #[serde(flatten)]
    pub task: JobTaskPatch,
    /// Child job ids.
    #[schemars(inner(range(min = 1)))]
    pub child_job_ids: Option<Vec<i64>>,
    /// Start scheduling right away (create only).
    pub running: Option<bool>,
}

/// Input of what the executor is asked to do, shared by [`JobSpec`] and a jobs document's job
/// (`store::DocJob`) so that each field is declared once: each one left out (or `null`) keeps
/// its value on update and takes the documented default on create.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub struct JobTaskPatch {
    /// Route strategy (default `FIRST`).
    #[schemars(schema_with = "nullable_enum_of::<RouteStrategy>")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_strategy: Option<String>,
    /// BEAN handler name (required for BEAN jobs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handler: Option<String>,
    /// Parameter.
    #[schemars(length(max = 65535))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param: Option<String>,
    /// Block strategy (default `SERIAL_EXECUTION`).
    #[schemars(schema_with = "nullable_enum_of::<BlockStrategy>")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_strategy: Option<String>,
    /// Timeout in seconds (≥ 0).
    #[schemars(range(min = 0, max = 2147483647))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<i64>,
    /// Retries (0–100).
    #[schemars(range(min = 0, max = 100))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_count: Option<i64>,
    /// Glue type (default `BEAN`).
    #[schemars(schema_with = "nullable_enum_of::<GlueType>")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glue_type: Option<String>,
    /// Script source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glue_source: Option<String>,
}

impl JobTaskPatch {
    /// Every field of `job`'s task, given (a jobs document's export).
    pub fn of(job: &Job) -> Self {
        JobTaskPatch {
            route_strategy: Some(job.route_strategy.as_str().to_owned()),
            handler: Some(job.handler.clone()),
            param: Some(job.param.clone()),
            block_strategy: Some(job.block_strategy.as_str().to_owned()),
            timeout_secs: Some(job.timeout_secs),
            retry_count: Some(job.retry_count),
            glue_type: Some(job.glue_type.as_str().to_owned()),
            glue_source: Some(job.glue_source.clone()),
        }
    }
}

super::schedule_fields!(Job);

impl Job {
    /// When the job fires: its schedule and its further ones, a fixed rate's grid starting at
    /// `anchor_ms`.
    pub fn calendar(&self, anchor_ms: i64) -> Result<Calendar, String> {
        let cal = calendar_with_more(
            self.schedule_type,
            &self.schedule_expr,
            &self.time_zone,
            &self.more_schedules,
            anchor_ms,
        )?;
        keeping_to(cal, &self.calendar, self.business_days.as_ref())
    }
}

fn nullable_enum_of<T: super::schema::Named>(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
    nullable_enum(schema_of_names::<T>(g))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The descriptive fields are flattened into the body, and an unknown key is still refused
    /// by name (the REST API answers it with 400 naming the key).
    #[test]
    fn a_body_takes_its_descriptive_fields_and_refuses_unknown_keys() {
        let spec: JobSpec = serde_json::from_str(r#"{"handler":"h","owner":"ann","alarm_contacts":null}"#).unwrap();
        assert_eq!(spec.info.owner.as_deref(), Some("ann"));
        assert_eq!(spec.info.alarm_contacts, None);
        let err = serde_json::from_str::<JobSpec>(r#"{"handler":"h","bogus":1}"#).unwrap_err();
        assert!(err.to_string().starts_with("unknown field `bogus`"), "{err}");
        let err = serde_json::from_str::<JobSpec>(r#"{"owner":5}"#).unwrap_err();
        assert!(err.to_string().contains("invalid type"), "{err}");
    }
}
