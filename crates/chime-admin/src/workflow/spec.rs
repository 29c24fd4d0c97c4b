//! A workflow as stored and as typed in: its schedule (the same engine, zones and misfire
//! policies as jobs), its concurrency limit, and its graph.

use super::dag::{Definition, InstanceState, NodeJob, NodeState};
use crate::api::{Invalid, Schedule, SchedulePatch};
use chime_protocol::{MisfireStrategy, ScheduleType};
use serde::{Deserialize, Serialize};

/// Longest workflow name, in characters.
pub const MAX_NAME_CHARS: usize = 128;

/// What a workflow does when a fire finds `max_instances` instances running.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum OnLimit {
    /// The new instance is recorded as skipped and does not run.
    #[default]
    Skip,
    /// The new instance waits and starts when one finishes, oldest first.
    Queue,
}

impl OnLimit {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            OnLimit::Skip => "skip",
            OnLimit::Queue => "queue",
        }
    }

    /// From the stored text (anything else reads as `skip`).
    pub fn parse(s: &str) -> OnLimit {
        if s == "queue" {
            OnLimit::Queue
        } else {
            OnLimit::Skip
        }
    }
}

/// A workflow.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Workflow {
    /// Id.
    pub id: i64,
    /// Unique name.
    pub name: String,
    /// What it does, for people.
    pub description: String,
    /// Partition (`id % 16`) whose lease holder fires it and moves its instances on.
    pub partition: i64,
    /// CRON, FIX_RATE or NONE (manual and API only).
    pub schedule_type: ScheduleType,
    /// Cron expression or fixed rate.
    pub schedule_expr: String,
    /// Zone of the cron expression.
    pub time_zone: String,
    /// What missed fires do.
    pub misfire_strategy: MisfireStrategy,
    /// The business calendar (`/v1/calendars`) whose business days it fires on; empty: every
    /// day.
    #[serde(default)]
    pub calendar: String,
    /// That calendar's days, read with the row (not on the wire).
    #[serde(skip)]
    pub business_days: Option<std::sync::Arc<crate::business_days::BusinessDays>>,
    /// Most instances running at once (0: no limit).
    pub max_instances: i64,
    /// What a fire over the limit does.
    pub on_limit: OnLimit,
    /// The alarm channels told when an instance fails (`a,b`; empty: none).
    #[serde(default)]
    pub alarm_channels: String,
    /// The graph.
    pub definition: Definition,
    /// The graph's version: a new one each time a changed graph is saved; instances fired
    /// from one version share its graph.
    #[serde(default)]
    pub version: i64,
    /// Scheduled.
    pub running: bool,
    /// Start of the fixed-rate grid, epoch ms.
    pub anchor_at: i64,
    /// Next fire not yet made, epoch ms (0 when stopped).
    pub next_fire_at: i64,
    /// Not fired before this time, epoch ms (0, or a time passed: not paused).
    #[serde(default)]
    pub paused_until: i64,
    /// Last fire made, epoch ms.
    pub last_fire_at: i64,
    /// Created, epoch ms.
    pub created_at: i64,
    /// Last changed, epoch ms.
    pub updated_at: i64,
}

/// Input to create or change a workflow: fields left out keep their value (or take their
/// default on create).
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct WorkflowSpec {
    /// Unique name (required on create).
    pub name: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// When it fires (`CRON`, `FIX_RATE` or `NONE`, the default): schedule type, expression,
    /// zone and misfire strategy.
    #[serde(flatten)]
    pub schedule: SchedulePatch,
    /// Most instances at once, 0–10,000 (0, the default: no limit).
    pub max_instances: Option<i64>,
    /// `skip` (default) or `queue`.
    pub on_limit: Option<OnLimit>,
    /// Alarm channels told when an instance fails, comma-separated names of existing channels
    /// (empty: none).
    pub alarm_channels: Option<String>,
    /// The graph (required on create).
    pub definition: Option<Definition>,
    /// Schedule it (default false).
    pub running: Option<bool>,
}

/// A workflow input after validation.
#[derive(Debug, Clone)]
pub struct WorkflowDraft {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Schedule type.
    pub schedule_type: ScheduleType,
    /// Schedule expression.
    pub schedule_expr: String,
    /// Zone.
    pub time_zone: String,
    /// Misfire strategy.
    pub misfire_strategy: MisfireStrategy,
    /// Business calendar's name ('' for none).
    pub calendar: String,
    /// Concurrency limit.
    pub max_instances: i64,
    /// Over the limit.
    pub on_limit: OnLimit,
    /// Alarm channels (`a,b`); whether they exist is checked where they are written.
    pub alarm_channels: String,
    /// Graph.
    pub definition: Definition,
    /// Scheduled.
    pub running: bool,
}

crate::api::schedule_fields!(Workflow);

impl Workflow {
    /// When the workflow fires, a fixed rate's grid starting at `anchor_ms`.
    pub fn calendar(&self, anchor_ms: i64) -> Result<crate::calendar::Calendar, String> {
        let cal =
            crate::calendar::Calendar::parse(self.schedule_type, &self.schedule_expr, &self.time_zone, anchor_ms)?;
        crate::api::schedule::keeping_to(cal, &self.calendar, self.business_days.as_ref())
    }
}

