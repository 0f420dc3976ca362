-- Session checkpoints (#660): one current-state row per session and work
-- unit, upserted, redacted before it gets here. A session-level row has
-- work_kind '' and work_number 0, so the key never holds a NULL.
CREATE TABLE cp_checkpoints (
    forge                     TEXT NOT NULL,
    repo                      TEXT NOT NULL,
    session_id                TEXT NOT NULL REFERENCES cp_sessions (id),
    work_kind                 TEXT NOT NULL DEFAULT '' CHECK (work_kind IN ('', 'issue', 'pr')),
    work_number               INTEGER NOT NULL DEFAULT 0 CHECK (work_number >= 0),
    checkpoint_schema_version INTEGER NOT NULL,
    provider_identity         TEXT NOT NULL DEFAULT '',
    role                      TEXT NOT NULL DEFAULT '',
    worktree_path             TEXT NOT NULL DEFAULT '',
    branch                    TEXT NOT NULL DEFAULT '',
    head_sha                  TEXT NOT NULL DEFAULT '',
    capabilities              TEXT,
    lease_id                  TEXT NOT NULL DEFAULT '',
    assignment_id             TEXT NOT NULL DEFAULT '',
    workflow_stage            TEXT NOT NULL DEFAULT '',
    last_completed_action     TEXT NOT NULL DEFAULT '',
    current_operation         TEXT NOT NULL DEFAULT '',
    pending_mutation          TEXT,
    evidence                  TEXT,
    blocker                   TEXT NOT NULL DEFAULT '',
    next_valid_action         TEXT NOT NULL DEFAULT '',
    recovery_instructions     TEXT NOT NULL DEFAULT '',
    status                    TEXT NOT NULL DEFAULT '',
    created_at                TEXT NOT NULL,
    updated_at                TEXT NOT NULL,
    PRIMARY KEY (forge, repo, session_id, work_kind, work_number)
) STRICT;

-- ListCheckpoints of a session, and of a work unit.
CREATE INDEX cp_checkpoints_session ON cp_checkpoints (session_id, updated_at);
CREATE INDEX cp_checkpoints_work ON cp_checkpoints (forge, repo, work_kind, work_number);
