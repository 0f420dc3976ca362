-- Items' audit entries, kept where every instance reads them (issue 29):
-- an item's page shows its whole history after a restart and on any
-- instance. Bounded by audit.history_retention (PruneHistory); the
-- audit archive stays the full record. entry is the entry's JSON.
CREATE TABLE item_history (
    seq     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    item_id text NOT NULL,
    at      timestamptz NOT NULL,
    entry   text NOT NULL
);
CREATE INDEX item_history_item ON item_history (item_id, at, seq);
CREATE INDEX item_history_at ON item_history (at);
