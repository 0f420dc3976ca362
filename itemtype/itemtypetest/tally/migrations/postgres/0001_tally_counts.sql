-- The tally type's own table: how far each item counted, and to what.
CREATE TABLE tally_counts (
    work_item_id uuid PRIMARY KEY REFERENCES work_items (id) ON DELETE CASCADE,
    target       bigint NOT NULL,
    counted      bigint NOT NULL DEFAULT 0
);
