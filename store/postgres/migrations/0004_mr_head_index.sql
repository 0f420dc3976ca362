-- Webhook resolver for commit-status events, which name only a commit
-- (DDR-32): the head the service pushed.
CREATE INDEX mr_details_head ON mr_details (forge, project, head_sha) WHERE head_sha <> '';
