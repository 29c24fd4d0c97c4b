//! The business calendars of a jobs document: exported whole (a calendar holds no secret), and
//! applied by name before the jobs and workflows that name them — a calendar that does not
//! exist is created, one that differs is replaced (re-planning its users, as an edit through
//! the API does). A document never deletes a calendar.

use super::apply::{ApplyPlan, PlanEntry};
use super::{CalendarChange, CalendarWrite, Store, StoreError, StoreResult};
use crate::api::{BusinessCalendar, BusinessCalendarSpec};
use crate::model::Invalid;
use sqlx::any::Any;
use sqlx::Transaction;

/// Most calendars one document may hold.
pub const MAX_DOC_CALENDARS: usize = 200;

/// The calendar as a document lists it.
fn exported(c: BusinessCalendar) -> BusinessCalendarSpec {
    BusinessCalendarSpec {
        name: Some(c.name),
        description: Some(c.description).filter(|d| !d.is_empty()),
        time_zone: c.time_zone,
        workdays: Some(c.workdays),
        excluded: c.excluded,
        included: c.included,
    }
}

fn refused(i: usize, e: Invalid) -> StoreError {
    StoreError::Invalid(Invalid::new(format!("calendars[{i}].{}", e.field), e.message))
}

impl Store {
    /// Every calendar as a document lists it.
    pub(super) async fn export_calendars(&self) -> StoreResult<Vec<BusinessCalendarSpec>> {
        Ok(self.business_calendars().await?.into_iter().map(exported).collect())
    }

    /// Creates and replaces the document's `calendars` in `tx`, adding each to `plan`.
    pub(super) async fn apply_calendars(
        &self,
        tx: &mut Transaction<'static, Any>,
        calendars: &[BusinessCalendarSpec],
        (by, now): (&str, i64),
        plan: &mut ApplyPlan,
    ) -> StoreResult<()> {
        if calendars.len() > MAX_DOC_CALENDARS {
            return Err(Invalid::new("calendars", format!("at most {MAX_DOC_CALENDARS} calendars")).into());
        }
        if calendars.is_empty() {
            return Ok(());
        }
        let existing = self.business_calendars_tx(tx).await?;
        let mut seen = std::collections::HashSet::new();
        for (i, spec) in calendars.iter().enumerate() {
            let Some(name) = spec.name.as_deref() else {
                return Err(refused(i, Invalid::new("name", "is required")));
            };
            if !seen.insert(name) {
                return Err(refused(i, Invalid::new("name", format!("'{name}' is listed twice"))));
            }
            let (description, days) = spec.check().map_err(|e| refused(i, e))?;
            let write = |change| CalendarWrite {
                change,
                name,
                description: &description,
                days: &days,
                by,
            };
            match existing.iter().find(|c| c.name == name) {
                None => {
                    self.write_calendar_tx(tx, write(CalendarChange::Create), now).await?;
                    plan.create.push(calendar_entry(name, Vec::new()));
                }
                Some(c) => {
                    let mut fields = Vec::new();
                    if c.description != description {
                        fields.push("description".to_owned());
                    }
                    let was = exported(c.clone());
                    if was.time_zone != days.time_zone {
                        fields.push("time_zone".to_owned());
                    }
                    if was.workdays.as_ref() != Some(&days.workdays) {
                        fields.push("workdays".to_owned());
                    }
                    if was.excluded != days.excluded {
                        fields.push("excluded".to_owned());
                    }
                    if was.included != days.included {
                        fields.push("included".to_owned());
                    }
                    if !fields.is_empty() {
                        self.write_calendar_tx(tx, write(CalendarChange::Replace), now).await?;
                        plan.update.push(calendar_entry(name, fields));
                    }
                }
            }
        }
        Ok(())
    }
}

fn calendar_entry(name: &str, fields: Vec<String>) -> PlanEntry {
    PlanEntry {
        kind: "calendar".to_owned(),
        group: String::new(),
        key: Some(name.to_owned()),
        fields,
    }
}
