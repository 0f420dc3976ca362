-- The generic work queue (DESIGN section 4).
CREATE TABLE work_items (
    id              uuid PRIMARY KEY,
    item_type       text NOT NULL,
    phase           text NOT NULL DEFAULT 'active'
                    CHECK (phase IN ('active', 'completed', 'failed', 'cancelled')),
    reason          text NOT NULL DEFAULT '',
    actionable      boolean NOT NULL DEFAULT true,
    revision        bigint NOT NULL DEFAULT 1,
    leased_until    timestamptz,
    lease_token     text,
    lease_owner     text,
    attempts        integer NOT NULL DEFAULT 0,
    retry_after     timestamptz,
    error           text NOT NULL DEFAULT '',
    idempotency_key text,
    generation      integer NOT NULL DEFAULT 1,
    caller_identity text NOT NULL DEFAULT '',
    content_hash    text NOT NULL DEFAULT '',
    last_event_at   timestamptz,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    finished_at     timestamptz
);

-- At most one item per idempotency key that is not completed or cancelled (DDR-39).
CREATE UNIQUE INDEX work_items_idempotency_key ON work_items (idempotency_key)
    WHERE idempotency_key IS NOT NULL AND phase NOT IN ('completed', 'cancelled');

-- Sweep path 1: actionable active items. Idle items are not in this index.
CREATE INDEX work_items_sweep_actionable ON work_items (item_type, retry_after)
    WHERE actionable AND phase = 'active';

-- Listing by type and phase, newest first.
CREATE INDEX work_items_type_phase ON work_items (item_type, phase, id);

CREATE TABLE work_item_statuses (
    work_item_id  uuid NOT NULL REFERENCES work_items (id) ON DELETE CASCADE,
    dimension     text NOT NULL,
    variant       text NOT NULL DEFAULT '',
    status        text NOT NULL CHECK (status IN ('true', 'false')),
    detail        jsonb,
    pending_until timestamptz,
    updated_at    timestamptz NOT NULL,
    PRIMARY KEY (work_item_id, dimension, variant)
);

-- Sweep path 3: deferred needs_* rows, found by range scan on pending_until.
-- Terminal items have their pending_until cleared, so they leave this index.
CREATE INDEX work_item_statuses_sweep_pending ON work_item_statuses (pending_until)
    WHERE pending_until IS NOT NULL AND status = 'true';

CREATE TABLE pending_events (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    work_item_id uuid NOT NULL REFERENCES work_items (id) ON DELETE CASCADE,
    source       text NOT NULL,
    event_type   text NOT NULL,
    delivery_id  text NOT NULL,
    body         jsonb NOT NULL,
    event_ts     timestamptz,
    received_at  timestamptz NOT NULL,
    UNIQUE (work_item_id, source, delivery_id)
);

-- Sweep path 2 and draining oldest first: events by item.
CREATE INDEX pending_events_item ON pending_events (work_item_id, id);
