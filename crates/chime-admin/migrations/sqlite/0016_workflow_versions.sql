-- A workflow's graph as it was when an instance was fired, kept once per version instead of in
-- every instance row. Instances of one version share its row (`version_id`), so an instance row
-- is a few integers and short strings: the workflow loop raises its `revision` at every step,
-- and a row that carried its graph (hundreds of bytes to many kilobytes) was written whole each
-- time. A workflow points at its current version; saving a changed graph adds a version.
-- Existing instances each get a version of their own, numbered as the instance.
-- Keep in step with the other dialects.

CREATE TABLE workflow_version (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow_id BIGINT NOT NULL,
    definition  TEXT   NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX workflow_version_of ON workflow_version (workflow_id);

INSERT INTO workflow_version (id, workflow_id, definition, created_at)
    SELECT id, workflow_id, definition, created_at FROM workflow_instance;
ALTER TABLE workflow_instance ADD COLUMN version_id BIGINT NOT NULL DEFAULT 0;
UPDATE workflow_instance SET version_id = id;
ALTER TABLE workflow_instance DROP COLUMN definition;

ALTER TABLE workflow ADD COLUMN version_id BIGINT NOT NULL DEFAULT 0;
INSERT INTO workflow_version (workflow_id, definition, created_at)
    SELECT id, definition, updated_at FROM workflow;
UPDATE workflow SET version_id = (SELECT MAX(v.id) FROM workflow_version v WHERE v.workflow_id = workflow.id);
