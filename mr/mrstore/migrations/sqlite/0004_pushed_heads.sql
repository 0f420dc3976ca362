-- Every head the service pushed for a branch, of every generation and
-- every resubmission, and for which caller: a late event carrying one of
-- them is the service's own history, never someone else's push, and a
-- branch is written again only for the caller whose head it holds
-- (mr_details keeps only each item's latest head).
CREATE TABLE mr_pushed_heads (
    forge         TEXT NOT NULL,
    project       TEXT NOT NULL,
    source_branch TEXT NOT NULL,
    head_sha      TEXT NOT NULL,
    caller_identity TEXT NOT NULL,
    PRIMARY KEY (forge, project, source_branch, head_sha, caller_identity)
);
