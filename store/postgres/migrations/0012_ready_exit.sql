-- An exit takes its item out of the ready set itself (issue 31). The row
-- trigger of version 8 ran once per item for every exit decision
-- (actionable true -> false, the item still active): about 40% of the
-- folded exit's time in EXPLAIN ANALYZE over 100 items. The two
-- statements that make that change, the folded exit and the batched
-- exit decision (store/postgres/coalesced.go), now delete their items'
-- ready rows in the same statement, set-based, and the trigger no longer
-- fires for it. It still fires for every other change of the set:
-- becoming actionable, a phase, a retry time, a type. ReadySetDrift,
-- checked after every test, holds the set exact.
DROP TRIGGER work_items_ready_update ON work_items;
CREATE TRIGGER work_items_ready_update AFTER UPDATE ON work_items FOR EACH ROW
    WHEN ((NEW.actionable AND NOT OLD.actionable) OR OLD.phase IS DISTINCT FROM NEW.phase
        OR OLD.retry_after IS DISTINCT FROM NEW.retry_after OR OLD.item_type IS DISTINCT FROM NEW.item_type)
    EXECUTE FUNCTION work_item_ready_sync();
