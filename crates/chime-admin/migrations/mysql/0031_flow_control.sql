-- Flow control: limits on running runs, and the queue of runs waiting for a slot.
--
-- concurrency_limit: at most max_running runs hold a slot of `name` at once (0: any number),
-- and at most rate_max start in each window of rate_period_ms (0: no rate), counted in
-- window_count for the window that began at window_start; a run waiting on it longer than
-- queue_timeout_ms (0: no timeout) ends failed. A name is a job's
-- concurrency key (`warehouse-db`), `group:<app_name>` (every run of that executor group) or
-- `executor:<address>` (every run sent to that executor).
-- concurrency_slot: the slots held, one row per (run, limit) taken just before the run is
-- sent, in the transaction that counted the limit's slots. A slot belongs to its run, not to
-- an admin: it is given back when the run has ended, whichever admin sees it end, so a killed
-- admin leaks none.
-- run_queue: runs that found a limit full, waiting (still pending in `run`) until a slot frees.
-- admitted_at is set (non-zero) by the admin that took the run out of the queue to send it;
-- skip_queue marks a run an operator sent on regardless of its limits.
-- job.priority orders the queue; job.concurrency_key names a job's own limit. Keep in step
-- with the other dialects.

ALTER TABLE job ADD COLUMN priority BIGINT NOT NULL DEFAULT 0;
ALTER TABLE job ADD COLUMN concurrency_key VARCHAR(128) NOT NULL DEFAULT '';

CREATE TABLE concurrency_limit (
    name        VARCHAR(200) NOT NULL PRIMARY KEY,
    max_running BIGINT       NOT NULL,
    rate_max       BIGINT    NOT NULL DEFAULT 0,
    rate_period_ms BIGINT    NOT NULL DEFAULT 0,
    window_start   BIGINT    NOT NULL DEFAULT 0,
    window_count   BIGINT    NOT NULL DEFAULT 0,
    queue_timeout_ms BIGINT  NOT NULL DEFAULT 0,
    created_at  BIGINT       NOT NULL,
    updated_at  BIGINT       NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE concurrency_slot (
    run_id   BIGINT       NOT NULL,
    name     VARCHAR(200) NOT NULL,
    taken_at BIGINT       NOT NULL,
    PRIMARY KEY (run_id, name),
    INDEX concurrency_slot_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE run_queue (
    run_id      BIGINT       NOT NULL PRIMARY KEY,
    job_id      BIGINT       NOT NULL,
    waits_on    VARCHAR(200) NOT NULL,
    priority    BIGINT       NOT NULL,
    queued_at   BIGINT       NOT NULL,
    admitted_at BIGINT       NOT NULL DEFAULT 0,
    skip_queue  BIGINT       NOT NULL DEFAULT 0
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
