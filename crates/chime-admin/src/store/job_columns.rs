//! A table's columns, listed once, with their values ([`Cell`]s), from which its insert and
//! update statements and their binds are built ([`Store::insert_row`], [`Store::update_row`]).
//!
//! A job's columns: [`draft_columns`] names each column a job's definition is
//! written to together with its value, and the insert and update statements (`store::jobs`,
//! which `apply` and the import go through too) are built from that list, their placeholders
//! and binds in the same order. The descriptive fields ([`JobInfo`]) come from their own
//! declaration, so a new one needs no change here; [`JOB_COLUMNS`] reads them back.

use super::{rows, Store};
use crate::model::{JobDraft, JobInfo};
use sqlx::any::{Any, AnyArguments};
use sqlx::query::Query;
use sqlx::AnyConnection;
use std::fmt;

/// A value bound to one column.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Cell {
    /// A text column.
    Text(String),
    /// A text column that may be NULL (a job's key, before it is named).
    MaybeText(Option<String>),
    /// An integer (or boolean) column.
    Int(i64),
}

/// The columns of a job's definition and their values from `draft`: what both an insert and
/// an update write. The caller adds the columns of the job's schedule state (running, next
/// fire, …), which differ between the two.
pub(super) fn draft_columns(draft: &JobDraft, key: Option<&str>, group_id: i64) -> Vec<(&'static str, Cell)> {
    use Cell::{Int, MaybeText, Text};
    let mut cells = vec![
        ("job_key", MaybeText(key.map(str::to_owned))),
        ("group_id", Int(group_id)),
        ("description", Text(draft.description.clone())),
    ];
    cells.extend(info_columns(&draft.info));
    cells.extend([
        ("priority", Int(draft.flow.priority)),
        ("concurrency_key", Text(draft.flow.concurrency_key.clone())),
        ("schedule_type", Text(draft.schedule_type.as_str().to_owned())),
        ("schedule_expr", Text(draft.schedule_expr.clone())),
        ("time_zone", Text(draft.time_zone.clone())),
        ("misfire_strategy", Text(draft.misfire_strategy.as_str().to_owned())),
        ("more_schedules", Text(more_schedules_json(&draft.more_schedules))),
        ("calendar", Text(draft.calendar.clone())),
        ("route_strategy", Text(draft.route_strategy.as_str().to_owned())),
        ("handler", Text(draft.handler.clone())),
        ("param", Text(draft.param.clone())),
        ("block_strategy", Text(draft.block_strategy.as_str().to_owned())),
        ("timeout_secs", Int(draft.timeout_secs)),
        ("retry_count", Int(draft.retry_count)),
        ("child_job_ids", Text(rows::join_ids(&draft.child_job_ids))),
        ("glue_type", Text(draft.glue_type.as_str().to_owned())),
        ("glue_source", Text(draft.glue_source.clone())),
        ("running", Int(i64::from(draft.running))),
    ]);
    cells
}

/// A job's further schedules as stored: a JSON array, or empty for none (most jobs).
fn more_schedules_json(more: &[crate::api::MoreSchedule]) -> String {
    if more.is_empty() {
        String::new()
    } else {
        serde_json::to_string(more).unwrap_or_default()
    }
}

/// The descriptive fields' columns (named as the fields) and values.
fn info_columns(info: &JobInfo) -> impl Iterator<Item = (&'static str, Cell)> + '_ {
    JobInfo::FIELDS
        .iter()
        .zip(info.values())
        .map(|(&(name, _), value)| (name, Cell::Text(value.to_owned())))
}

/// `INSERT INTO job (…) VALUES (?, …)` of these columns.
pub(super) fn insert_sql(table: &str, cells: &[(&'static str, Cell)]) -> String {
    let names: Vec<&str> = cells.iter().map(|(name, _)| *name).collect();
    format!(
        "INSERT INTO {table} ({}) VALUES ({})",
        names.join(", "),
        super::placeholders(cells.len())
    )
}

/// `col = ?, …` of these columns, for an `UPDATE job SET`.
pub(super) fn set_sql(cells: &[(&'static str, Cell)]) -> String {
    cells
        .iter()
        .map(|(name, _)| format!("{name} = ?"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Binds the cells' values, in their order, to `query`.
pub(super) fn bind_cells<'q>(
    mut query: Query<'q, Any, AnyArguments<'q>>,
    cells: &'q [(&'static str, Cell)],
) -> Query<'q, Any, AnyArguments<'q>> {
    for (_, cell) in cells {
        query = match cell {
            Cell::Text(v) => query.bind(v.as_str()),
            Cell::MaybeText(v) => query.bind(v.as_deref()),
            Cell::Int(v) => query.bind(*v),
        };
    }
    query
}

impl Store {
    /// Inserts a row of `table` with `cells`, created and updated `now`, on `conn` (a
    /// transaction's); returns its id.
    pub(super) async fn insert_row(
        &self,
        conn: &mut AnyConnection,
        table: &str,
        mut cells: Vec<(&'static str, Cell)>,
        now: i64,
    ) -> Result<i64, sqlx::Error> {
        cells.extend([("created_at", Cell::Int(now)), ("updated_at", Cell::Int(now))]);
        let q = self.sql_text(format!("{} RETURNING id", insert_sql(table, &cells)));
        let row = bind_cells(sqlx::query(&q), &cells).fetch_one(conn).await?;
        rows::int(&row, 0)
    }

    /// Sets `cells` on row `id` of `table`, updated `now`, on `conn`; returns how many rows
    /// changed (0: there is no such row).
    pub(super) async fn update_row(
        &self,
        conn: &mut AnyConnection,
        table: &str,
        id: i64,
        mut cells: Vec<(&'static str, Cell)>,
        now: i64,
    ) -> Result<u64, sqlx::Error> {
        cells.push(("updated_at", Cell::Int(now)));
        let q = self.sql_text(format!("UPDATE {table} SET {} WHERE id = ?", set_sql(&cells)));
        let done = bind_cells(sqlx::query(&q), &cells).bind(id).execute(conn).await?;
        Ok(done.rows_affected())
    }
}

/// The columns `rows::job` reads, for `SELECT … FROM job`; written with `{JOB_COLUMNS}` in a
/// `format!`, it lists the fixed columns and then the descriptive ones.
pub(crate) const JOB_COLUMNS: JobColumns = JobColumns;

/// See [`JOB_COLUMNS`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct JobColumns;

impl fmt::Display for JobColumns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "id, job_key, group_id, partition_no, description, schedule_type, \
             schedule_expr, time_zone, misfire_strategy, route_strategy, handler, param, block_strategy, timeout_secs, \
             retry_count, child_job_ids, glue_type, glue_source, glue_updated_at, running, anchor_at, next_fire_at, \
             last_fire_at, created_at, updated_at, priority, concurrency_key, paused_until, more_schedules, calendar, \
             (SELECT spec FROM business_calendar WHERE business_calendar.name = job.calendar) AS calendar_spec",
        )?;
        JobInfo::FIELDS.iter().try_for_each(|(name, _)| write!(f, ", {name}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_list_each_column_once_with_its_placeholder() {
        let cells = vec![("a", Cell::Int(1)), ("b", Cell::Text("x".into()))];
        assert_eq!(insert_sql("job", &cells), "INSERT INTO job (a, b) VALUES (?, ?)");
        assert_eq!(set_sql(&cells), "a = ?, b = ?");
        let columns = JOB_COLUMNS.to_string();
        for (name, _) in JobInfo::FIELDS {
            assert_eq!(columns.matches(name).count(), 1, "{columns}");
        }
    }
}
