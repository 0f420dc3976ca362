-- The incident bridge's links (#612, issue 12): one row per provider issue
-- (a Sentry or GlitchTip issue), naming the forge issue filed for it.
-- Incidents are never work (hard rule 1): nothing here refers to cp_work;
-- the allocator sees the forge issue through the inventory like any other.
-- Scope keys the provider did not give are '' and never NULL (hard rule
-- 6), so the unique key is canonical and a claim's insert meets any other,
-- from whichever serve process on the database.
CREATE TABLE cp_incident_links (
    id           text PRIMARY KEY,
    provider     text NOT NULL CHECK (provider IN ('sentry', 'glitchtip')),
    organization text NOT NULL DEFAULT '',
    project      text NOT NULL DEFAULT '',
    environment  text NOT NULL DEFAULT '',
    fingerprint  text NOT NULL CHECK (fingerprint <> ''),
    forge        text NOT NULL,
    repo         text NOT NULL,
    issue_number bigint NOT NULL DEFAULT 0,
    issue_url    text NOT NULL DEFAULT '',
    status       text NOT NULL DEFAULT '',
    event_count  bigint NOT NULL DEFAULT 0 CHECK (event_count >= 0),
    permalink    text NOT NULL DEFAULT '',
    first_seen   timestamptz,
    last_seen    timestamptz,
    linked_prs   jsonb NOT NULL DEFAULT '[]',
    -- creating: claimed, its issue being filed under claim_token since
    -- claimed_at; linked: issue_number names the forge issue.
    state        text NOT NULL CHECK (state IN ('creating', 'linked')),
    claim_token  text NOT NULL DEFAULT '',
    claimed_at   timestamptz,
    revision     bigint NOT NULL DEFAULT 1,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    CONSTRAINT cp_incident_links_key UNIQUE (provider, organization, project, environment, fingerprint),
    CHECK (state = 'creating' OR issue_number > 0)
);

-- ListLinks: newest first.
CREATE INDEX cp_incident_links_created ON cp_incident_links (created_at, id);
