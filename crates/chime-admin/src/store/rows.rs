//! Reading columns from `AnyRow`s the same way on every backend.
//!
//! MySQL reports `TEXT` columns as blobs through `sqlx::Any`, which refuses to decode them as
//! `String`; [`text`] accepts either. Integers are all `BIGINT` in the schema and read as `i64`.

use crate::model::{AddressType, AlarmState, Group, Job, JobInfo, Run, RunStatus};
use sqlx::any::AnyRow;
use sqlx::Row;

/// Column by name or by position. Rows of `INSERT … RETURNING` on MariaDB carry no column
/// names through sqlx (the prepared statement reported none), so those are read by position.
pub(super) fn int<I: sqlx::ColumnIndex<AnyRow> + Copy>(row: &AnyRow, col: I) -> Result<i64, sqlx::Error> {
    row.try_get::<Option<i64>, _>(col).map(Option::unwrap_or_default)
}

/// [`int`], keeping SQL `NULL` apart from 0.
pub(super) fn opt_int<I: sqlx::ColumnIndex<AnyRow> + Copy>(row: &AnyRow, col: I) -> Result<Option<i64>, sqlx::Error> {
    row.try_get::<Option<i64>, _>(col)
}

/// [`text`], keeping SQL `NULL` apart from `''`.
pub(super) fn opt_text<I: sqlx::ColumnIndex<AnyRow> + Copy>(
    row: &AnyRow,
    col: I,
) -> Result<Option<String>, sqlx::Error> {
    use sqlx::ValueRef;
    if row.try_get_raw(col)?.is_null() {
        return Ok(None);
    }
    text(row, col).map(Some)
}

/// A run's own flow (a workflow node's priority and concurrency key) from its columns
/// `priority` and `concurrency_key`, at positions `at` and `at + 1`.
pub(super) fn run_flow(row: &AnyRow, at: usize) -> Result<crate::api::JobFlowPatch, sqlx::Error> {
    Ok(crate::api::JobFlowPatch {
        priority: opt_int(row, at)?,
        concurrency_key: opt_text(row, at + 1)?,
    })
}

pub(super) fn text<I: sqlx::ColumnIndex<AnyRow> + Copy>(row: &AnyRow, col: I) -> Result<String, sqlx::Error> {
    match row.try_get::<Option<String>, _>(col) {
        Ok(v) => Ok(v.unwrap_or_default()),
        Err(sqlx::Error::ColumnDecode { .. }) => {
            let bytes: Option<Vec<u8>> = row.try_get(col)?;
            Ok(bytes
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default())
        }
        Err(e) => Err(e),
    }
}

pub(super) fn parsed<T: std::str::FromStr>(row: &AnyRow, col: &str) -> Result<T, sqlx::Error>
where
    T::Err: std::fmt::Display,
{
    let s = text(row, col)?;
    s.parse::<T>().map_err(|e| sqlx::Error::ColumnDecode {
        index: col.to_owned(),
        source: e.to_string().into(),
    })
}

/// A value read from a column of its own type: integers as [`int`] reads them, text as [`text`].
pub(super) trait Column: Sized {
    /// Reads column `col` of `row`.
    fn read(row: &AnyRow, col: &str) -> Result<Self, sqlx::Error>;
}

impl Column for i64 {
    fn read(row: &AnyRow, col: &str) -> Result<Self, sqlx::Error> {
        int(row, col)
    }
}

impl Column for String {
    fn read(row: &AnyRow, col: &str) -> Result<Self, sqlx::Error> {
        text(row, col)
    }
}

/// Column `col` of `row`, read as the type the caller wants.
pub(super) fn get<T: Column>(row: &AnyRow, col: &str) -> Result<T, sqlx::Error> {
    T::read(row, col)
}

