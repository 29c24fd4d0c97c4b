-- Where a user comes from: `local` (a password kept here) or the directory that let them in
-- (`ldap`), whose users have no password here (password_hash `!`, which no password matches)
-- and whose role and roles per group are set again from their groups at each login. Keep in
-- step with the other dialects.

ALTER TABLE app_user ADD COLUMN source VARCHAR(64) NOT NULL DEFAULT 'local';
