//! What the scheduling center stores: executor groups, jobs, runs, registry entries.
//!
//! Groups and jobs, and the bodies that create and change them ([`GroupSpec`] / [`JobSpec`]),
//! are the REST API's wire types, declared in [`crate::api`] and used here as they are. The
//! bodies are checked by their `validate` methods (here), which name the offending field,
//! before anything is written.

use crate::address_policy::ExecutorNetworks;
pub use crate::api::{AddressType, Group, GroupSpec, Invalid, Job, JobFlow, JobInfo, JobSpec};
pub use crate::api::{
    AlarmChannel, AlarmChannelSpec, AlarmDelivery, AlarmEvent, ChannelDraft, ChannelKind, DeliveryState,
};
pub use crate::api::{AlarmSilence, AlarmSilenceSpec, SilenceDraft};
use chime_protocol::{
    BlockStrategy, GlueType, MisfireStrategy, ProtocolGeneration, RouteStrategy, ScheduleType, TriggerType,
};
use serde::{Deserialize, Serialize};

impl Group {
    /// The token its executors use: its own, else the admin's `global` one; `None` = none (a
    /// group marked [`Group::insecure_no_token`]).
    pub fn effective_token<'a>(&'a self, global: Option<&'a str>) -> Option<&'a str> {
        if self.insecure_no_token {
            return None;
        }
        self.access_token.as_deref().or(global)
    }
}

/// A validated group ready to store.
#[derive(Debug, Clone)]
pub struct GroupDraft {
    /// App name.
    pub app_name: String,
    /// Title.
    pub title: String,
    /// Address type.
    pub address_type: AddressType,
    /// Manual addresses as written, one per executor.
    pub addresses: Vec<String>,
    /// Protocol generation.
    pub protocol: ProtocolGeneration,
    /// The group's own access token.
    pub access_token: Option<String>,
    /// Its executors need no token (see [`Group::insecure_no_token`]).
    pub insecure_no_token: bool,
    /// Keep run logs in the admin.
    pub keep_logs: bool,
    /// Alarm channels of its jobs that name none.
    pub alarm_channels: String,
}

impl GroupSpec {
    /// Checks the input; `base` is the current group when updating (fields left out keep
    /// their value).
    /// Addresses must lie in `networks` (`--executor-networks`).
    pub fn validate(&self, base: Option<&Group>, networks: &ExecutorNetworks) -> Result<GroupDraft, Invalid> {
        let app_name = self.app_name(base)?;
        let title = crate::api::schedule::text_or(&self.title, base.map(|g| g.title.as_str()), &app_name);
        if title.is_empty() || title.chars().count() > 128 {
            return Err(Invalid::new("title", "must be 1 to 128 characters"));
        }
        let (address_type, addresses) = self.addresses(base, networks)?;
        let protocol = match (&self.protocol, base) {
            (Some(p), _) => p
                .parse()
                .map_err(|e: chime_protocol::UnknownVariant| Invalid::new("protocol", e.to_string()))?,
            (None, Some(g)) => g.protocol,
            (None, None) => ProtocolGeneration::G2,
        };
        let (access_token, insecure_no_token) = self.token(base)?;
        let keep_logs = self.keep_logs.or(base.map(|g| g.keep_logs)).unwrap_or(true);
        let alarm_channels = crate::api::alarm_channels::channel_names(
            self.alarm_channels
                .as_deref()
                .or(base.map(|g| g.alarm_channels.as_str()))
                .unwrap_or(""),
        )?;
        Ok(GroupDraft {
            app_name,
            title,
            address_type,
            addresses,
            protocol,
            access_token,
            insecure_no_token,
            keep_logs,
            alarm_channels,
        })
    }

    /// The app name: 1–64 characters, no whitespace, comma or control character, not a number.
    fn app_name(&self, base: Option<&Group>) -> Result<String, Invalid> {
        let app_name = match (&self.app_name, base) {
            (Some(a), _) => a.trim().to_owned(),
            (None, Some(g)) => g.app_name.clone(),
            (None, None) => return Err(Invalid::new("app_name", "is required")),
        };
        if app_name.is_empty() || app_name.len() > 64 {
            return Err(Invalid::new("app_name", "must be 1 to 64 characters"));
        }
        if app_name
            .chars()
            .any(|c| c.is_whitespace() || c == ',' || c.is_control())
        {
            return Err(Invalid::new("app_name", "must not contain whitespace or commas"));
        }
        // `/v1/groups/{key}` reads a number as a group id, so such a group could be reached by
        // its id only. A group that has one from earlier keeps it (it is not renamed here).
        if app_name.bytes().all(|b| b.is_ascii_digit()) && base.is_none_or(|g| g.app_name != app_name) {
            return Err(Invalid::new(
                "app_name",
                "must not be a number (group paths read numbers as ids); add a letter",
            ));
        }
        Ok(app_name)
    }

