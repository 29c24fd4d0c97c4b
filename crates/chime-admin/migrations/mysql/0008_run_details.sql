-- What the run pages show beyond the two codes:
-- * killed_by: the user whose kill the executor accepted while the run had no result yet
--   (empty: not killed). Such a run is still a failure (handle_code 500, as executors report
--   it and as retries and alarms treat it); only its shown state is "killed".
-- * retry_of: the run whose failure made this run (0: not a retry). The index finds the retry
--   of a failed run.
-- * alarm_msg: why the run's alarm was not delivered (bounded, never a URL or a password).
-- Keep in step with ../sqlite and ../postgres.

ALTER TABLE run ADD COLUMN killed_by VARCHAR(128) NOT NULL DEFAULT '';
ALTER TABLE run ADD COLUMN retry_of BIGINT NOT NULL DEFAULT 0;
ALTER TABLE run ADD COLUMN alarm_msg VARCHAR(500) NOT NULL DEFAULT '';
CREATE INDEX run_retry_of ON run (retry_of);
