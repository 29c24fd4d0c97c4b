-- A workflow node may carry its own priority and concurrency key, over its job's. Its run
-- stores them (NULL: the job's), so a retry and a run still queued when its admin dies keep
-- them. Every other run leaves both NULL. Keep in step with the other dialects.

ALTER TABLE run ADD COLUMN priority BIGINT NULL;
ALTER TABLE run ADD COLUMN concurrency_key VARCHAR(128) NULL;

-- A run new to a limit goes behind the runs already waiting on it: taking a slot counts them.
CREATE INDEX run_queue_waits_on ON run_queue (waits_on);