    /// How executors are found, and the manual addresses (sorted, one of each), each within
    /// `networks`.
    fn addresses(
        &self,
        base: Option<&Group>,
        networks: &ExecutorNetworks,
    ) -> Result<(AddressType, Vec<String>), Invalid> {
        let mut addresses = match (&self.addresses, base) {
            (Some(list), _) => list
                .iter()
                .map(|a| validate_manual_address(a, networks).map_err(|m| Invalid::new("addresses", m)))
                .collect::<Result<Vec<_>, _>>()?,
            (None, Some(g)) => g.addresses.clone(),
            (None, None) => Vec::new(),
        };
        addresses.sort();
        let mut seen = std::collections::HashSet::new();
        addresses.retain(|a| seen.insert(chime_protocol::paths::normalize_address(a).to_owned()));
        let address_type = match (self.address_type, &self.addresses, base) {
            (Some(t), _, _) => t,
            (None, Some(list), _) if !list.is_empty() => AddressType::Manual,
            (None, _, Some(g)) => g.address_type,
            (None, _, None) => AddressType::Auto,
        };
        if address_type == AddressType::Manual && addresses.is_empty() {
            return Err(Invalid::new("addresses", "a manual group needs at least one address"));
        }
        Ok((address_type, addresses))
    }

    /// The group's own access token (`""` removes it), and whether its executors need none;
    /// not both.
    fn token(&self, base: Option<&Group>) -> Result<(Option<String>, bool), Invalid> {
        let access_token = match (&self.access_token, base) {
            (Some(t), _) if t.trim().is_empty() => None,
            (Some(t), _) => Some(t.trim().to_owned()),
            (None, Some(g)) => g.access_token.clone(),
            (None, None) => None,
        };
        if let Some(t) = &access_token {
            if t.len() > 255 || t.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(Invalid::new(
                    "access_token",
                    "must be at most 255 characters, without spaces or control characters",
                ));
            }
        }
        let insecure_no_token = self
            .insecure_no_token
            .or(base.map(|g| g.insecure_no_token))
            .unwrap_or(false);
        if insecure_no_token && access_token.is_some() {
            return Err(Invalid::new(
                "insecure_no_token",
                "a group with its own access token cannot also run without one; remove the token (\"\") first",
            ));
        }
        Ok((access_token, insecure_no_token))
    }
}

/// Checks an executor address (`http(s)://host:port[/path]`, with or without a trailing slash)
/// and returns it as written, without surrounding whitespace. It is kept that way because
/// XXL-JOB's CONSISTENT_HASH and FIRST/LAST work on the address strings exactly as registered
/// (Java executors register `http://ip:port/`, pyxxl `http://ip:port`); calls go to
/// [`chime_protocol::paths::normalize_address`] of it. No user:password, query or fragment, and
/// a literal IP must lie in `networks` (see [`crate::address_policy`]).
pub fn validate_address(address: &str, networks: &ExecutorNetworks) -> Result<String, String> {
    crate::address_policy::check_address(address, networks)
}

/// Checks an address an operator gives a manual group: an executor address as
/// [`validate_address`] accepts it, or a linked executor's `link://<id>` (calls to it go down
/// the executor's link, never to a host). Executors cannot register a link address over HTTP.
pub fn validate_manual_address(address: &str, networks: &ExecutorNetworks) -> Result<String, String> {
    if chime_protocol::link::is_link_address(address) {
        return match chime_protocol::link::executor_id(address) {
            Some(_) => Ok(address.trim().to_owned()),
            None => Err(format!(
                "a link address is link://<executor id>, the id 1 to {} characters of A-Z a-z 0-9 . _ -",
                chime_protocol::link::MAX_EXECUTOR_ID_CHARS
            )),
        };
    }
    validate_address(address, networks)
}

/// Longest job key.
pub const MAX_JOB_KEY_CHARS: usize = 64;

