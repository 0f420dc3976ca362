-- The mr item type's detail table (DESIGN section 6, DDR-7), in the type's own
-- migration chain. Databases made before the chains were split already
-- have it, made by the queue's old versions 2, 4 and 5: IF NOT EXISTS keeps
-- them as they are.
CREATE TABLE IF NOT EXISTS mr_details (
    work_item_id     TEXT PRIMARY KEY REFERENCES work_items (id) ON DELETE CASCADE,
    forge            TEXT NOT NULL,
    project          TEXT NOT NULL,
    source_branch    TEXT NOT NULL,
    target_branch    TEXT NOT NULL,
    title            TEXT NOT NULL,
    description      TEXT NOT NULL DEFAULT '',
    commit_message   TEXT NOT NULL,
    labels           TEXT NOT NULL DEFAULT '[]',
    file_actions     TEXT NOT NULL,
    auto_merge       INTEGER NOT NULL DEFAULT 0 CHECK (auto_merge IN (0, 1)),
    mr_iid           INTEGER,
    mr_url           TEXT NOT NULL DEFAULT '',
    head_sha         TEXT NOT NULL DEFAULT '',
    pushed_hash      TEXT NOT NULL DEFAULT '',
    head_pipeline_id INTEGER,
    note_id          INTEGER,
    -- The content hash ensure_mr is about to push, recorded before the push:
    -- after a crash between the push and its recording, a branch head the
    -- service has not recorded is known to be its own push.
    pushing_hash     TEXT NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX IF NOT EXISTS mr_details_branch ON mr_details (forge, project, source_branch);
CREATE INDEX IF NOT EXISTS mr_details_number ON mr_details (forge, project, mr_iid) WHERE mr_iid IS NOT NULL;
CREATE INDEX IF NOT EXISTS mr_details_pipeline ON mr_details (forge, head_pipeline_id) WHERE head_pipeline_id IS NOT NULL;
-- Webhook resolver for commit-status events, which name only a commit
-- (DDR-32): the head the service pushed.
CREATE INDEX IF NOT EXISTS mr_details_head ON mr_details (forge, project, head_sha) WHERE head_sha <> '';

-- Items carry the forge and project they act on (the queue's version 6);
-- fill them in for mr items made before.
UPDATE work_items SET forge = m.forge, project = m.project FROM mr_details m
    WHERE m.work_item_id = work_items.id AND work_items.project = '';
