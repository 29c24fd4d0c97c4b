-- OpenID Connect logins under way: one row from the moment the browser is sent to the provider
-- until it comes back (or the row expires, after 10 minutes). state_hash is a SHA-256 of the
-- `state` sent to the provider, browser_hash one of the random value kept in the browser's
-- login cookie: the way back is accepted only from the browser that left, once (the row is
-- deleted as it is read, so a replayed answer finds nothing). nonce and pkce_verifier are
-- what the ID token and the code exchange are checked with. Keep in step with the other
-- dialects.

CREATE TABLE login_state (
    state_hash    VARCHAR(64)  NOT NULL PRIMARY KEY,
    provider      VARCHAR(64)  NOT NULL,
    browser_hash  VARCHAR(64)  NOT NULL,
    nonce         VARCHAR(128) NOT NULL,
    pkce_verifier VARCHAR(128) NOT NULL,
    expires_at    BIGINT       NOT NULL
);
CREATE INDEX login_state_expires ON login_state (expires_at);
