-- Named alarm channels (e-mail, webhooks, Slack, Teams, DingTalk, Feishu, WeCom), chosen by jobs
-- and by groups (the default of their jobs), and the outbox of alarm deliveries: a delivery is
-- stored with the claim of its run's alarm, before anything is sent, and is then claimed for a
-- lease by one admin at a time, retried with backoff, and left with its state and last error.
-- Keep in step with the other dialects.

CREATE TABLE alarm_channel (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       VARCHAR(64)   NOT NULL UNIQUE,
    kind       VARCHAR(16)   NOT NULL,
    url        VARCHAR(2048) NOT NULL DEFAULT '',
    secret     VARCHAR(512)  NOT NULL DEFAULT '',
    recipients VARCHAR(1024) NOT NULL DEFAULT '',
    template   TEXT          NOT NULL DEFAULT '',
    created_at BIGINT        NOT NULL,
    updated_at BIGINT        NOT NULL
);

CREATE TABLE alarm_delivery (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id      BIGINT       NOT NULL,
    channel_id  BIGINT       NULL,
    channel     VARCHAR(64)  NOT NULL,
    kind        VARCHAR(16)  NOT NULL,
    state       INTEGER      NOT NULL DEFAULT 0,
    attempts    INTEGER      NOT NULL DEFAULT 0,
    next_at     BIGINT       NOT NULL,
    lease_until BIGINT       NOT NULL DEFAULT 0,
    error       VARCHAR(500) NOT NULL DEFAULT '',
    created_at  BIGINT       NOT NULL,
    sent_at     BIGINT       NOT NULL DEFAULT 0
);
CREATE INDEX alarm_delivery_due ON alarm_delivery (state, next_at);
CREATE INDEX alarm_delivery_run ON alarm_delivery (run_id);

ALTER TABLE job ADD COLUMN alarm_channels VARCHAR(255) NOT NULL DEFAULT '';
ALTER TABLE executor_group ADD COLUMN alarm_channels VARCHAR(255) NOT NULL DEFAULT '';
