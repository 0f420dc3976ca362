-- The generic work queue (DESIGN section 4). Timestamps are TEXT in the
-- fixed-width UTC form 2006-01-02T15:04:05.000000Z, so they compare as
-- strings in time order; JSON columns are TEXT holding JSON.
CREATE TABLE work_items (
    id              TEXT PRIMARY KEY,
    item_type       TEXT NOT NULL,
    phase           TEXT NOT NULL DEFAULT 'active'
                    CHECK (phase IN ('active', 'completed', 'failed', 'cancelled')),
    reason          TEXT NOT NULL DEFAULT '',
    actionable      INTEGER NOT NULL DEFAULT 1 CHECK (actionable IN (0, 1)),
    revision        INTEGER NOT NULL DEFAULT 1,
    leased_until    TEXT,
    lease_token     TEXT,
    lease_owner     TEXT,
    attempts        INTEGER NOT NULL DEFAULT 0,
    retry_after     TEXT,
    error           TEXT NOT NULL DEFAULT '',
    idempotency_key TEXT,
    generation      INTEGER NOT NULL DEFAULT 1,
    caller_identity TEXT NOT NULL DEFAULT '',
    content_hash    TEXT NOT NULL DEFAULT '',
    last_event_at   TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    finished_at     TEXT
) STRICT;

CREATE UNIQUE INDEX work_items_idempotency_key ON work_items (idempotency_key)
    WHERE idempotency_key IS NOT NULL AND phase NOT IN ('completed', 'cancelled');

CREATE INDEX work_items_sweep_actionable ON work_items (item_type, retry_after)
    WHERE actionable = 1 AND phase = 'active';

CREATE INDEX work_items_type_phase ON work_items (item_type, phase, id);

CREATE TABLE work_item_statuses (
    work_item_id  TEXT NOT NULL REFERENCES work_items (id) ON DELETE CASCADE,
    dimension     TEXT NOT NULL,
    variant       TEXT NOT NULL DEFAULT '',
    status        TEXT NOT NULL CHECK (status IN ('true', 'false')),
    detail        TEXT,
    pending_until TEXT,
    updated_at    TEXT NOT NULL,
    PRIMARY KEY (work_item_id, dimension, variant)
) STRICT;

CREATE INDEX work_item_statuses_sweep_pending ON work_item_statuses (pending_until)
    WHERE pending_until IS NOT NULL AND status = 'true';

CREATE TABLE pending_events (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    work_item_id TEXT NOT NULL REFERENCES work_items (id) ON DELETE CASCADE,
    source       TEXT NOT NULL,
    event_type   TEXT NOT NULL,
    delivery_id  TEXT NOT NULL,
    body         TEXT NOT NULL,
    event_ts     TEXT,
    received_at  TEXT NOT NULL,
    UNIQUE (work_item_id, source, delivery_id)
) STRICT;

CREATE INDEX pending_events_item ON pending_events (work_item_id, id);