impl WorkflowSpec {
    /// The name and description, as given or kept from `base`, checked.
    fn name_and_description(&self, base: Option<&Workflow>) -> Result<(String, String), Invalid> {
        let name = match (&self.name, base) {
            (Some(n), _) => n.trim().to_owned(),
            (None, Some(b)) => b.name.clone(),
            (None, None) => return Err(Invalid::new("name", "is required")),
        };
        if name.is_empty() || name.chars().count() > MAX_NAME_CHARS || name.chars().any(char::is_control) {
            return Err(Invalid::new(
                "name",
                format!("must be 1 to {MAX_NAME_CHARS} characters, without control characters"),
            ));
        }
        let description = self
            .description
            .clone()
            .or_else(|| base.map(|b| b.description.clone()))
            .unwrap_or_default();
        if description.chars().count() > 255 {
            return Err(Invalid::new("description", "must be at most 255 characters"));
        }
        Ok((name, description))
    }

    /// The schedule as given or kept from `base` (the zone defaulting to `default_zone`): any
    /// but FIX_DELAY, which follows one run's end and so is for jobs.
    fn schedule(&self, base: Option<&Workflow>, default_zone: &str) -> Result<Schedule, Invalid> {
        let schedule = self
            .schedule
            .apply_to(base.map(Workflow::schedule).as_ref(), default_zone)?;
        if schedule.schedule_type == ScheduleType::FixDelay {
            return Err(Invalid::new(
                "schedule_type",
                "FIX_DELAY is for jobs; a workflow fires by CRON or FIX_RATE (limit its instances with max_instances)",
            ));
        }
        Ok(schedule)
    }

    /// Checks every field; `base` is the workflow on update, `job` says which job ids exist
    /// (nodes must name one) and which of them run code (see `Definition::validate`).
    pub fn validate(
        &self,
        base: Option<&Workflow>,
        default_zone: &str,
        job: impl Fn(i64) -> Option<NodeJob>,
    ) -> Result<WorkflowDraft, Invalid> {
        let (name, description) = self.name_and_description(base)?;
        let Schedule {
            schedule_type,
            schedule_expr,
            time_zone,
            misfire_strategy,
            calendar,
        } = self.schedule(base, default_zone)?;
        let max_instances = self.max_instances.or(base.map(|b| b.max_instances)).unwrap_or(0);
        if !(0..=10_000).contains(&max_instances) {
            return Err(Invalid::new("max_instances", "must be between 0 (no limit) and 10000"));
        }
        let on_limit = self.on_limit.or(base.map(|b| b.on_limit)).unwrap_or_default();
        // Written back as `a,b`; whether each channel exists is the caller's check (the store).
        let alarm_channels = match &self.alarm_channels {
            Some(list) => crate::api::alarm_channels::channel_names(list)?,
            None => base.map(|b| b.alarm_channels.clone()).unwrap_or_default(),
        };
        let definition = match (&self.definition, base) {
            (Some(d), _) => d.clone(),
            (None, Some(b)) => b.definition.clone(),
            (None, None) => {
                return Err(Invalid::new(
                    "definition",
                    "is required: {\"nodes\": […], \"edges\": […]}",
                ))
            }
        };
        definition.validate(job)?;
        let running = self.running.or(base.map(|b| b.running)).unwrap_or(false);
        if running && schedule_type == ScheduleType::None {
            return Err(Invalid::new(
                "running",
                "a workflow with schedule type NONE cannot be started; trigger it instead",
            ));
        }
        Ok(WorkflowDraft {
            name,
            description,
            schedule_type,
            schedule_expr,
            time_zone,
            misfire_strategy,
            calendar,
            max_instances,
            on_limit,
            alarm_channels,
            definition,
            running,
        })
    }
}

/// One instance of a workflow, with its nodes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Instance {
    /// Id.
    pub id: i64,
    /// Its workflow.
    pub workflow_id: i64,
    /// When it was fired for, epoch ms.
    pub scheduled_at: i64,
    /// `CRON`, `MISFIRE`, `MANUAL` or `API`.
    pub trigger_type: String,
    /// Its state.
    pub state: InstanceState,
    /// Who stopped it (empty: nobody).
    pub stopped_by: String,
    /// Created, epoch ms.
    pub created_at: i64,
    /// Finished, epoch ms (0: not yet).
    pub finished_at: i64,
    /// Its graph, as it was when it was fired.
    pub definition: Definition,
    /// The version of its workflow's graph it was fired from.
    #[serde(default)]
    pub version: i64,
    /// The nodes that started or will never run.
    pub nodes: Vec<NodeRun>,
}

/// A node of an instance.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NodeRun {
    /// The node's key.
    pub node: String,
    /// Its state.
    pub state: NodeState,
    /// Its latest run (0: none, for a node that did not run).
    pub run_id: i64,
    /// Its run's result message, once it succeeded or failed.
    pub result: String,
    /// Started (or decided), epoch ms.
    pub started_at: i64,
    /// Finished, epoch ms (0: not yet).
    pub finished_at: i64,
}
