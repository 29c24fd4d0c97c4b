-- Run logs kept by the admin, so that a run's log outlives its executor:
-- * executor_group.keep_logs: 1 = the group's executors' run logs are stored (the default),
--   0 = they are refused and read from the executor only.
-- * run_log: the log of one finished run as its executor sent it, at most 1 MiB (its end when
--   longer: truncated = 1, total_bytes = the whole log's size). Deleted with its run.
-- Keep in step with ../mysql and ../postgres.

ALTER TABLE executor_group ADD COLUMN keep_logs BIGINT NOT NULL DEFAULT 1;
CREATE TABLE run_log (
    run_id      BIGINT       NOT NULL PRIMARY KEY,
    content     TEXT NOT NULL,
    truncated   BIGINT       NOT NULL DEFAULT 0,
    total_bytes BIGINT       NOT NULL DEFAULT 0,
    stored_at   BIGINT       NOT NULL
);