/// Checks a job key: 1–64 of `A-Z a-z 0-9 . _ -` (so it can name a file and stand in a path).
pub fn validate_job_key(key: &str) -> Result<String, String> {
    let ok = crate::api::is_plain_name(key, MAX_JOB_KEY_CHARS) && key != "." && key != "..";
    if ok {
        Ok(key.to_owned())
    } else {
        Err(format!(
            "'{key}' is not a job key: 1 to {MAX_JOB_KEY_CHARS} characters of A-Z a-z 0-9 . _ - (not . or ..)"
        ))
    }
}

/// How a job body names its group (`group_id`, `group`, both, or neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamedGroup<'a> {
    /// `group_id` only.
    Id(i64),
    /// `group` (the app name) only.
    AppName(&'a str),
    /// Both: valid only when the app name is the group with this id.
    Both(i64, &'a str),
    /// Neither.
    Unnamed,
}

/// A job input after validation, ready to store. References to other rows (group, children)
/// are checked by the store inside the writing transaction.
#[derive(Debug, Clone)]
pub struct JobDraft {
    /// The one group the job belongs to, resolved from `group_id` or `group` before validation
    /// (see [`JobSpec::named_group`]): the group that was authorised is the group stored.
    pub group_id: i64,
    /// The job's key; `None`: unchanged on update, `job-<id>` on create.
    pub key: Option<String>,
    /// Description.
    pub description: String,
    /// Descriptive fields.
    pub info: JobInfo,
    /// Priority and concurrency key.
    pub flow: JobFlow,
    /// Schedule type.
    pub schedule_type: ScheduleType,
    /// Schedule expression.
    pub schedule_expr: String,
    /// Zone.
    pub time_zone: String,
    /// Misfire strategy.
    pub misfire_strategy: MisfireStrategy,
    /// Further schedules, checked.
    pub more_schedules: Vec<crate::api::MoreSchedule>,
    /// Business calendar's name ('' for none); whether it exists is checked where it is written.
    pub calendar: String,
    /// Route strategy.
    pub route_strategy: RouteStrategy,
    /// Handler.
    pub handler: String,
    /// Param.
    pub param: String,
    /// Block strategy.
    pub block_strategy: BlockStrategy,
    /// Timeout.
    pub timeout_secs: i64,
    /// Retries.
    pub retry_count: i64,
    /// Children.
    pub child_job_ids: Vec<i64>,
    /// Glue type.
    pub glue_type: GlueType,
    /// Glue source.
    pub glue_source: String,
    /// Whether to schedule it.
    pub running: bool,
}

fn parse_enum<T: std::str::FromStr<Err = chime_protocol::UnknownVariant>>(
    field: &str,
    value: &Option<String>,
    current: Option<T>,
    default: T,
) -> Result<T, Invalid> {
    match value {
        Some(v) => v.parse::<T>().map_err(|e| Invalid::new(field, e.to_string())),
        None => Ok(current.unwrap_or(default)),
    }
}

fn pick<T: Clone>(value: &Option<T>, current: Option<&T>, default: T) -> T {
    match (value, current) {
        (Some(v), _) => v.clone(),
        (None, Some(c)) => c.clone(),
        (None, None) => default,
    }
}

impl JobSpec {
    /// How the body names the job's group: by id, by app name, or not at all (on update: the
    /// job stays in its group). A body may give both only when they name the same group; the
    /// caller resolves the app name and compares, see `http::rest`.
    pub fn named_group(&self) -> NamedGroup<'_> {
        match (self.group_id, self.group.as_deref()) {
            (Some(id), Some(app)) => NamedGroup::Both(id, app),
            (Some(id), None) => NamedGroup::Id(id),
            (None, Some(app)) => NamedGroup::AppName(app),
            (None, None) => NamedGroup::Unnamed,
        }
    }

    /// Checks every field that can be checked without the database; `base` is the current job
    /// on update, `group_id` the one group the body named, already resolved and authorised.
    /// The schedule is parsed with `chime-cron` so a bad cron names its field.
    pub fn validate(&self, base: Option<&Job>, default_zone: &str, group_id: i64) -> Result<JobDraft, Invalid> {
        let schedule = self.schedule.apply_to(base.map(Job::schedule).as_ref(), default_zone)?;
        let more_schedules = match (&self.more_schedules, base) {
            (Some(list), _) => list.as_slice(),
            (None, Some(job)) => job.more_schedules.as_slice(),
            (None, None) => &[],
        };
        let more_schedules =
            crate::api::check_more_schedules(more_schedules, schedule.schedule_type, &schedule.time_zone)?;
        let (glue_type, handler, glue_source) = self.code(base)?;
        let description = self.description(base, glue_type, &handler)?;
        let info = self.info.apply_to(base.map(|j| &j.info))?;
        let flow = self.flow.apply_to(base.map(|j| &j.flow))?;
        let (timeout_secs, retry_count) = self.limits(base)?;
        let child_job_ids = self.child_job_ids(base)?;
        let running = self.running(base, schedule.schedule_type)?;
        let param = pick(&self.task.param, base.map(|j| &j.param), String::new());
        if param.len() > 65_535 {
            return Err(Invalid::new("param", "must be at most 64 KiB"));
        }
        // Checked when given: a parameter stored before date placeholders existed (an imported
        // `${HOME}`, say) does not stop other edits of its job; it is sent as written.
        if let Some(Err(e)) = self.task.param.as_deref().map(chime_params::check) {
            return Err(Invalid::new("param", e.to_string()));
        }
        let key = match &self.key {
            Some(k) => Some(validate_job_key(k).map_err(|m| Invalid::new("key", m))?),
            None => None,
        };
        Ok(JobDraft {
            group_id,
            key,
            description,
            info,
            flow,
            schedule_type: schedule.schedule_type,
            schedule_expr: schedule.schedule_expr,
            time_zone: schedule.time_zone,
            more_schedules,
            misfire_strategy: schedule.misfire_strategy,
            calendar: schedule.calendar,
            route_strategy: parse_enum(
                "route_strategy",
                &self.task.route_strategy,
                base.map(|j| j.route_strategy),
                RouteStrategy::First,
            )?,
            handler,
            param,
            block_strategy: parse_enum(
                "block_strategy",
                &self.task.block_strategy,
                base.map(|j| j.block_strategy),
                BlockStrategy::SerialExecution,
            )?,
            timeout_secs,
            retry_count,
            child_job_ids,
            glue_type,
            glue_source,
            running,
        })
    }

    /// The glue type, handler and script source: a BEAN job needs a handler, a script job its
    /// source.
    fn code(&self, base: Option<&Job>) -> Result<(GlueType, String, String), Invalid> {
        let glue_type = parse_enum(
            "glue_type",
            &self.task.glue_type,
            base.map(|j| j.glue_type),
            GlueType::Bean,
        )?;
        let handler = pick(&self.task.handler, base.map(|j| &j.handler), String::new())
            .trim()
            .to_owned();
        if glue_type == GlueType::Bean && handler.is_empty() {
            return Err(Invalid::new("handler", "is required for BEAN jobs"));
        }
        if handler.len() > 255 {
            return Err(Invalid::new("handler", "must be at most 255 characters"));
        }
        let glue_source = pick(&self.task.glue_source, base.map(|j| &j.glue_source), String::new());
        if glue_type.is_script() && glue_source.trim().is_empty() {
            return Err(Invalid::new("glue_source", format!("is required for {glue_type} jobs")));
        }
        Ok((glue_type, handler, glue_source))
    }

    /// The description, defaulting to the handler's name, or else to the glue type's.
    fn description(&self, base: Option<&Job>, glue_type: GlueType, handler: &str) -> Result<String, Invalid> {
        let description = pick(&self.description, base.map(|j| &j.description), handler.to_owned())
            .trim()
            .to_owned();
        let description = if description.is_empty() {
            format!("{glue_type} job")
        } else {
            description
        };
        if description.chars().count() > 255 {
            return Err(Invalid::new("description", "must be at most 255 characters"));
        }
        Ok(description)
    }

    /// The timeout, in seconds, and the retries after a failure.
    fn limits(&self, base: Option<&Job>) -> Result<(i64, i64), Invalid> {
        let timeout_secs = pick(&self.task.timeout_secs, base.map(|j| &j.timeout_secs), 0);
        if !(0..=i32::MAX as i64).contains(&timeout_secs) {
            return Err(Invalid::new(
                "timeout_secs",
                "must be 0 (no limit) or a positive number of seconds",
            ));
        }
        let retry_count = pick(&self.task.retry_count, base.map(|j| &j.retry_count), 0);
        if !(0..=100).contains(&retry_count) {
            return Err(Invalid::new("retry_count", "must be between 0 and 100"));
        }
        Ok((timeout_secs, retry_count))
    }

    /// The child jobs: positive ids, not the job itself.
    fn child_job_ids(&self, base: Option<&Job>) -> Result<Vec<i64>, Invalid> {
        let mut child_job_ids = pick(&self.child_job_ids, base.map(|j| &j.child_job_ids), Vec::new());
        // Each child once, in the order first given: a repeated id would fire the child twice.
        let mut seen = std::collections::HashSet::new();
        child_job_ids.retain(|id| seen.insert(*id));
        if child_job_ids.iter().any(|&c| c <= 0) {
            return Err(Invalid::new("child_job_ids", "job ids are positive integers"));
        }
        if let Some(b) = base {
            if child_job_ids.contains(&b.id) {
                return Err(Invalid::new("child_job_ids", "a job cannot be its own child"));
            }
        }
        Ok(child_job_ids)
    }

    /// Whether the job is scheduled: only a job with a schedule can be.
    fn running(&self, base: Option<&Job>, schedule_type: ScheduleType) -> Result<bool, Invalid> {
        let running = match (self.running, base) {
            (Some(r), _) => r,
            (None, Some(b)) => b.running,
            (None, None) => false,
        };
        if running && schedule_type == ScheduleType::None {
            return Err(Invalid::new(
                "running",
                "a job with schedule type NONE cannot be started; trigger it instead",
            ));
        }
        Ok(running)
    }
}

