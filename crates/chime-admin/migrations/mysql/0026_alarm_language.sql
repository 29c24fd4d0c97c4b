-- The language of a job's alarm messages (`en`, `zh`; empty: the admin's `--alarm-language`).
-- Keep in step with the other dialects.

ALTER TABLE job ADD COLUMN alarm_language VARCHAR(8) NOT NULL DEFAULT '';
