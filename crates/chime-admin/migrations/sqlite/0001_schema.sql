-- Chime scheduling center schema (SQLite). Times are epoch milliseconds (UTC) in BIGINT columns.
-- Keep in step with ../mysql and ../postgres: one logical schema, three dialects.

CREATE TABLE executor_group (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    app_name      VARCHAR(64)  NOT NULL UNIQUE,
    title         VARCHAR(128) NOT NULL,
    address_type  BIGINT       NOT NULL DEFAULT 0,
    address_list  TEXT         NOT NULL DEFAULT '',
    protocol      VARCHAR(8)   NOT NULL DEFAULT 'G2',
    created_at    BIGINT       NOT NULL,
    updated_at    BIGINT       NOT NULL
);

CREATE TABLE job (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    group_id         BIGINT       NOT NULL REFERENCES executor_group (id),
    partition_no     BIGINT       NOT NULL DEFAULT 0,
    description      VARCHAR(255) NOT NULL,
    owner            VARCHAR(64)  NOT NULL DEFAULT '',
    alarm_contacts   VARCHAR(255) NOT NULL DEFAULT '',
    schedule_type    VARCHAR(16)  NOT NULL,
    schedule_expr    VARCHAR(128) NOT NULL DEFAULT '',
    time_zone        VARCHAR(64)  NOT NULL,
    misfire_strategy VARCHAR(16)  NOT NULL,
    route_strategy   VARCHAR(32)  NOT NULL,
    handler          VARCHAR(255) NOT NULL DEFAULT '',
    param            TEXT         NOT NULL DEFAULT '',
    block_strategy   VARCHAR(32)  NOT NULL,
    timeout_secs     BIGINT       NOT NULL DEFAULT 0,
    retry_count      BIGINT       NOT NULL DEFAULT 0,
    child_job_ids    VARCHAR(255) NOT NULL DEFAULT '',
    glue_type        VARCHAR(32)  NOT NULL,
    glue_source      TEXT         NOT NULL DEFAULT '',
    glue_updated_at  BIGINT       NOT NULL,
    running          BIGINT       NOT NULL DEFAULT 0,
    anchor_at        BIGINT       NOT NULL DEFAULT 0,
    next_fire_at     BIGINT       NOT NULL DEFAULT 0,
    last_fire_at     BIGINT       NOT NULL DEFAULT 0,
    created_at       BIGINT       NOT NULL,
    updated_at       BIGINT       NOT NULL
);
CREATE INDEX job_due ON job (running, next_fire_at);
CREATE INDEX job_group ON job (group_id);

CREATE TABLE glue_version (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id      BIGINT      NOT NULL,
    glue_type   VARCHAR(32) NOT NULL,
    glue_source TEXT        NOT NULL,
    author      VARCHAR(64) NOT NULL DEFAULT '',
    created_at  BIGINT      NOT NULL
);
CREATE INDEX glue_version_job ON glue_version (job_id, id);

CREATE TABLE run (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id           BIGINT       NOT NULL,
    group_id         BIGINT       NOT NULL,
    fire_key         BIGINT       NULL,
    scheduled_at     BIGINT       NOT NULL,
    trigger_type     VARCHAR(16)  NOT NULL,
    triggered_at     BIGINT       NOT NULL DEFAULT 0,
    executor_address VARCHAR(255) NOT NULL DEFAULT '',
    handler          VARCHAR(255) NOT NULL DEFAULT '',
    param            TEXT         NOT NULL DEFAULT '',
    shard_index      BIGINT       NOT NULL DEFAULT 0,
    shard_total      BIGINT       NOT NULL DEFAULT 1,
    retry_count      BIGINT       NOT NULL DEFAULT 0,
    lineage          VARCHAR(255) NOT NULL DEFAULT '',
    trigger_code     BIGINT       NOT NULL DEFAULT 0,
    trigger_msg      TEXT         NOT NULL DEFAULT '',
    handled_at       BIGINT       NOT NULL DEFAULT 0,
    handle_code      BIGINT       NOT NULL DEFAULT 0,
    handle_msg       TEXT         NOT NULL DEFAULT '',
    alarm_status     BIGINT       NOT NULL DEFAULT 0,
    created_at       BIGINT       NOT NULL
);
CREATE UNIQUE INDEX run_fire ON run (job_id, fire_key);
CREATE INDEX run_job ON run (job_id, id);
CREATE INDEX run_group ON run (group_id, id);
CREATE INDEX run_state ON run (trigger_code, handle_code);

CREATE TABLE registry (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    app_name   VARCHAR(64)  NOT NULL,
    address    VARCHAR(255) NOT NULL,
    updated_at BIGINT       NOT NULL,
    UNIQUE (app_name, address)
);

CREATE TABLE app_user (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    username      VARCHAR(64)  NOT NULL UNIQUE,
    password_hash VARCHAR(255) NOT NULL,
    role          VARCHAR(16)  NOT NULL,
    created_at    BIGINT       NOT NULL
);

CREATE TABLE partition_lease (
    partition_no BIGINT PRIMARY KEY,
    owner        VARCHAR(128) NOT NULL DEFAULT '',
    expires_at   BIGINT       NOT NULL DEFAULT 0
);
INSERT INTO partition_lease (partition_no) VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9),(10),(11),(12),(13),(14),(15);
