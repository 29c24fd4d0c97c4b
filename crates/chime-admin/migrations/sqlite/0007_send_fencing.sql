-- Fencing of sends between admins sharing a database. Each change of a partition lease's
-- holder (or a lapse) raises its epoch; an admin marks a run with the epoch it holds just
-- before sending it, guarded by the lease, so an admin that lost the lease (frozen, cut off)
-- is refused by the database. A run marked but without a trigger result was possibly sent:
-- a new holder does not send it again (see docs/admin.md, "Several admins").
-- Keep in step with ../mysql and ../postgres.

ALTER TABLE partition_lease ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0;
ALTER TABLE run ADD COLUMN send_token BIGINT NOT NULL DEFAULT 0;