/// Builds a struct from a row, inside a function that returns a `Result` (a column that cannot
/// be read returns its error): `from_row!(r => Lease { owner, epoch, partition: expr })` reads
/// each field named alone from the column of the same name, as the field's type (see
/// [`Column`]), and sets each `field: expr` to `expr`, for a column named otherwise or a value
/// decoded further. Listing the fields once keeps a struct's fields and its columns in step.
macro_rules! from_row {
    ($row:expr => $ty:ident { $($field:ident $(: $value:expr)?),* $(,)? }) => {
        $ty { $($field: $crate::store::rows::from_row!(@field $row, $field $(, $value)?),)* }
    };
    (@field $row:expr, $field:ident, $value:expr) => {
        $value
    };
    (@field $row:expr, $field:ident) => {
        $crate::store::rows::get($row, stringify!($field))?
    };
}
pub(super) use from_row;

pub(super) fn id_list(s: &str) -> Vec<i64> {
    s.split(',').filter_map(|p| p.trim().parse().ok()).collect()
}

pub(super) fn join_ids(ids: &[i64]) -> String {
    ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",")
}

pub(super) const GROUP_COLUMNS: &str =
    "id, app_name, title, address_type, address_list, protocol, access_token, insecure_no_token, keep_logs, \
     alarm_channels, created_at, updated_at";

pub(super) fn group(row: &AnyRow) -> Result<Group, sqlx::Error> {
    let list = text(row, "address_list")?;
    Ok(Group {
        id: int(row, "id")?,
        app_name: text(row, "app_name")?,
        title: text(row, "title")?,
        address_type: AddressType::from_code(int(row, "address_type")?),
        addresses: list
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        protocol: parsed(row, "protocol")?,
        access_token: Some(text(row, "access_token")?).filter(|t| !t.is_empty()),
        insecure_no_token: int(row, "insecure_no_token")? != 0,
        keep_logs: int(row, "keep_logs")? != 0,
        alarm_channels: text(row, "alarm_channels")?,
        created_at: int(row, "created_at")?,
        updated_at: int(row, "updated_at")?,
    })
}

pub(super) fn job(row: &AnyRow) -> Result<Job, sqlx::Error> {
    let id = int(row, "id")?;
    // A key is NULL only inside the transaction that creates the job; read as the name it gets.
    let key = Some(text(row, "job_key")?)
        .filter(|k| !k.is_empty())
        .unwrap_or_else(|| format!("job-{id}"));
    Ok(Job {
        id,
        key,
        group_id: int(row, "group_id")?,
        partition: int(row, "partition_no")?,
        description: text(row, "description")?,
        info: job_info(row)?,
        flow: crate::model::JobFlow {
            priority: int(row, "priority")?,
            concurrency_key: text(row, "concurrency_key")?,
        },
        schedule_type: parsed(row, "schedule_type")?,
        schedule_expr: text(row, "schedule_expr")?,
        time_zone: text(row, "time_zone")?,
        misfire_strategy: parsed(row, "misfire_strategy")?,
        more_schedules: more_schedules(row)?,
        calendar: text(row, "calendar")?,
        business_days: business_days(opt_text(row, "calendar_spec")?),
        route_strategy: parsed(row, "route_strategy")?,
        handler: text(row, "handler")?,
        param: text(row, "param")?,
        block_strategy: parsed(row, "block_strategy")?,
        timeout_secs: int(row, "timeout_secs")?,
        retry_count: int(row, "retry_count")?,
        child_job_ids: id_list(&text(row, "child_job_ids")?),
        glue_type: parsed(row, "glue_type")?,
        glue_source: text(row, "glue_source")?,
        glue_updated_at: int(row, "glue_updated_at")?,
        running: int(row, "running")? != 0,
        anchor_at: int(row, "anchor_at")?,
        next_fire_at: int(row, "next_fire_at")?,
        paused_until: int(row, "paused_until")?,
        last_fire_at: int(row, "last_fire_at")?,
        created_at: int(row, "created_at")?,
        updated_at: int(row, "updated_at")?,
    })
}

/// Most parsed business calendars [`business_days`] keeps; cleared when full.
const PARSED_CALENDARS_MAX: usize = 256;

/// Parsed business calendars by their stored definition: each job and workflow row that names
/// a calendar carries its definition (`calendar_spec`), and parsing it once per definition,
/// not once per row, keeps reading many such rows cheap. Keyed by the text itself, so an
/// edited calendar is a new entry and never read stale.
static PARSED_CALENDARS: std::sync::LazyLock<
    std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<crate::business_days::BusinessDays>>>,
