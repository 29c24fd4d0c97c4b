-- Alarm policies: a job's `alarm_policy` (after N failures in a row, on recovery), what each
-- delivery tells (`event`: the failure, or the recovery that followed it), and the jobs whose
-- alarmed failures wait for a success to report (`alarm_incident`, one row per job, opened by
-- the failure's alarm and closed, once across several admins, by the recovery's), and the
-- alarms a run raised while it waited or ran (`alarm_run_event`: late, slow), claimed once.
-- Keep in step with the other dialects.

ALTER TABLE job ADD COLUMN alarm_policy VARCHAR(255) NOT NULL DEFAULT '';
ALTER TABLE alarm_delivery ADD COLUMN event VARCHAR(16) NOT NULL DEFAULT 'failed';

CREATE TABLE alarm_incident (
    job_id    BIGINT NOT NULL PRIMARY KEY,
    run_id    BIGINT NOT NULL,
    opened_at BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE alarm_run_event (
    run_id BIGINT      NOT NULL,
    event  VARCHAR(16) NOT NULL,
    at     BIGINT      NOT NULL,
    PRIMARY KEY (run_id, event)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
