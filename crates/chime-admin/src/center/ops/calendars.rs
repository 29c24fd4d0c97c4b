//! Operations on business calendars. An edit re-plans the jobs and workflows that use the
//! calendar (the store does, in the edit's transaction) and wakes both loops, so a fire the edit
//! moved near is claimed on time.

use crate::api::calendar_ics::{from_ics, to_ics};
use crate::api::calendars::check_calendar_name;
use crate::api::{BusinessCalendar, BusinessCalendarSpec};
use crate::center::{Admin, OpError};
use crate::model::Invalid;
use crate::store::{CalendarChange, CalendarWrite, StoreError};

impl Admin {
    /// Creates a calendar; its name must be new.
    pub async fn create_business_calendar(
        &self,
        spec: &BusinessCalendarSpec,
        by: &str,
    ) -> Result<BusinessCalendar, OpError> {
        let (description, days) = spec.check()?;
        let name = spec
            .name
            .as_deref()
            .ok_or_else(|| Invalid::new("name", "is required"))?;
        self.write_business_calendar(CalendarWrite {
            change: CalendarChange::Create,
            name,
            description: &description,
            days: &days,
            by,
        })
        .await
    }

    /// Replaces calendar `name` (a name in the body must be the same).
    pub async fn update_business_calendar(
        &self,
        name: &str,
        spec: &BusinessCalendarSpec,
        by: &str,
    ) -> Result<BusinessCalendar, OpError> {
        if spec.name.as_deref().is_some_and(|n| n != name) {
            return Err(Invalid::new("name", "a calendar is not renamed: jobs and workflows name it").into());
        }
        let (description, days) = spec.check()?;
        self.write_business_calendar(CalendarWrite {
            change: CalendarChange::Replace,
            name,
            description: &description,
            days: &days,
            by,
        })
        .await
    }

    /// Writes `c`. A replaced calendar may have moved fires of its jobs and workflows near, so
    /// both loops are woken.
    async fn write_business_calendar(&self, c: CalendarWrite<'_>) -> Result<BusinessCalendar, OpError> {
        let calendar = self.store.write_business_calendar(c).await?;
        if c.change == CalendarChange::Replace {
            self.wake_scheduler();
            self.workflows.now();
        }
        Ok(calendar)
    }

    /// Deletes calendar `name`, unless a job or workflow uses it.
    pub async fn delete_business_calendar(&self, name: &str) -> Result<(), OpError> {
        Ok(self.store.delete_business_calendar(name).await?)
    }

    /// Calendar `name` as an iCalendar file.
    pub async fn export_business_calendar(&self, name: &str) -> Result<String, OpError> {
        let c = self.store.business_calendar(name).await?;
        let (name, description, changed_at) = (c.name.clone(), c.description.clone(), c.updated_at);
        Ok(to_ics(&name, &description, &c.days(), changed_at))
    }

    /// Creates calendar `name` from an iCalendar file, or replaces its days (keeping its
    /// description); `zone`, when given, is the calendar's zone. Answers the calendar and
    /// whether it was created.
    pub async fn import_business_calendar(
        &self,
        name: &str,
        ics: &str,
        zone: Option<&str>,
        by: &str,
    ) -> Result<(BusinessCalendar, bool), OpError> {
        check_calendar_name(name)?;
        let days = from_ics(ics, zone)?;
        // An existing calendar keeps its description; a new one has none.
        let description = match self.store.business_calendar(name).await {
            Ok(current) => Some(current.description),
            Err(StoreError::NotFound(_)) => None,
            Err(e) => return Err(e.into()),
        };
        let change = match description {
            Some(_) => CalendarChange::Replace,
            None => CalendarChange::Create,
        };
        let calendar = self
            .write_business_calendar(CalendarWrite {
                change,
                name,
                description: description.as_deref().unwrap_or(""),
                days: &days,
                by,
            })
            .await?;
        Ok((calendar, change == CalendarChange::Create))
    }
}
