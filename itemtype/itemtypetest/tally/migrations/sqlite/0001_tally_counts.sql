-- The tally type's own table: how far each item counted, and to what.
CREATE TABLE tally_counts (
    work_item_id TEXT PRIMARY KEY REFERENCES work_items (id) ON DELETE CASCADE,
    target       INTEGER NOT NULL,
    counted      INTEGER NOT NULL DEFAULT 0
);
