-- Dashboard logins ended before their cookie expired (issue 49): a
-- logout on one instance is refused on every instance at once. A row is
-- kept until its cookie's expiry (expires_at), after which the cookie is
-- refused anyway; RevokeSession deletes the expired ones.
CREATE TABLE session_revocations (
    login_id   text NOT NULL PRIMARY KEY,
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz NOT NULL
);
CREATE INDEX session_revocations_expiry ON session_revocations (expires_at);
