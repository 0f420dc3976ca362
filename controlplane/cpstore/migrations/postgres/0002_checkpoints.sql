-- Session checkpoints (#660): one current-state row per session and work
-- unit, upserted, redacted before it gets here. A session-level row has
-- work_kind '' and work_number 0, so the key never holds a NULL.
CREATE TABLE cp_checkpoints (
    forge                     text NOT NULL,
    repo                      text NOT NULL,
    session_id                text NOT NULL REFERENCES cp_sessions (id),
    work_kind                 text NOT NULL DEFAULT '' CHECK (work_kind IN ('', 'issue', 'pr')),
    work_number               bigint NOT NULL DEFAULT 0 CHECK (work_number >= 0),
    checkpoint_schema_version integer NOT NULL,
    provider_identity         text NOT NULL DEFAULT '',
    role                      text NOT NULL DEFAULT '',
    worktree_path             text NOT NULL DEFAULT '',
    branch                    text NOT NULL DEFAULT '',
    head_sha                  text NOT NULL DEFAULT '',
    capabilities              jsonb,
    lease_id                  text NOT NULL DEFAULT '',
    assignment_id             text NOT NULL DEFAULT '',
    workflow_stage            text NOT NULL DEFAULT '',
    last_completed_action     text NOT NULL DEFAULT '',
    current_operation         text NOT NULL DEFAULT '',
    pending_mutation          jsonb,
    evidence                  jsonb,
    blocker                   text NOT NULL DEFAULT '',
    next_valid_action         text NOT NULL DEFAULT '',
    recovery_instructions     text NOT NULL DEFAULT '',
    status                    text NOT NULL DEFAULT '',
    created_at                timestamptz NOT NULL,
    updated_at                timestamptz NOT NULL,
    PRIMARY KEY (forge, repo, session_id, work_kind, work_number)
);

-- ListCheckpoints of a session, and of a work unit.
CREATE INDEX cp_checkpoints_session ON cp_checkpoints (session_id, updated_at);
CREATE INDEX cp_checkpoints_work ON cp_checkpoints (forge, repo, work_kind, work_number);
