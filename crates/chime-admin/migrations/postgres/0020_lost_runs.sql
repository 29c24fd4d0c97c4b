-- run.lost_at: when the lost-run sweep recorded the run's failure as lost (epoch ms; 0: it did
-- not). Only such a failure may still become a success, when the executor reports one after
-- all; a failure reported by the executor, a failed send or a kill stays as it is.
-- Keep in step with ../sqlite and ../mysql.

ALTER TABLE run ADD COLUMN lost_at BIGINT NOT NULL DEFAULT 0;

