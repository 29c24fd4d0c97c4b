-- Secrets every admin of one database shares, made at the first start and kept:
-- * admin_secret 'executor_access_token': the executor protocol's token when no
--   --access-token is given. An admin always has one: without it, anyone who reached the admin
--   could register as an executor, link, and have calls relayed to linked executors.
-- * admin_secret 'cluster_secret': proves that a relayed call (POST /api/linkRelay) comes from
--   another admin of this database, not from whoever holds an executor's token.
-- * executor_group.insecure_no_token: 1 = the group's executors call without any token and are
--   called without one (XXL-JOB's "no token" setup, kept for legacy executors only when an
--   operator asks for it); such a group may not link, and nothing is relayed to it.
-- Keep in step with ../sqlite and ../postgres.

CREATE TABLE admin_secret (
    name       VARCHAR(64) NOT NULL PRIMARY KEY,
    value      VARCHAR(255) NOT NULL,
    created_at BIGINT       NOT NULL
);

ALTER TABLE executor_group ADD COLUMN insecure_no_token BIGINT NOT NULL DEFAULT 0;