/// The state of a run, derived from its trigger and handle codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Claimed, not yet sent to an executor.
    Pending,
    /// Accepted by an executor, no result yet.
    Running,
    /// The handler succeeded.
    Success,
    /// Sending failed or the handler failed (or timed out, or was lost).
    Failed,
    /// A missed fire not run, as the misfire policy says.
    Skipped,
    /// Failed because a user killed it: the executor accepted the kill while the run had no
    /// result. Stored as a failure (executors report 500) and treated as one by retries and
    /// alarms; only the state shown differs.
    Killed,
}

impl RunStatus {
    /// Every status, for error messages.
    pub const ALL: &'static [&'static str] = &["pending", "running", "success", "failed", "skipped", "killed"];

    /// From the two codes.
    pub fn of(trigger_code: i64, handle_code: i64) -> RunStatus {
        if handle_code == 200 {
            RunStatus::Success
        } else if trigger_code == SKIPPED_CODE {
            RunStatus::Skipped
        } else if handle_code != 0 || (trigger_code != 0 && trigger_code != 200) {
            RunStatus::Failed
        } else if trigger_code == 0 {
            RunStatus::Pending
        } else {
            RunStatus::Running
        }
    }

    /// From the two codes and whether a user's kill was accepted for the run (`killed_by` set):
    /// a failure of a killed run is [`RunStatus::Killed`], anything else as [`RunStatus::of`].
    pub fn of_run(trigger_code: i64, handle_code: i64, killed: bool) -> RunStatus {
        match RunStatus::of(trigger_code, handle_code) {
            RunStatus::Failed if killed => RunStatus::Killed,
            other => other,
        }
    }

    /// Parses the name used by `?status=`.
    pub fn parse(s: &str) -> Result<RunStatus, Invalid> {
        match s {
            "pending" => Ok(RunStatus::Pending),
            "running" => Ok(RunStatus::Running),
            "success" => Ok(RunStatus::Success),
            "failed" => Ok(RunStatus::Failed),
            "skipped" => Ok(RunStatus::Skipped),
            "killed" => Ok(RunStatus::Killed),
            other => Err(Invalid::new(
                "status",
                format!(
                    "unknown status '{other}' (expected one of: {})",
                    RunStatus::ALL.join(", ")
                ),
            )),
        }
    }
}

