-- Silence windows of alarms (maintenance windows): while one covers a run's job or group, the
-- run's failure is recorded as needing no alarm (alarm_status 1), with the window in alarm_msg,
-- and nothing is delivered. A window is one-off (starts_at to ends_at, epoch ms) or recurring
-- (a Quartz cron expression in time_zone for each start, lasting duration_secs; starts_at and
-- ends_at 0). Exactly one of group_id and job_id is set; the other is 0. The alarm task reads
-- the windows of a run's job and group by the two indexes, at most once per failed run.
-- Keep in step with the other dialects.

CREATE TABLE alarm_silence (
    id            BIGINT PRIMARY KEY AUTO_INCREMENT,
    name          VARCHAR(64)  NOT NULL DEFAULT '',
    reason        VARCHAR(500) NOT NULL DEFAULT '',
    group_id      BIGINT       NOT NULL DEFAULT 0,
    job_id        BIGINT       NOT NULL DEFAULT 0,
    starts_at     BIGINT       NOT NULL DEFAULT 0,
    ends_at       BIGINT       NOT NULL DEFAULT 0,
    cron          VARCHAR(128) NOT NULL DEFAULT '',
    duration_secs BIGINT       NOT NULL DEFAULT 0,
    time_zone     VARCHAR(64)  NOT NULL,
    created_by    VARCHAR(64)  NOT NULL DEFAULT '',
    created_at    BIGINT       NOT NULL,
    INDEX alarm_silence_group (group_id),
    INDEX alarm_silence_job (job_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
