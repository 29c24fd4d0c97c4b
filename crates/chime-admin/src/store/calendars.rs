//! Business calendars (`business_calendar`): named sets of business days that job and workflow
//! schedules keep to. A calendar's definition is read with every job and workflow row that names
//! it (`calendar_spec`, see `rows::business_days`), so whichever admin plans a job's fires
//! plans them with the calendar as the database holds it; an edit moves the `updated_at` of
//! each job and workflow that uses it, so the planners' caches read them again, and re-plans
//! their next fire time in the same transaction.

use super::job_columns::JOB_COLUMNS;
use super::jobs::BUMP_UPDATED_AT;
use super::rows;
use super::workflow_rows::{workflow_row, WORKFLOW_COLUMNS};
use super::{Store, StoreError, StoreResult};
use crate::api::{BusinessCalendar, CalendarDays};
use crate::business_days::BusinessDays;
use crate::model::{now_ms, Invalid, WAITING_FOR_RUN_END};
use sqlx::any::{AnyArguments, AnyRow};
use sqlx::query::Query;
use sqlx::{Any, Transaction};
use std::sync::Arc;

/// The columns a calendar is shown from, with how many jobs and workflows use it.
const CALENDAR_COLUMNS: &str = "name, description, spec, updated_at, updated_by, \
     (SELECT COUNT(*) FROM job WHERE job.calendar = business_calendar.name) AS jobs, \
     (SELECT COUNT(*) FROM workflow WHERE workflow.calendar = business_calendar.name) AS workflows";

/// Whether a calendar write creates the calendar or replaces an existing one's definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CalendarChange {
    /// A new calendar: its name must be new.
    Create,
    /// The calendar of that name, replaced.
    Replace,
}

/// A calendar as it is written: its name, description and days, and who writes it.
#[derive(Debug, Clone, Copy)]
pub struct CalendarWrite<'a> {
    /// Created or replaced.
    pub change: CalendarChange,
    /// The calendar's name.
    pub name: &'a str,
    /// Its description.
    pub description: &'a str,
    /// Its zone, workdays, holidays and make-up workdays.
    pub days: &'a CalendarDays,
    /// The user writing it.
    pub by: &'a str,
}

/// The tables whose rows name a calendar.
const USERS: [&str; 2] = ["job", "workflow"];

fn calendar(row: &AnyRow) -> Result<BusinessCalendar, sqlx::Error> {
    let days = stored_days(&rows::text(row, "spec")?)?;
    Ok(BusinessCalendar {
        name: rows::text(row, "name")?,
        description: rows::text(row, "description")?,
        time_zone: days.time_zone,
        workdays: days.workdays,
        excluded: days.excluded,
        included: days.included,
        jobs: rows::int(row, "jobs")?,
        workflows: rows::int(row, "workflows")?,
        updated_at: rows::int(row, "updated_at")?,
        updated_by: rows::text(row, "updated_by")?,
    })
}

fn stored_days(spec: &str) -> Result<CalendarDays, sqlx::Error> {
    serde_json::from_str(spec).map_err(|e| sqlx::Error::Decode(format!("business_calendar.spec: {e}").into()))
}

fn spec_json(days: &CalendarDays) -> String {
    // A struct of strings and lists of them: serialising cannot fail.
    serde_json::to_string(days).unwrap_or_default()
}

impl Store {
    /// Every calendar, by name.
    pub async fn business_calendars(&self) -> StoreResult<Vec<BusinessCalendar>> {
        let q = format!("SELECT {CALENDAR_COLUMNS} FROM business_calendar ORDER BY name");
        let all = sqlx::query(&q).fetch_all(&self.read).await?;
        Ok(all.iter().map(calendar).collect::<Result<_, _>>()?)
    }

    /// The calendar `name`. Read from the writing pool: a calendar just changed is shown as
    /// changed.
    pub async fn business_calendar(&self, name: &str) -> StoreResult<BusinessCalendar> {
        let q = self.sql_text(format!(
            "SELECT {CALENDAR_COLUMNS} FROM business_calendar WHERE name = ?"
        ));
        let row = sqlx::query(&q).bind(name).fetch_optional(&self.write).await?;
        match row {
            Some(r) => Ok(calendar(&r)?),
            None => Err(StoreError::NotFound(format!("business calendar '{name}'"))),
        }
    }

    /// Creates calendar `c.name` (the name must be new), or replaces its definition and
    /// re-plans, in the same transaction, the next fire of every started job and workflow that
    /// uses it.
    pub async fn write_business_calendar(&self, c: CalendarWrite<'_>) -> StoreResult<BusinessCalendar> {
        let mut tx = self.write.begin().await?;
        self.write_calendar_tx(&mut tx, c, now_ms()).await?;
        tx.commit().await?;
        self.business_calendar(c.name).await
    }

    /// [`Store::write_business_calendar`] in `tx` (a jobs document's apply writes calendars
    /// with the jobs that name them).
    pub(super) async fn write_calendar_tx(
        &self,
        tx: &mut Transaction<'static, Any>,
        c: CalendarWrite<'_>,
        now: i64,
    ) -> StoreResult<()> {
        match c.change {
            CalendarChange::Create => {
                let q = self.sql(
                    "INSERT INTO business_calendar (description, spec, updated_at, updated_by, name, created_at) \
                     VALUES (?, ?, ?, ?, ?, ?)",
                );
                self.bind_calendar(&q, c, now)
                    .bind(now)
                    .execute(&mut **tx)
                    .await
                    .map_err(|e| {
                        StoreError::unique_violation_as(e, || {
                            StoreError::Conflict(format!("a business calendar '{}' already exists", c.name))
                        })
                    })?;
                Ok(())
            }
            CalendarChange::Replace => {
                let q = self.sql(
                    "UPDATE business_calendar SET description = ?, spec = ?, updated_at = ?, updated_by = ? \
                     WHERE name = ?",
                );
                let done = self.bind_calendar(&q, c, now).execute(&mut **tx).await?;
                if done.rows_affected() == 0 {
                    return Err(StoreError::NotFound(format!("business calendar '{}'", c.name)));
                }
                self.replan_calendar_users(tx, c.name, now).await
            }
        }
    }

