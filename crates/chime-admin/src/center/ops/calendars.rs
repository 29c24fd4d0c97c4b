//! Operations on business calendars. An edit re-plans the jobs and workflows that use the
//! calendar (the store does, in the edit's transaction) and wakes both loops, so a fire the edit
//! moved near is claimed on time.

use crate::api::calendar_ics::{from_ics, to_ics};
use crate::api::calendars::check_calendar_name;
use crate::api::{BusinessCalendar, BusinessCalendarSpec, CalendarDays};
use crate::center::{Admin, OpError};
use crate::model::Invalid;
use crate::store::StoreError;

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
        Ok(self
            .store
            .insert_business_calendar(name, &description, &days, by)
            .await?)
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
        self.replace_business_calendar(name, &description, &days, by).await
    }

    async fn replace_business_calendar(
        &self,
        name: &str,
        description: &str,
        days: &CalendarDays,
        by: &str,
    ) -> Result<BusinessCalendar, OpError> {
        let calendar = self.store.update_business_calendar(name, description, days, by).await?;
        self.wake_scheduler();
        self.workflows.now();
        Ok(calendar)
    }

    /// Deletes calendar `name`, unless a job or workflow uses it.
    pub async fn delete_business_calendar(&self, name: &str) -> Result<(), OpError> {
        Ok(self.store.delete_business_calendar(name).await?)
    }

    /// Calendar `name` as an iCalendar file.
    pub async fn export_business_calendar(&self, name: &str) -> Result<String, OpError> {
        let c = self.store.business_calendar(name).await?;
        let (name, description) = (c.name.clone(), c.description.clone());
        Ok(to_ics(&name, &description, &c.days()))
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
        match self.store.business_calendar(name).await {
            Ok(current) => Ok((
                self.replace_business_calendar(name, &current.description, &days, by)
                    .await?,
                false,
            )),
            Err(StoreError::NotFound(_)) => Ok((self.store.insert_business_calendar(name, "", &days, by).await?, true)),
            Err(e) => Err(e.into()),
        }
    }
}
