-- The nodes still running, indexed alone: the workflow loop looks for running nodes whose run
-- has finished, and nothing looks finished nodes up by state. The index over every node's
-- state moved an entry for each node that finished (and held one for every node ever run);
-- a partial index only drops it. MySQL/MariaDB have no partial indexes and keep the full one.
-- Keep in step with the other dialects.

DROP INDEX workflow_node_state;
CREATE INDEX workflow_node_running ON workflow_node_run (instance_id) WHERE state = 'running';
