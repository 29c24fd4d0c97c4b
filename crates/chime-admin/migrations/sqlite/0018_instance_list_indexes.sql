-- Instance lists (the console's instances of a workflow, `GET /v1/workflow-instances`) show
-- the newest first, a page at a time. With only `(workflow_id, fire_key)` and
-- `(state, workflow_id)` to go by, a list of one workflow's instances, or of one state's
-- across workflows, found all of them and sorted them for each page: 0.24 s for a page of a
-- workflow with 900,000 instances kept, growing with history. These indexes hold each list in
-- id order, so a page reads its own rows. A list of one state of one workflow already walks
-- `workflow_instance_state`, which ends in the row id.
-- Keep in step with the other dialects.

CREATE INDEX workflow_instance_list ON workflow_instance (workflow_id, id);
CREATE INDEX workflow_instance_state_list ON workflow_instance (state, id);
