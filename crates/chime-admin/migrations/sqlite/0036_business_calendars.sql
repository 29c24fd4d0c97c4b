-- Business calendars: named sets of business days in a zone, which job and workflow schedules
-- may keep to.
--
-- business_calendar: name (what job.calendar and workflow.calendar name; a calendar in use is
-- not deleted); spec: the checked definition as JSON (zone, weekly workdays, excluded and
-- included dates; see api/calendars.rs CalendarDays), read with each job and workflow row.
-- job.calendar, workflow.calendar: the calendar's name, '' for none. Keep in step with the
-- other dialects.

CREATE TABLE business_calendar (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        VARCHAR(64)  NOT NULL UNIQUE,
    description VARCHAR(2000) NOT NULL DEFAULT '',
    spec        TEXT NOT NULL,
    created_at  BIGINT       NOT NULL,
    updated_at  BIGINT       NOT NULL,
    updated_by  VARCHAR(64)  NOT NULL DEFAULT ''
);

ALTER TABLE job ADD COLUMN calendar VARCHAR(64) NOT NULL DEFAULT '';
ALTER TABLE workflow ADD COLUMN calendar VARCHAR(64) NOT NULL DEFAULT '';
CREATE INDEX job_calendar ON job (calendar);
CREATE INDEX workflow_calendar ON workflow (calendar);
