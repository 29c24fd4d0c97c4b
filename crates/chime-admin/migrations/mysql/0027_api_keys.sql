-- API keys: bearer tokens a user makes for themselves or for a service, limited to a role
-- (viewer, editor, admin) and, below admin, to some executor groups, with an expiry. Only a
-- SHA-256 of the token is kept (token_hash; the token has 256 random bits, so a fast hash is
-- enough and the lookup is one index probe); prefix is its first characters, shown in lists so
-- a key can be recognised. owner_id is the user who made it (0: made with the bootstrap API
-- token); a key of a user never has more rights than the user has now. Revoked keys keep their
-- row (revoked_at > 0) so the audit log's names stay explained. Keep in step with the other
-- dialects.

CREATE TABLE api_key (
    id           BIGINT PRIMARY KEY AUTO_INCREMENT,
    name         VARCHAR(64)   NOT NULL,
    prefix       VARCHAR(16)   NOT NULL,
    token_hash   VARCHAR(64)   NOT NULL,
    owner_id     BIGINT        NOT NULL DEFAULT 0,
    role         VARCHAR(16)   NOT NULL,
    group_ids    VARCHAR(1024) NOT NULL DEFAULT '',
    created_by   VARCHAR(64)   NOT NULL DEFAULT '',
    created_at   BIGINT        NOT NULL,
    expires_at   BIGINT        NOT NULL,
    revoked_at   BIGINT        NOT NULL DEFAULT 0,
    last_used_at BIGINT        NOT NULL DEFAULT 0,
    UNIQUE INDEX api_key_token (token_hash),
    UNIQUE INDEX api_key_name (name),
    INDEX api_key_owner (owner_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
