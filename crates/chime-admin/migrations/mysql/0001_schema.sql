-- Chime scheduling center schema (MySQL / MariaDB 10.5+). Times are epoch milliseconds (UTC) in BIGINT columns.
-- Keep in step with ../mysql and ../postgres: one logical schema, three dialects.

CREATE TABLE executor_group (
    id            BIGINT PRIMARY KEY AUTO_INCREMENT,
    app_name      VARCHAR(64)  NOT NULL UNIQUE,
    title         VARCHAR(128) NOT NULL,
    address_type  BIGINT       NOT NULL DEFAULT 0,
    address_list  MEDIUMTEXT         NOT NULL,
    protocol      VARCHAR(8)   NOT NULL DEFAULT 'G2',
    created_at    BIGINT       NOT NULL,
    updated_at    BIGINT       NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE job (
    id               BIGINT PRIMARY KEY AUTO_INCREMENT,
    group_id         BIGINT       NOT NULL,
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
    param            MEDIUMTEXT         NOT NULL,
    block_strategy   VARCHAR(32)  NOT NULL,
    timeout_secs     BIGINT       NOT NULL DEFAULT 0,
    retry_count      BIGINT       NOT NULL DEFAULT 0,
    child_job_ids    VARCHAR(255) NOT NULL DEFAULT '',
    glue_type        VARCHAR(32)  NOT NULL,
    glue_source      MEDIUMTEXT         NOT NULL,
    glue_updated_at  BIGINT       NOT NULL,
    running          BIGINT       NOT NULL DEFAULT 0,
    anchor_at        BIGINT       NOT NULL DEFAULT 0,
    next_fire_at     BIGINT       NOT NULL DEFAULT 0,
    last_fire_at     BIGINT       NOT NULL DEFAULT 0,
    created_at       BIGINT       NOT NULL,
    updated_at       BIGINT       NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE INDEX job_due ON job (running, next_fire_at);
CREATE INDEX job_group ON job (group_id);

CREATE TABLE glue_version (
    id          BIGINT PRIMARY KEY AUTO_INCREMENT,
    job_id      BIGINT      NOT NULL,
    glue_type   VARCHAR(32) NOT NULL,
    glue_source MEDIUMTEXT  NOT NULL,
    author      VARCHAR(64) NOT NULL DEFAULT '',
    created_at  BIGINT      NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE INDEX glue_version_job ON glue_version (job_id, id);

CREATE TABLE run (
    id               BIGINT PRIMARY KEY AUTO_INCREMENT,
    job_id           BIGINT       NOT NULL,
    group_id         BIGINT       NOT NULL,
    fire_key         BIGINT       NULL,
    scheduled_at     BIGINT       NOT NULL,
    trigger_type     VARCHAR(16)  NOT NULL,
    triggered_at     BIGINT       NOT NULL DEFAULT 0,
    executor_address VARCHAR(255) NOT NULL DEFAULT '',
    handler          VARCHAR(255) NOT NULL DEFAULT '',
    param            MEDIUMTEXT         NOT NULL,
    shard_index      BIGINT       NOT NULL DEFAULT 0,
    shard_total      BIGINT       NOT NULL DEFAULT 1,
    retry_count      BIGINT       NOT NULL DEFAULT 0,
    lineage          VARCHAR(255) NOT NULL DEFAULT '',
    trigger_code     BIGINT       NOT NULL DEFAULT 0,
    trigger_msg      MEDIUMTEXT         NOT NULL,
    handled_at       BIGINT       NOT NULL DEFAULT 0,
    handle_code      BIGINT       NOT NULL DEFAULT 0,
    handle_msg       MEDIUMTEXT         NOT NULL,
    alarm_status     BIGINT       NOT NULL DEFAULT 0,
    created_at       BIGINT       NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE UNIQUE INDEX run_fire ON run (job_id, fire_key);
CREATE INDEX run_job ON run (job_id, id);
CREATE INDEX run_group ON run (group_id, id);
CREATE INDEX run_state ON run (trigger_code, handle_code);

CREATE TABLE registry (
    id         BIGINT PRIMARY KEY AUTO_INCREMENT,
    app_name   VARCHAR(64)  NOT NULL,
    address    VARCHAR(255) NOT NULL,
    updated_at BIGINT       NOT NULL,
    UNIQUE (app_name, address)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE app_user (
    id            BIGINT PRIMARY KEY AUTO_INCREMENT,
    username      VARCHAR(64)  NOT NULL UNIQUE,
    password_hash VARCHAR(255) NOT NULL,
    role          VARCHAR(16)  NOT NULL,
    created_at    BIGINT       NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE partition_lease (
    partition_no BIGINT PRIMARY KEY,
    owner        VARCHAR(128) NOT NULL DEFAULT '',
    expires_at   BIGINT       NOT NULL DEFAULT 0
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO partition_lease (partition_no) VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9),(10),(11),(12),(13),(14),(15);
