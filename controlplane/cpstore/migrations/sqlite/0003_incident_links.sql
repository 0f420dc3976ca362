-- The incident bridge's links (#612, issue 12): one row per provider issue
-- (a Sentry or GlitchTip issue), naming the forge issue filed for it.
-- Incidents are never work (hard rule 1): nothing here refers to cp_work;
-- the allocator sees the forge issue through the inventory like any other.
-- Scope keys the provider did not give are '' and never NULL (hard rule
-- 6), so the unique key is canonical and a claim's insert meets any other.
CREATE TABLE cp_incident_links (
    id           TEXT PRIMARY KEY,
    provider     TEXT NOT NULL CHECK (provider IN ('sentry', 'glitchtip')),
    organization TEXT NOT NULL DEFAULT '',
    project      TEXT NOT NULL DEFAULT '',
    environment  TEXT NOT NULL DEFAULT '',
    fingerprint  TEXT NOT NULL CHECK (fingerprint <> ''),
    forge        TEXT NOT NULL,
    repo         TEXT NOT NULL,
    issue_number INTEGER NOT NULL DEFAULT 0,
    issue_url    TEXT NOT NULL DEFAULT '',
    status       TEXT NOT NULL DEFAULT '',
    event_count  INTEGER NOT NULL DEFAULT 0 CHECK (event_count >= 0),
    permalink    TEXT NOT NULL DEFAULT '',
    first_seen   TEXT,
    last_seen    TEXT,
    linked_prs   TEXT NOT NULL DEFAULT '[]',
    -- creating: claimed, its issue being filed under claim_token since
    -- claimed_at; linked: issue_number names the forge issue.
    state        TEXT NOT NULL CHECK (state IN ('creating', 'linked')),
    claim_token  TEXT NOT NULL DEFAULT '',
    claimed_at   TEXT,
    revision     INTEGER NOT NULL DEFAULT 1,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    CONSTRAINT cp_incident_links_key UNIQUE (provider, organization, project, environment, fingerprint),
    CHECK (state = 'creating' OR issue_number > 0)
) STRICT;

-- ListLinks: newest first.
CREATE INDEX cp_incident_links_created ON cp_incident_links (created_at, id);