/// `trigger_code` of a missed fire that the misfire policy skipped.
pub const SKIPPED_CODE: i64 = -1;

/// `next_fire_at` of a running `FIX_DELAY` job whose run has not ended yet:
/// 9999-12-31T23:59:59.999Z, beyond any claim round's horizon and still a date every client
/// shows. When the run ends, the end plus the delay replaces it (`Store::schedule_fixed_delays`).
pub const WAITING_FOR_RUN_END: i64 = 253_402_300_799_999;

/// One fire of a job (one shard of it, for broadcast jobs): XXL-JOB's `xxl_job_log` row.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[schemars(transform = crate::api::schema::exact)]
pub struct Run {
    /// Run id: the `logId` on the wire.
    pub id: i64,
    /// Job id.
    pub job_id: i64,
    /// Group id at fire time.
    pub group_id: i64,
    /// When the schedule wanted it (for manual, retry and child runs: when it was created), epoch ms.
    pub scheduled_at: i64,
    /// When it was sent to an executor (0 = not yet), epoch ms.
    pub triggered_at: i64,
    /// Why it ran.
    #[schemars(schema_with = "crate::api::schema::schema_of_names::<TriggerType>")]
    pub trigger_type: TriggerType,
    /// The executor it was sent to.
    pub executor_address: String,
    /// Handler sent.
    pub handler: String,
    /// Parameter sent.
    pub param: String,
    /// Shard index.
    pub shard_index: i64,
    /// Shard total.
    pub shard_total: i64,
    /// Retries still allowed after this run.
    pub retry_count: i64,
    /// 0 pending, 200 accepted, 500 failed to send, -1 skipped misfire.
    pub trigger_code: i64,
    /// What happened when sending it.
    pub trigger_msg: String,
    /// When the result was recorded (0 = not yet), epoch ms.
    pub handled_at: i64,
    /// 0 no result yet, 200 success, 500 failure, 502 timeout.
    pub handle_code: i64,
    /// Result message(s).
    pub handle_msg: String,
    /// Derived state.
    #[schemars(schema_with = "run_statuses")]
    pub status: RunStatus,
    /// Job ids of the parent chain (cycle guard for child jobs), comma-separated.
    pub lineage: String,
    /// Row creation time, epoch ms.
    pub created_at: i64,
    /// The user whose kill the executor accepted for this run (`None`: not killed).
    pub killed_by: Option<String>,
    /// The failed run this run retries (`None`: not a retry).
    pub retry_of: Option<i64>,
    /// The retry made for this run's failure, if there is one.
    pub retried_by: Option<i64>,
    /// When the lost-run sweep failed the run as lost (epoch ms); kept when the executor's
    /// success, reported afterwards, replaced that failure (`None`: never failed as lost).
    pub lost_at: Option<i64>,
    /// What became of the run's alarm (XXL-JOB's `alarm_status`, named).
    #[schemars(schema_with = "alarm_states")]
    pub alarm: AlarmState,
    /// Why the alarm was not delivered (empty unless `alarm` is `failed`); never holds a URL
    /// or a password.
    pub alarm_msg: String,
}

