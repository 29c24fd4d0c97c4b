-- A job may have further schedules beside its own (09:00 Asia/Shanghai and 18:00 Europe/Berlin):
-- a JSON array of {schedule_type, schedule_expr, time_zone}; NULL or empty for none, as most
-- jobs have. Keep in step with the other dialects.

ALTER TABLE job ADD COLUMN more_schedules TEXT NULL;
