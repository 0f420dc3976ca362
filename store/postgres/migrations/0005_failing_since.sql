-- Transient failures (the forge or database unreachable) do not count
-- toward max_attempts; the item gives up only after failing continuously
-- for processing.give_up_after, measured from failing_since.
ALTER TABLE work_items ADD COLUMN failing_since timestamptz;

