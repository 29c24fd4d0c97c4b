-- workflow_instance.revision: raised by every change to an instance's nodes or state (a step
-- on any admin, an operator's stop, retry, skip or mark succeeded). The workflow loop keeps
-- running instances in memory between its steps and uses what it kept only while the row's
-- revision is the one it kept, so a change made elsewhere is read again, never missed.
-- Keep in step with the other dialects.

ALTER TABLE workflow_instance ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;
