-- The mr item type's detail table (DESIGN section 6, DDR-7).
CREATE TABLE mr_details (
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
    note_id          INTEGER
) STRICT;

CREATE INDEX mr_details_branch ON mr_details (forge, project, source_branch);
CREATE INDEX mr_details_number ON mr_details (forge, project, mr_iid) WHERE mr_iid IS NOT NULL;
CREATE INDEX mr_details_pipeline ON mr_details (forge, head_pipeline_id) WHERE head_pipeline_id IS NOT NULL;
