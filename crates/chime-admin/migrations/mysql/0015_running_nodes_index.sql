-- SQLite and PostgreSQL index only the nodes still running (a partial index), where the index
-- over every node's state moved an entry for each node that finished. MySQL/MariaDB have no
-- partial indexes: `workflow_node_state (state, instance_id)` stays, and this step changes
-- nothing here, so the dialects' migrations keep the same numbers.
-- Keep in step with the other dialects.

DO 0;
