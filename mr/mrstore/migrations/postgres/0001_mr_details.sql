-- The mr item type's detail table (DESIGN section 6, DDR-7), in the type's own
-- migration chain. Databases made before the chains were split already
-- have it, made by the queue's old versions 2, 4 and 5: IF NOT EXISTS keeps
-- them as they are.
CREATE TABLE IF NOT EXISTS mr_details (
    work_item_id     uuid PRIMARY KEY REFERENCES work_items (id) ON DELETE CASCADE,
    forge            text NOT NULL,
    project          text NOT NULL,
    source_branch    text NOT NULL,
    target_branch    text NOT NULL,
    title            text NOT NULL,
    description      text NOT NULL DEFAULT '',
    commit_message   text NOT NULL,
    labels           jsonb NOT NULL DEFAULT '[]',
    file_actions     jsonb NOT NULL,
    auto_merge       boolean NOT NULL DEFAULT false,
    mr_iid           bigint,
    mr_url           text NOT NULL DEFAULT '',
    head_sha         text NOT NULL DEFAULT '',
    pushed_hash      text NOT NULL DEFAULT '',
    head_pipeline_id bigint,
    note_id          bigint,
    -- The content hash ensure_mr is about to push, recorded before the push:
    -- after a crash between the push and its recording, a branch head the
    -- service has not recorded is known to be its own push.
    pushing_hash     text NOT NULL DEFAULT ''
);

-- Submission upserts look items up by their natural key.
CREATE INDEX IF NOT EXISTS mr_details_branch ON mr_details (forge, project, source_branch);
-- Webhook resolvers (DDR-32): by merge request number and by pipeline.
CREATE INDEX IF NOT EXISTS mr_details_number ON mr_details (forge, project, mr_iid) WHERE mr_iid IS NOT NULL;
CREATE INDEX IF NOT EXISTS mr_details_pipeline ON mr_details (forge, head_pipeline_id) WHERE head_pipeline_id IS NOT NULL;
-- Webhook resolver for commit-status events, which name only a commit
-- (DDR-32): the head the service pushed.
CREATE INDEX IF NOT EXISTS mr_details_head ON mr_details (forge, project, head_sha) WHERE head_sha <> '';

-- Items carry the forge and project they act on (the queue's version 6);
-- fill them in for mr items made before.
UPDATE work_items SET forge = m.forge, project = m.project FROM mr_details m
    WHERE m.work_item_id = work_items.id AND work_items.project = '';
