-- A change submitted for a control-plane assignment names it, so that
-- ensure_mr passes the gate again before each forge write.
ALTER TABLE mr_details ADD COLUMN assignment_id TEXT NOT NULL DEFAULT '';
