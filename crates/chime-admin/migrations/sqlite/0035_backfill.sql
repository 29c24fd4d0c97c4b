-- Backfills: a job run once for every fire time its schedule had in a past range.
--
-- backfill: one request (range, at most at_once runs under way, oldest or newest first),
-- running until every fire time has run, or cancelled. fires: the fire times it took on;
-- already: those of the range another backfill took on before it (never run twice).
-- backfill_fire: each fire time a backfill took on, one row per (job, fire time) ever, made
-- when the backfill is created; run_id is set in the transaction that creates its run, and a
-- cancelled backfill's fire times without a run are deleted (free for a later backfill).
-- Keep in step with the other dialects.

CREATE TABLE backfill (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id       BIGINT      NOT NULL,
    range_from   BIGINT      NOT NULL,
    range_to     BIGINT      NOT NULL,
    at_once      BIGINT      NOT NULL,
    newest_first BIGINT      NOT NULL DEFAULT 0,
    state        VARCHAR(16) NOT NULL,
    fires        BIGINT      NOT NULL,
    already      BIGINT      NOT NULL DEFAULT 0,
    created_by   VARCHAR(64) NOT NULL DEFAULT '',
    created_at   BIGINT      NOT NULL,
    ended_at     BIGINT      NOT NULL DEFAULT 0
);
CREATE INDEX backfill_job ON backfill (job_id, id);
CREATE INDEX backfill_state ON backfill (state);

CREATE TABLE backfill_fire (
    job_id      BIGINT NOT NULL,
    fire_at     BIGINT NOT NULL,
    backfill_id BIGINT NOT NULL,
    run_id      BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (job_id, fire_at)
);
CREATE INDEX backfill_fire_backfill ON backfill_fire (backfill_id, run_id);