    /// `q` with a calendar's description, spec, change time, author and name bound, in that
    /// order (the insert and the update list them alike).
    fn bind_calendar<'q>(&self, q: &'q str, c: CalendarWrite<'q>, now: i64) -> Query<'q, Any, AnyArguments<'q>> {
        sqlx::query(q)
            .bind(c.description)
            .bind(spec_json(c.days))
            .bind(now)
            .bind(c.by)
            .bind(c.name)
    }

    /// Every calendar as `tx` sees it, by name.
    pub(super) async fn business_calendars_tx(
        &self,
        tx: &mut Transaction<'static, Any>,
    ) -> StoreResult<Vec<BusinessCalendar>> {
        let q = format!("SELECT {CALENDAR_COLUMNS} FROM business_calendar ORDER BY name");
        let all = sqlx::query(&q).fetch_all(&mut **tx).await?;
        Ok(all.iter().map(calendar).collect::<Result<_, _>>()?)
    }

    /// Moves the next fire of each started job and workflow using calendar `name` to the first
    /// one its new days allow after `now` (a fire already due stays: the claim loop takes it as
    /// it is), and moves every user's `updated_at` so the planners read it again. The rows are
    /// read in `tx`, after the calendar's update: they carry its new days.
    async fn replan_calendar_users(&self, tx: &mut Transaction<'static, Any>, name: &str, now: i64) -> StoreResult<()> {
        let started = "WHERE calendar = ? AND running = 1 AND next_fire_at > ?";
        let q = self.sql_text(format!("SELECT {JOB_COLUMNS} FROM job {started}"));
        let jobs = sqlx::query(&q).bind(name).bind(now).fetch_all(&mut **tx).await?;
        let mut next_fires = Vec::new();
        for row in &jobs {
            let job = rows::job(row)?;
            if job.next_fire_at != WAITING_FOR_RUN_END {
                next_fires.push((
                    "job",
                    job.id,
                    job.calendar(job.anchor_at).ok().and_then(|c| c.next_after(now)),
                ));
            }
        }
        let q = self.sql_text(format!("SELECT {WORKFLOW_COLUMNS} FROM workflow {started}"));
        let workflows = sqlx::query(&q).bind(name).bind(now).fetch_all(&mut **tx).await?;
        for row in &workflows {
            let w = workflow_row(row)?;
            next_fires.push((
                "workflow",
                w.id,
                w.calendar(w.anchor_at).ok().and_then(|c| c.next_after(now)),
            ));
        }
        for (table, id, next) in next_fires {
            let q = self.sql_text(format!("UPDATE {table} SET next_fire_at = ? WHERE id = ?"));
            // A calendar with no business day ahead stops the schedule, as a cron with no fire
            // time ahead does.
            sqlx::query(&q)
                .bind(next.unwrap_or(0))
                .bind(id)
                .execute(&mut **tx)
                .await?;
        }
        for table in USERS {
            let q = self.sql_text(format!(
                "UPDATE {table} SET updated_at = {BUMP_UPDATED_AT} WHERE calendar = ?"
            ));
            sqlx::query(&q)
                .bind(now)
                .bind(now)
                .bind(name)
                .execute(&mut **tx)
                .await?;
        }
        Ok(())
    }

    /// Deletes the calendar `name`; refused (409) while a job or workflow uses it.
    pub async fn delete_business_calendar(&self, name: &str) -> StoreResult<()> {
        let mut tx = self.write.begin().await?;
        for table in USERS {
            let q = self.sql_text(format!("SELECT COUNT(*) AS n FROM {table} WHERE calendar = ?"));
            let n = rows::int(&sqlx::query(&q).bind(name).fetch_one(&mut *tx).await?, "n")?;
            if n > 0 {
                return Err(StoreError::Conflict(format!(
                    "business calendar '{name}' is used by {n} {table}(s); change them first"
                )));
            }
        }
        let q = self.sql("DELETE FROM business_calendar WHERE name = ?");
        let done = sqlx::query(&q).bind(name).execute(&mut *tx).await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("business calendar '{name}'")));
        }
        tx.commit().await?;
        Ok(())
    }

    /// The business days of calendar `name` as `tx` sees it (`None` for no calendar): a job or
    /// workflow written in `tx` plans its first fire with them. A name that is not a calendar
    /// is refused as `field`.
    pub(super) async fn business_days_tx(
        &self,
        tx: &mut Transaction<'static, Any>,
        name: &str,
    ) -> StoreResult<Option<Arc<BusinessDays>>> {
        if name.is_empty() {
            return Ok(None);
        }
        let q = self.sql("SELECT spec FROM business_calendar WHERE name = ?");
        let row = sqlx::query(&q).bind(name).fetch_optional(&mut **tx).await?;
        match row {
            Some(r) => Ok(rows::business_days(Some(rows::text(&r, "spec")?))),
            None => Err(Invalid::new(
                "calendar",
                format!("'{name}' is not a business calendar (see /v1/calendars)"),
            )
            .into()),
        }
    }
}
