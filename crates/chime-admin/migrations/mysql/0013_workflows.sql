-- Workflows: a DAG of nodes, each running a job, fired on the jobs' schedule engine.
-- * workflow: the definition (its graph as JSON in `definition`) and its schedule, claimed in
--   partition `id % 16` like a job's.
-- * workflow_instance: one fire. `(workflow_id, fire_key)` is unique, as for a job's runs, so a
--   scheduled fire makes one instance at most; `definition` is the graph as it was then.
-- * workflow_node_run: a node of an instance that started, or that will never run. One row per
--   node and instance at most (unique), written in the transaction that creates its run, so a
--   node runs once. `run_id` is its latest run (a retry replaces it).
-- Keep in step with the other dialects.

CREATE TABLE workflow (
    id               BIGINT PRIMARY KEY AUTO_INCREMENT,
    name             VARCHAR(128) NOT NULL UNIQUE,
    description      VARCHAR(255) NOT NULL DEFAULT '',
    partition_no     BIGINT       NOT NULL DEFAULT 0,
    schedule_type    VARCHAR(16)  NOT NULL,
    schedule_expr    VARCHAR(128) NOT NULL DEFAULT '',
    time_zone        VARCHAR(64)  NOT NULL,
    misfire_strategy VARCHAR(16)  NOT NULL,
    max_instances    BIGINT       NOT NULL DEFAULT 0,
    on_limit         VARCHAR(8)   NOT NULL DEFAULT 'skip',
    definition       MEDIUMTEXT       NOT NULL,
    running          BIGINT       NOT NULL DEFAULT 0,
    anchor_at        BIGINT       NOT NULL DEFAULT 0,
    next_fire_at     BIGINT       NOT NULL DEFAULT 0,
    last_fire_at     BIGINT       NOT NULL DEFAULT 0,
    created_at       BIGINT       NOT NULL,
    updated_at       BIGINT       NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE INDEX workflow_due ON workflow (running, next_fire_at);

CREATE TABLE workflow_instance (
    id           BIGINT PRIMARY KEY AUTO_INCREMENT,
    workflow_id  BIGINT       NOT NULL,
    fire_key     BIGINT       NULL,
    scheduled_at BIGINT       NOT NULL,
    trigger_type VARCHAR(16)  NOT NULL,
    state        VARCHAR(16)  NOT NULL,
    definition   MEDIUMTEXT       NOT NULL,
    stopped_by   VARCHAR(128) NOT NULL DEFAULT '',
    created_at   BIGINT       NOT NULL,
    finished_at  BIGINT       NOT NULL DEFAULT 0
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE UNIQUE INDEX workflow_instance_fire ON workflow_instance (workflow_id, fire_key);
CREATE INDEX workflow_instance_state ON workflow_instance (state, workflow_id);

CREATE TABLE workflow_node_run (
    id          BIGINT PRIMARY KEY AUTO_INCREMENT,
    instance_id BIGINT       NOT NULL,
    node        VARCHAR(64)  NOT NULL,
    state       VARCHAR(16)  NOT NULL,
    run_id      BIGINT       NOT NULL DEFAULT 0,
    result      MEDIUMTEXT       NOT NULL,
    started_at  BIGINT       NOT NULL,
    finished_at BIGINT       NOT NULL DEFAULT 0
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE UNIQUE INDEX workflow_node_once ON workflow_node_run (instance_id, node);
CREATE INDEX workflow_node_state ON workflow_node_run (state, instance_id);