> = std::sync::LazyLock::new(Default::default);

/// The business days of a stored calendar definition (`None` for none, or for one that no
/// longer parses: the schedule that names it then stops, as one whose calendar is gone).
pub(super) fn business_days(spec: Option<String>) -> Option<std::sync::Arc<crate::business_days::BusinessDays>> {
    let spec = spec?;
    let mut parsed = PARSED_CALENDARS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(days) = parsed.get(&spec) {
        return Some(days.clone());
    }
    let days = serde_json::from_str::<crate::api::CalendarDays>(&spec)
        .ok()?
        .business_days()
        .ok()
        .map(std::sync::Arc::new)?;
    if parsed.len() >= PARSED_CALENDARS_MAX {
        parsed.clear();
    }
    parsed.insert(spec, days.clone());
    Some(days)
}

/// Reads a job's further schedules: JSON in `more_schedules` (NULL or empty: none).
fn more_schedules(row: &AnyRow) -> Result<Vec<crate::api::MoreSchedule>, sqlx::Error> {
    match opt_text(row, "more_schedules")? {
        Some(json) if !json.is_empty() => {
            serde_json::from_str(&json).map_err(|e| sqlx::Error::Decode(format!("job.more_schedules: {e}").into()))
        }
        _ => Ok(Vec::new()),
    }
}

/// Reads the descriptive fields of a job row.
fn job_info(row: &AnyRow) -> Result<JobInfo, sqlx::Error> {
    let mut info = JobInfo::default();
    for (name, _) in JobInfo::FIELDS {
        if let Some(slot) = info.field_mut(name) {
            *slot = text(row, *name)?;
        }
    }
    Ok(info)
}

/// The columns [`run`] reads, for `SELECT … FROM run`. `retried_by` is looked up through the
/// `run_retry_of` index: one probe per run read.
pub(super) const RUN_COLUMNS: &str =
    "id, job_id, group_id, scheduled_at, trigger_type, triggered_at, executor_address, \
     handler, param, shard_index, shard_total, retry_count, lineage, trigger_code, trigger_msg, handled_at, \
     handle_code, handle_msg, created_at, killed_by, retry_of, alarm_status, alarm_msg, lost_at, \
     (SELECT MIN(later.id) FROM run later WHERE later.retry_of = run.id) AS retried_by";

pub(super) fn run(row: &AnyRow) -> Result<Run, sqlx::Error> {
    let trigger_code = int(row, "trigger_code")?;
    let handle_code = int(row, "handle_code")?;
    let killed_by = text(row, "killed_by")?;
    let positive = |v: i64| Some(v).filter(|v| *v > 0);
    Ok(Run {
        id: int(row, "id")?,
        job_id: int(row, "job_id")?,
        group_id: int(row, "group_id")?,
        scheduled_at: int(row, "scheduled_at")?,
        triggered_at: int(row, "triggered_at")?,
        trigger_type: parsed(row, "trigger_type")?,
        executor_address: text(row, "executor_address")?,
        handler: text(row, "handler")?,
        param: text(row, "param")?,
        shard_index: int(row, "shard_index")?,
        shard_total: int(row, "shard_total")?,
        retry_count: int(row, "retry_count")?,
        trigger_code,
        trigger_msg: text(row, "trigger_msg")?,
        handled_at: int(row, "handled_at")?,
        handle_code,
        handle_msg: text(row, "handle_msg")?,
        status: RunStatus::of_run(trigger_code, handle_code, !killed_by.is_empty()),
        lineage: text(row, "lineage")?,
        created_at: int(row, "created_at")?,
        killed_by: Some(killed_by).filter(|k| !k.is_empty()),
        retry_of: positive(int(row, "retry_of")?),
        retried_by: positive(int(row, "retried_by")?),
        lost_at: positive(int(row, "lost_at")?),
        alarm: AlarmState::of(int(row, "alarm_status")?),
        alarm_msg: text(row, "alarm_msg")?,
    })
}
