-- The mr item type's detail table (DESIGN section 6, DDR-7).
CREATE TABLE mr_details (
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
    note_id          bigint
);

-- Submission upserts look items up by their natural key.
CREATE INDEX mr_details_branch ON mr_details (forge, project, source_branch);
-- Webhook resolvers (DDR-32): by merge request number and by pipeline.
CREATE INDEX mr_details_number ON mr_details (forge, project, mr_iid) WHERE mr_iid IS NOT NULL;
CREATE INDEX mr_details_pipeline ON mr_details (forge, head_pipeline_id) WHERE head_pipeline_id IS NOT NULL;
