-- Backfills: a job or a workflow run once for every fire time its schedule had in a past range.
--
-- backfill: one request for a target (target 'job' or 'workflow', target_id its id): the
-- range, at most at_once runs (or instances) under way, oldest or newest first; running until
-- every fire time has run, or cancelled. fires: the fire times it took on; already: those of
-- the range another backfill of the same target took on before it (never run twice).
-- backfill_fire: each fire time a backfill took on, one row per (target, fire time) ever, made
-- when the backfill is created; started_id is the run (of a job) or the instance (of a
-- workflow) made for it, set in the transaction that makes it; a cancelled backfill's fire
-- times not started are deleted (free for a later backfill). Keep in step with the other
-- dialects.

CREATE TABLE backfill (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    target       VARCHAR(8)  NOT NULL,
    target_id    BIGINT      NOT NULL,
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
CREATE INDEX backfill_target ON backfill (target, target_id, id);
CREATE INDEX backfill_state ON backfill (state);

CREATE TABLE backfill_fire (
    target      VARCHAR(8) NOT NULL,
    target_id   BIGINT     NOT NULL,
    fire_at     BIGINT     NOT NULL,
    backfill_id BIGINT     NOT NULL,
    started_id  BIGINT     NOT NULL DEFAULT 0,
    PRIMARY KEY (target, target_id, fire_at)
);
CREATE INDEX backfill_fire_backfill ON backfill_fire (backfill_id, started_id);
