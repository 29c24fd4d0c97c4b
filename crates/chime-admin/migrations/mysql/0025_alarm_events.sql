-- Alarms that no run raised: a workflow instance that failed (`workflow_failed`), a group left
-- without a live executor (`no_executor`) and one back (`executor_back`). Each is one row of
-- `alarm_event`, stored with its deliveries in one transaction; its deliveries point to it
-- (`alarm_delivery.event_id`, `run_id` 0) and the outbox sends them like a run's. `claim_key`
-- is unique, so an alarm is stored once across several admins; `title` and `facts` (a JSON list
-- of [label, value]) are the message as it was when it was raised, `link` the console's path to
-- its subject, `note` why nothing was sent (a silence window). `alarm_group_incident` holds
-- one row per group without a live executor (`alarmed`: its alarm was sent, so its return
-- is told too), opened once and closed once across several admins. Workflows name their alarm
-- channels as jobs do.
-- Keep in step with the other dialects.

CREATE TABLE alarm_event (
    id         BIGINT PRIMARY KEY AUTO_INCREMENT,
    event      VARCHAR(16)  NOT NULL,
    subject    BIGINT       NOT NULL,
    claim_key  VARCHAR(64)  NOT NULL UNIQUE,
    title      VARCHAR(500) NOT NULL,
    facts      MEDIUMTEXT        NOT NULL,
    link       VARCHAR(255) NOT NULL DEFAULT '',
    note       VARCHAR(500) NOT NULL DEFAULT '',
    created_at BIGINT       NOT NULL,
    INDEX alarm_event_subject (event, subject)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

ALTER TABLE alarm_delivery ADD COLUMN event_id BIGINT NOT NULL DEFAULT 0;
CREATE INDEX alarm_delivery_event ON alarm_delivery (event_id);

CREATE TABLE alarm_group_incident (
    group_id  BIGINT  NOT NULL PRIMARY KEY,
    event_id  BIGINT  NOT NULL,
    alarmed   INTEGER NOT NULL,
    opened_at BIGINT  NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

ALTER TABLE workflow ADD COLUMN alarm_channels VARCHAR(255) NOT NULL DEFAULT '';