fn run_statuses(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "string", "enum": RunStatus::ALL })
}

fn alarm_states(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "string", "enum": AlarmState::ALL })
}

/// What became of a run's alarm: the run's `alarm_status` column (XXL-JOB's values) by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlarmState {
    /// Nothing decided (0): the run did not fail for good, or its alarm is still due.
    None,
    /// An admin is delivering it (-1).
    Sending,
    /// No alarm needed (1): nobody to tell, or a retry or child run was made instead.
    NotNeeded,
    /// Delivered (2).
    Sent,
    /// Not delivered (3): see the run's `alarm_msg`.
    Failed,
}

impl AlarmState {
    /// Every state, for the OpenAPI document.
    pub const ALL: &'static [&'static str] = &["none", "sending", "not_needed", "sent", "failed"];

    /// From the `alarm_status` column; an unknown value (another tool wrote it) counts as none.
    pub fn of(alarm_status: i64) -> AlarmState {
        match alarm_status {
            -1 => AlarmState::Sending,
            1 => AlarmState::NotNeeded,
            2 => AlarmState::Sent,
            3 => AlarmState::Failed,
            _ => AlarmState::None,
        }
    }
}

/// A live executor address of a group, as the registry knows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ExecutorEntry {
    /// App name.
    pub app_name: String,
    /// Address as it is called (no trailing slash).
    pub address: String,
    /// Last heartbeat, epoch ms (0 for manual addresses).
    pub last_heartbeat: i64,
    /// `registry` or `manual`.
    pub source: String,
    /// The handlers the executor at this address said it runs (Chime's executors do, in each
    /// registration; empty for others).
    pub handlers: Vec<String>,
    /// For a manual address, whether it answered `/beat` when the list was asked for; `None`
    /// for a registered one (its heartbeat says it lives).
    pub answers: Option<bool>,
    /// Whether the executor is reached down its own link (`link://…`): it dialed the admins,
    /// and no admin dials it.
    pub linked: bool,
}

/// Filters of a run listing.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    /// Only this job.
    pub job_id: Option<i64>,
    /// Only this group.
    pub group_id: Option<i64>,
    /// Only these groups (a console user's); `None`: every group.
    pub group_ids: Option<Vec<i64>>,
    /// Only this state.
    pub status: Option<RunStatus>,
    /// Only runs scheduled at or after this time, epoch ms.
    pub from: Option<i64>,
    /// Only runs scheduled before this time, epoch ms.
    pub to: Option<i64>,
    /// Only runs with an id below this (paging backwards).
    pub before_id: Option<i64>,
    /// At most this many (newest first).
    pub limit: i64,
}

