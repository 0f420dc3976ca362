-- The control plane's tables (DESIGN section 9, seed 003), in their own
-- migration chain. Every name starts with cp_ so that nothing clashes with
-- the queue's tables. Ids are text; times are fixed-width UTC text with
-- microseconds, which compare as strings; JSON is text.

-- Agent sessions.
CREATE TABLE cp_sessions (
    id           TEXT PRIMARY KEY,
    identity     TEXT NOT NULL,
    name         TEXT NOT NULL DEFAULT '',
    role         TEXT NOT NULL CHECK (role IN ('author', 'reviewer', 'merger')),
    capabilities TEXT,
    created_at   TEXT NOT NULL,
    heartbeat_at TEXT NOT NULL,
    ended_at     TEXT
) STRICT;

-- ListSessions: newest first, of all or of one identity.
CREATE INDEX cp_sessions_created ON cp_sessions (created_at, id);
CREATE INDEX cp_sessions_identity ON cp_sessions (identity, created_at, id);

-- The work inventory: issues and pull requests only (hard rule 1).
CREATE TABLE cp_work (
    id             TEXT PRIMARY KEY,
    forge          TEXT NOT NULL,
    repo           TEXT NOT NULL,
    kind           TEXT NOT NULL CHECK (kind IN ('issue', 'pr')),
    number         INTEGER NOT NULL,
    state          TEXT NOT NULL CHECK (state IN ('open', 'merged', 'closed')),
    title          TEXT NOT NULL DEFAULT '',
    labels         TEXT NOT NULL DEFAULT '[]',
    author         TEXT NOT NULL DEFAULT '',
    head_sha       TEXT NOT NULL DEFAULT '',
    review_state   TEXT NOT NULL DEFAULT '',
    mergeable      INTEGER NOT NULL DEFAULT 0 CHECK (mergeable IN (0, 1)),
    linked_issues  TEXT NOT NULL DEFAULT '[]',
    author_session TEXT NOT NULL DEFAULT '',
    updated_at     TEXT NOT NULL,
    synced_at      TEXT NOT NULL
) STRICT;

-- One row per issue or pull request: UpsertWork's conflict target.
CREATE UNIQUE INDEX cp_work_key ON cp_work (forge, repo, kind, number);
-- Candidates (the open work) and ListWork by state, in key order.
CREATE INDEX cp_work_state ON cp_work (state, forge, repo, kind, number);

-- What a session was given to do with one work item.
CREATE TABLE cp_assignments (
    id                TEXT PRIMARY KEY,
    session_id        TEXT NOT NULL REFERENCES cp_sessions (id),
    work_id           TEXT NOT NULL REFERENCES cp_work (id),
    lease_id          TEXT NOT NULL,
    allowed_actions   TEXT NOT NULL DEFAULT '[]',
    expected_head_sha TEXT NOT NULL DEFAULT '',
    terminal          INTEGER NOT NULL DEFAULT 0 CHECK (terminal IN (0, 1)),
    created_at        TEXT NOT NULL
) STRICT;

-- A session's exclusive hold on one work item, and its history.
CREATE TABLE cp_leases (
    id                      TEXT PRIMARY KEY,
    work_id                 TEXT NOT NULL REFERENCES cp_work (id),
    session_id              TEXT NOT NULL REFERENCES cp_sessions (id),
    assignment_id           TEXT NOT NULL REFERENCES cp_assignments (id),
    state                   TEXT NOT NULL CHECK (state IN ('active', 'released', 'expired', 'abandoned', 'reclaimed')),
    created_at              TEXT NOT NULL,
    heartbeat_at            TEXT NOT NULL,
    expires_at              TEXT NOT NULL,
    ended_at                TEXT,
    worktree_path           TEXT NOT NULL DEFAULT '',
    head_sha                TEXT NOT NULL DEFAULT '',
    adopted_from_session_id TEXT NOT NULL DEFAULT '',
    adopted_by_session_id   TEXT NOT NULL DEFAULT ''
) STRICT;

-- Hard rule 2, last guard: at most one active lease per work item, however
-- the writes interleave. Also the lookup of a work item's active lease.
CREATE UNIQUE INDEX cp_leases_one_active ON cp_leases (work_id) WHERE state = 'active';
-- ListLeases of a work item or a session, newest first.
CREATE INDEX cp_leases_work ON cp_leases (work_id, created_at);
CREATE INDEX cp_leases_session ON cp_leases (session_id, created_at);
-- ExpireLeases: the active leases by expiry.
CREATE INDEX cp_leases_expiry ON cp_leases (expires_at) WHERE state = 'active';

-- A session on the terminal path (merging) holds its work's terminal lock
-- for as long as its lease is active: one per work item.
CREATE TABLE cp_terminal_locks (
    work_id    TEXT PRIMARY KEY REFERENCES cp_work (id),
    session_id TEXT NOT NULL REFERENCES cp_sessions (id),
    lease_id   TEXT NOT NULL UNIQUE REFERENCES cp_leases (id),
    created_at TEXT NOT NULL
) STRICT;

-- The append-only log: who did what and why. Ids it names may not be rows
-- (a refusal names what was asked for), so they are not foreign keys.
CREATE TABLE cp_events (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    time          TEXT NOT NULL,
    type          TEXT NOT NULL,
    actor         TEXT NOT NULL,
    session_id    TEXT NOT NULL DEFAULT '',
    work_id       TEXT NOT NULL DEFAULT '',
    lease_id      TEXT NOT NULL DEFAULT '',
    assignment_id TEXT NOT NULL DEFAULT '',
    reason        TEXT NOT NULL DEFAULT '',
    detail        TEXT
) STRICT;

-- ListEvents of a session, a work item or a lease, newest first.
CREATE INDEX cp_events_session ON cp_events (session_id, id);
CREATE INDEX cp_events_work ON cp_events (work_id, id);
CREATE INDEX cp_events_lease ON cp_events (lease_id, id);
