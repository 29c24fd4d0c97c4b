-- Named alarm channels (e-mail, webhooks, Slack, Teams, DingTalk, Feishu, WeCom), chosen by jobs
-- and by groups (the default of their jobs), and the outbox of alarm deliveries: a delivery is
-- stored with the claim of its run's alarm, before anything is sent, and is then claimed for a
-- lease by one admin at a time, retried with backoff, and left with its state and last error.
-- MySQL gives a TEXT column no literal default: the template is NULL when none, read as empty.
-- Keep in step with the other dialects.

CREATE TABLE alarm_channel (
    id         BIGINT PRIMARY KEY AUTO_INCREMENT,
    name       VARCHAR(64)   NOT NULL UNIQUE,
    kind       VARCHAR(16)   NOT NULL,
    url        VARCHAR(2048) NOT NULL DEFAULT '',
    secret     VARCHAR(512)  NOT NULL DEFAULT '',
    recipients VARCHAR(1024) NOT NULL DEFAULT '',
    template   MEDIUMTEXT    NULL,
    created_at BIGINT        NOT NULL,
    updated_at BIGINT        NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE alarm_delivery (
    id          BIGINT PRIMARY KEY AUTO_INCREMENT,
    run_id      BIGINT       NOT NULL,
    channel_id  BIGINT       NULL,
    channel     VARCHAR(64)  NOT NULL,
    kind        VARCHAR(16)  NOT NULL,
    state       INT          NOT NULL DEFAULT 0,
    attempts    INT          NOT NULL DEFAULT 0,
    next_at     BIGINT       NOT NULL,
    lease_until BIGINT       NOT NULL DEFAULT 0,
    error       VARCHAR(500) NOT NULL DEFAULT '',
    created_at  BIGINT       NOT NULL,
    sent_at     BIGINT       NOT NULL DEFAULT 0,
    INDEX alarm_delivery_due (state, next_at),
    INDEX alarm_delivery_run (run_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

ALTER TABLE job ADD COLUMN alarm_channels VARCHAR(255) NOT NULL DEFAULT '';
ALTER TABLE executor_group ADD COLUMN alarm_channels VARCHAR(255) NOT NULL DEFAULT '';
