-- job.job_key: a job's stable name within its group (1-64 of A-Z a-z 0-9 . _ -), so a jobs
-- document (chime export / chime apply) updates a job instead of creating it again. Jobs made
-- before it are named job-<id>. NULL only between a job's insert and the naming of it by id.
-- Keep in step with ../sqlite and ../mysql.

ALTER TABLE job ADD COLUMN job_key VARCHAR(64) NULL;
UPDATE job SET job_key = 'job-' || id;
CREATE UNIQUE INDEX job_group_key ON job (group_id, job_key);