/// Current time, epoch milliseconds.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// `text` cut to `max` characters (at least 1), marked with `…` when cut: messages kept in
/// bounded columns or sent to receivers that refuse long ones.
pub fn cut_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_from_codes() {
        assert_eq!(RunStatus::of(0, 0), RunStatus::Pending);
        assert_eq!(RunStatus::of(200, 0), RunStatus::Running);
        assert_eq!(RunStatus::of(200, 200), RunStatus::Success);
        assert_eq!(RunStatus::of(0, 200), RunStatus::Success);
        assert_eq!(RunStatus::of(500, 0), RunStatus::Failed);
        assert_eq!(RunStatus::of(200, 502), RunStatus::Failed);
        assert_eq!(RunStatus::of(-1, 0), RunStatus::Skipped);
    }

    #[test]
    fn killed_only_when_the_kill_ended_the_run() {
        assert_eq!(RunStatus::of_run(200, 500, true), RunStatus::Killed);
        assert_eq!(RunStatus::of_run(200, 500, false), RunStatus::Failed);
        // The run succeeded before the kill took effect, or has no result yet.
        assert_eq!(RunStatus::of_run(200, 200, true), RunStatus::Success);
        assert_eq!(RunStatus::of_run(200, 0, true), RunStatus::Running);
        assert_eq!(RunStatus::parse("killed").unwrap(), RunStatus::Killed);
        assert_eq!(AlarmState::of(3), AlarmState::Failed);
        assert_eq!(AlarmState::of(-1), AlarmState::Sending);
        assert_eq!(AlarmState::of(42), AlarmState::None);
    }

    #[test]
    fn addresses_are_checked_and_kept_as_written() {
        assert_eq!(
            validate_address(" http://h:1/ ", &ExecutorNetworks::default()).unwrap(),
            "http://h:1/"
        );
        assert_eq!(
            validate_address("http://h:1", &ExecutorNetworks::default()).unwrap(),
            "http://h:1"
        );
        assert!(validate_address("http:///", &ExecutorNetworks::default()).is_err());
        assert!(validate_address("h:1", &ExecutorNetworks::default()).is_err());
        assert!(validate_address("http://", &ExecutorNetworks::default()).is_err());
        assert!(validate_address("http://a b", &ExecutorNetworks::default()).is_err());
        // A link address only in an operator's manual list, never as a registered one.
        assert!(validate_address("link://pod-1", &ExecutorNetworks::default()).is_err());
        assert_eq!(
            validate_manual_address(" link://pod-1 ", &ExecutorNetworks::default()).unwrap(),
            "link://pod-1"
        );
        assert!(validate_manual_address("link://a/b", &ExecutorNetworks::default()).is_err());
        assert!(validate_manual_address("link://", &ExecutorNetworks::default()).is_err());
    }

    #[test]
    fn an_app_name_is_not_a_number() {
        let spec = |name: &str| GroupSpec {
            app_name: Some(name.into()),
            ..Default::default()
        };
        let nets = ExecutorNetworks::default();
        assert_eq!(spec("0").validate(None, &nets).unwrap_err().field, "app_name");
        assert_eq!(spec("123").validate(None, &nets).unwrap_err().field, "app_name");
        assert!(spec("app1").validate(None, &nets).is_ok());
    }

    #[test]
    fn a_manual_group_keeps_one_spelling_per_address() {
        let spec = GroupSpec {
            app_name: Some("g".into()),
            addresses: Some(vec!["http://b:1".into(), "http://a:1/".into(), "http://a:1".into()]),
            ..Default::default()
        };
        assert_eq!(
            spec.validate(None, &ExecutorNetworks::default()).unwrap().addresses,
            ["http://a:1", "http://b:1"]
        );
    }

    #[test]
    fn a_group_token_is_set_kept_and_removed_but_never_shown() {
        let spec = |token: Option<&str>| GroupSpec {
            app_name: Some("g".into()),
            access_token: token.map(str::to_owned),
            ..Default::default()
        };
        let draft = spec(Some(" s3cret "))
            .validate(None, &ExecutorNetworks::default())
            .unwrap();
        assert_eq!(draft.access_token.as_deref(), Some("s3cret"));
        let group = Group {
            id: 1,
            app_name: "g".into(),
            title: "g".into(),
            address_type: AddressType::Auto,
            addresses: Vec::new(),
            protocol: ProtocolGeneration::G4,
            access_token: draft.access_token,
            insecure_no_token: false,
            keep_logs: true,
            alarm_channels: String::new(),
            created_at: 0,
            updated_at: 0,
        };
        let json = serde_json::to_value(&group).unwrap();
        assert_eq!(json["access_token_set"], true);
        assert!(!json.to_string().contains("s3cret"), "{json}");
        assert_eq!(group.effective_token(Some("global")), Some("s3cret"));
        let kept = spec(None).validate(Some(&group), &ExecutorNetworks::default()).unwrap();
        assert_eq!(kept.access_token.as_deref(), Some("s3cret"));
        let removed = spec(Some(""))
            .validate(Some(&group), &ExecutorNetworks::default())
            .unwrap();
        assert_eq!(removed.access_token, None);
        assert_eq!(
            spec(Some("a b"))
                .validate(None, &ExecutorNetworks::default())
                .unwrap_err()
                .field,
            "access_token"
        );
    }

    /// A group either has a token of its own or works without any: both at once would leave
    /// its executors unsure which the admin sends.
    #[test]
    fn a_tokenless_group_expects_no_token_and_cannot_have_one() {
        let networks = ExecutorNetworks::default();
        let spec = |token: Option<&str>, insecure: Option<bool>| GroupSpec {
            app_name: Some("legacy".into()),
            access_token: token.map(str::to_owned),
            insecure_no_token: insecure,
            ..Default::default()
        };
        let draft = spec(None, Some(true)).validate(None, &networks).unwrap();
        assert!(draft.insecure_no_token);
        assert_eq!(
            spec(Some("own"), Some(true))
                .validate(None, &networks)
                .unwrap_err()
                .field,
            "insecure_no_token"
        );
        let group = Group {
            id: 1,
            app_name: "legacy".into(),
            title: "legacy".into(),
            address_type: AddressType::Auto,
            addresses: Vec::new(),
            protocol: ProtocolGeneration::G2,
            access_token: None,
            insecure_no_token: true,
            keep_logs: true,
            alarm_channels: String::new(),
            created_at: 0,
            updated_at: 0,
        };
        assert_eq!(
            group.effective_token(Some("global")),
            None,
            "the admin's token is not sent"
        );
        assert_eq!(serde_json::to_value(&group).unwrap()["insecure_no_token"], true);
        // Left out on an update, the choice stays; turned off, the admin's token applies again.
        assert!(
            spec(None, None)
                .validate(Some(&group), &networks)
                .unwrap()
                .insecure_no_token
        );
        let secured = spec(None, Some(false)).validate(Some(&group), &networks).unwrap();
        assert!(!secured.insecure_no_token);
    }

    #[test]
    fn job_validation_names_fields() {
        let refused = |spec: JobSpec| spec.validate(None, "UTC", 1).unwrap_err();
        // A spec with a handler, which every job needs.
        let handled = || JobSpec {
            task: crate::api::JobTaskPatch {
                handler: Some("h".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let spec = JobSpec {
            schedule: crate::api::SchedulePatch {
                schedule_type: Some("CRONN".into()),
                ..Default::default()
            },
            ..handled()
        };
        assert_eq!(refused(spec).field, "schedule_type");
        let spec = JobSpec {
            schedule: crate::api::SchedulePatch {
                schedule_type: Some("CRON".into()),
                schedule_expr: Some("0 0 0 * * ?".into()),
                time_zone: Some("Mars/Olympus".into()),
                ..Default::default()
            },
            ..handled()
        };
        assert_eq!(refused(spec).field, "time_zone");
        let err = refused(JobSpec {
            task: crate::api::JobTaskPatch {
                route_strategy: Some("ROUND_ROBIN".into()),
                ..handled().task
            },
            ..handled()
        });
        assert_eq!(err.field, "route_strategy");
        assert!(err.message.contains("CONSISTENT_HASH"));
        assert_eq!(refused(JobSpec::default()).field, "handler");
        let spec = JobSpec {
            running: Some(true),
            ..handled()
        };
        assert_eq!(refused(spec).field, "running");
    }

    #[test]
    fn child_job_ids_are_kept_once_in_first_seen_order() {
        let spec = JobSpec {
            task: crate::api::JobTaskPatch {
                handler: Some("h".into()),
                ..Default::default()
            },
            child_job_ids: Some(vec![3, 1, 1, 2, 1, 3]),
            ..Default::default()
        };
        assert_eq!(spec.validate(None, "UTC", 1).unwrap().child_job_ids, [3, 1, 2]);
    }
}
