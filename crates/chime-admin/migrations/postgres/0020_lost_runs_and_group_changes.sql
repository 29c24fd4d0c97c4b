-- * run.lost_at: when the lost-run sweep recorded the run's failure as lost (epoch ms; 0: it did
--   not). Only such a failure may still become a success, when the executor reports one after
--   all; a failure reported by the executor, a failed send or a kill stays as it is.
-- * group_change: one row whose version every change to an executor group raises, in the
--   change's transaction. Each admin reads it every 500 ms and reloads the groups when it moved,
--   so a group created on one admin is known to the others before their next full refresh.
-- Keep in step with ../sqlite and ../mysql.

ALTER TABLE run ADD COLUMN lost_at BIGINT NOT NULL DEFAULT 0;

CREATE TABLE group_change (
    id      BIGINT PRIMARY KEY,
    version BIGINT NOT NULL DEFAULT 0
);
INSERT INTO group_change (id, version) VALUES (1, 0);
