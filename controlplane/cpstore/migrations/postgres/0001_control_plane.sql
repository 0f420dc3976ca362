-- The control plane's tables (DESIGN section 9, seed 003), in their own
-- migration chain. Every name starts with cp_ so that nothing clashes with
-- the queue's tables. Ids are text (the service makes them); JSON is jsonb.

-- Agent sessions.
CREATE TABLE cp_sessions (
    id           text PRIMARY KEY,
    identity     text NOT NULL,
    name         text NOT NULL DEFAULT '',
    role         text NOT NULL CHECK (role IN ('author', 'reviewer', 'merger')),
    capabilities jsonb,
    created_at   timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL,
    ended_at     timestamptz
);

-- ListSessions: newest first, of all or of one identity.
CREATE INDEX cp_sessions_created ON cp_sessions (created_at, id);
CREATE INDEX cp_sessions_identity ON cp_sessions (identity, created_at, id);

-- The work inventory: issues and pull requests only (hard rule 1).
CREATE TABLE cp_work (
    id             text PRIMARY KEY,
    forge          text NOT NULL,
    repo           text NOT NULL,
    kind           text NOT NULL CHECK (kind IN ('issue', 'pr')),
    number         bigint NOT NULL,
    state          text NOT NULL CHECK (state IN ('open', 'merged', 'closed')),
    title          text NOT NULL DEFAULT '',
    labels         jsonb NOT NULL DEFAULT '[]',
    author         text NOT NULL DEFAULT '',
    head_sha       text NOT NULL DEFAULT '',
    review_state   text NOT NULL DEFAULT '',
    mergeable      boolean NOT NULL DEFAULT false,
    linked_issues  jsonb NOT NULL DEFAULT '[]',
    author_session text NOT NULL DEFAULT '',
    updated_at     timestamptz NOT NULL,
    synced_at      timestamptz NOT NULL
);

-- One row per issue or pull request: UpsertWork's conflict target.
CREATE UNIQUE INDEX cp_work_key ON cp_work (forge, repo, kind, number);
-- Candidates (the open work) and ListWork by state, in key order.
CREATE INDEX cp_work_state ON cp_work (state, forge, repo, kind, number);

-- What a session was given to do with one work item.
CREATE TABLE cp_assignments (
    id                text PRIMARY KEY,
    session_id        text NOT NULL REFERENCES cp_sessions (id),
    work_id           text NOT NULL REFERENCES cp_work (id),
    lease_id          text NOT NULL,
    allowed_actions   jsonb NOT NULL DEFAULT '[]',
    expected_head_sha text NOT NULL DEFAULT '',
    terminal          boolean NOT NULL DEFAULT false,
    created_at        timestamptz NOT NULL
);

-- A session's exclusive hold on one work item, and its history.
CREATE TABLE cp_leases (
    id                      text PRIMARY KEY,
    work_id                 text NOT NULL REFERENCES cp_work (id),
    session_id              text NOT NULL REFERENCES cp_sessions (id),
    assignment_id           text NOT NULL REFERENCES cp_assignments (id),
    state                   text NOT NULL CHECK (state IN ('active', 'released', 'expired', 'abandoned', 'reclaimed')),
    created_at              timestamptz NOT NULL,
    heartbeat_at            timestamptz NOT NULL,
    expires_at              timestamptz NOT NULL,
    ended_at                timestamptz,
    worktree_path           text NOT NULL DEFAULT '',
    head_sha                text NOT NULL DEFAULT '',
    adopted_from_session_id text NOT NULL DEFAULT '',
    adopted_by_session_id   text NOT NULL DEFAULT ''
);

-- Hard rule 2, last guard: at most one active lease per work item, however
-- the writes interleave (two serve processes on one database). Also the
-- lookup of a work item's active lease.
CREATE UNIQUE INDEX cp_leases_one_active ON cp_leases (work_id) WHERE state = 'active';
-- ListLeases of a work item or a session, newest first.
CREATE INDEX cp_leases_work ON cp_leases (work_id, created_at);
CREATE INDEX cp_leases_session ON cp_leases (session_id, created_at);
-- ExpireLeases: the active leases by expiry.
CREATE INDEX cp_leases_expiry ON cp_leases (expires_at) WHERE state = 'active';

-- A session on the terminal path (merging) holds its work's terminal lock
-- for as long as its lease is active: one per work item.
CREATE TABLE cp_terminal_locks (
    work_id    text PRIMARY KEY REFERENCES cp_work (id),
    session_id text NOT NULL REFERENCES cp_sessions (id),
    lease_id   text NOT NULL UNIQUE REFERENCES cp_leases (id),
    created_at timestamptz NOT NULL
);

-- The append-only log: who did what and why. Ids it names may not be rows
-- (a refusal names what was asked for), so they are not foreign keys.
CREATE TABLE cp_events (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    time          timestamptz NOT NULL,
    type          text NOT NULL,
    actor         text NOT NULL,
    session_id    text NOT NULL DEFAULT '',
    work_id       text NOT NULL DEFAULT '',
    lease_id      text NOT NULL DEFAULT '',
    assignment_id text NOT NULL DEFAULT '',
    reason        text NOT NULL DEFAULT '',
    detail        jsonb
);

-- ListEvents of a session, a work item or a lease, newest first.
CREATE INDEX cp_events_session ON cp_events (session_id, id);
CREATE INDEX cp_events_work ON cp_events (work_id, id);
CREATE INDEX cp_events_lease ON cp_events (lease_id, id);
