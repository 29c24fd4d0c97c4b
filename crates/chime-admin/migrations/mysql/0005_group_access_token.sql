-- A group's own executor access token (XXL-JOB 3.5 keeps one per group): sent to the group's
-- executors and expected from them instead of the admin's global token. NULL = the global one.
ALTER TABLE executor_group ADD COLUMN access_token VARCHAR(255) NULL;
