-- The sweep reads the ready set in ranges of ids that stop at its limit
-- (issue 31). Its items were "no retry_after, or one passed": an OR of
-- two ranges of (item_type, retry_after), which the planner, on a ready
-- set it had not analysed since it filled (a burn-down's first minute)
-- or analysed while empty, made a bitmap of every ready item before the
-- limit applied. Each sweep of a backlog of N read N index entries, a
-- burn-down the square of its size. Two partial indexes split the set
-- in the sweep's two paths, and every ready row is still in one of them
-- beside the primary key, as it was in one sweep index:
--   items without a retry: (item_type, id), read from the sweep's
--   starting id up to the limit;
--   items waiting for a retry: (retry_after), read up to now, so that
--   a sweep reads only the due ones, never the items without a retry
--   nor those whose retry is to come.
CREATE INDEX work_item_ready_now ON work_item_ready (item_type, id) WHERE retry_after IS NULL;
CREATE INDEX work_item_ready_retry ON work_item_ready (retry_after) WHERE retry_after IS NOT NULL;
DROP INDEX work_item_ready_sweep;
