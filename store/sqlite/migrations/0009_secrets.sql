-- Secrets the service makes for itself and every instance on the database
-- shares (issue 25: the dashboard's cookie key when none is configured).
-- A row is written once and never changed: GetOrCreateSecret inserts if
-- missing, then reads what is there.
CREATE TABLE service_secrets (
    name       TEXT NOT NULL PRIMARY KEY,
    value      BLOB NOT NULL,
    created_at TEXT NOT NULL
) STRICT;
