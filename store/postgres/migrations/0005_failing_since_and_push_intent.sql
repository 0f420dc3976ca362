-- Transient failures (the forge or database unreachable) do not count
-- toward max_attempts; the item gives up only after failing continuously
-- for processing.give_up_after, measured from failing_since.
ALTER TABLE work_items ADD COLUMN failing_since timestamptz;

-- The content hash ensure_mr is about to push, recorded before the push:
-- after a crash between the push and its recording, a branch head the
-- service has not recorded is known to be its own push, not someone
-- else's branch (which the service never overwrites).
ALTER TABLE mr_details ADD COLUMN pushing_hash text NOT NULL DEFAULT '';
