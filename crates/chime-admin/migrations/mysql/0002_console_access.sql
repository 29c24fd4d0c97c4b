-- Console access control: per-user permissions, login sessions, audit log.
-- Keep in step with ../sqlite and ../postgres.

ALTER TABLE app_user ADD COLUMN can_write BIGINT NOT NULL DEFAULT 1;
ALTER TABLE app_user ADD COLUMN group_ids VARCHAR(1024) NOT NULL DEFAULT '';

-- Only a SHA-256 of the session token is stored: a leaked table does not log anyone in.
CREATE TABLE console_session (
    token_hash VARCHAR(64) PRIMARY KEY,
    user_id    BIGINT      NOT NULL,
    csrf_token VARCHAR(64) NOT NULL,
    created_at BIGINT      NOT NULL,
    expires_at BIGINT      NOT NULL,
    INDEX console_session_user (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE audit_log (
    id       BIGINT PRIMARY KEY AUTO_INCREMENT,
    at       BIGINT       NOT NULL,
    username VARCHAR(64)  NOT NULL,
    action   VARCHAR(64)  NOT NULL,
    target   VARCHAR(255) NOT NULL DEFAULT '',
    detail   TEXT         NOT NULL,
    INDEX audit_log_at (at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
