-- Console access control: per-user permissions, login sessions, audit log.
-- Keep in step with ../mysql and ../postgres.

ALTER TABLE app_user ADD COLUMN can_write BIGINT NOT NULL DEFAULT 1;
ALTER TABLE app_user ADD COLUMN group_ids VARCHAR(1024) NOT NULL DEFAULT '';

-- Only a SHA-256 of the session token is stored: a leaked table does not log anyone in.
CREATE TABLE console_session (
    token_hash VARCHAR(64) PRIMARY KEY,
    user_id    BIGINT      NOT NULL,
    csrf_token VARCHAR(64) NOT NULL,
    created_at BIGINT      NOT NULL,
    expires_at BIGINT      NOT NULL
);
CREATE INDEX console_session_user ON console_session (user_id);

CREATE TABLE audit_log (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    at       BIGINT       NOT NULL,
    username VARCHAR(64)  NOT NULL,
    action   VARCHAR(64)  NOT NULL,
    target   VARCHAR(255) NOT NULL DEFAULT '',
    detail   TEXT         NOT NULL
);
CREATE INDEX audit_log_at ON audit_log (at);
