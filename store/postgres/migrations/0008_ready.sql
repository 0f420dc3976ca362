-- The sweep's actionable items, apart from work_items (issue 16).
--
-- A partial index over "actionable AND phase = 'active'" made every exit
-- decision (actionable true -> false) a non-HOT update: a new entry in
-- every index of work_items for each item the engine finished, about a
-- third of the server's CPU in a burn-down. work_item_ready holds the
-- same set, kept by triggers in the transaction that changes an item, so
-- that no indexed column of work_items changes when an item is claimed,
-- leased or exited, and those updates can stay on their page (HOT).
-- A row is present exactly while its item is actionable and active.
CREATE TABLE work_item_ready (
    id          uuid PRIMARY KEY,
    item_type   text NOT NULL,
    retry_after timestamptz
);

-- Sweep path 1 and the backlog count: by type, due first.
CREATE INDEX work_item_ready_sweep ON work_item_ready (item_type, retry_after);

INSERT INTO work_item_ready (id, item_type, retry_after)
    SELECT id, item_type, retry_after FROM work_items WHERE actionable AND phase = 'active';

CREATE FUNCTION work_item_ready_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'DELETE' AND NEW.actionable AND NEW.phase = 'active' THEN
        INSERT INTO work_item_ready (id, item_type, retry_after) VALUES (NEW.id, NEW.item_type, NEW.retry_after)
            ON CONFLICT (id) DO UPDATE SET item_type = excluded.item_type, retry_after = excluded.retry_after;
    ELSE
        DELETE FROM work_item_ready WHERE id = OLD.id;
    END IF;
    RETURN NULL;
END
$$;

-- The WHEN clauses keep the function out of every update that leaves the
-- set alone: claims, heartbeats, dimension writes.
CREATE TRIGGER work_items_ready_insert AFTER INSERT ON work_items FOR EACH ROW
    WHEN (NEW.actionable AND NEW.phase = 'active') EXECUTE FUNCTION work_item_ready_sync();
CREATE TRIGGER work_items_ready_update AFTER UPDATE ON work_items FOR EACH ROW
    WHEN (OLD.actionable IS DISTINCT FROM NEW.actionable OR OLD.phase IS DISTINCT FROM NEW.phase
        OR OLD.retry_after IS DISTINCT FROM NEW.retry_after OR OLD.item_type IS DISTINCT FROM NEW.item_type)
    EXECUTE FUNCTION work_item_ready_sync();
CREATE TRIGGER work_items_ready_delete AFTER DELETE ON work_items FOR EACH ROW
    EXECUTE FUNCTION work_item_ready_sync();

DROP INDEX work_items_sweep_actionable;

-- Room on each page for an item's next versions: a claim updates the
-- consecutive items of a batch in one statement, and an update that
-- finds no room on its page is not HOT.
ALTER TABLE work_items SET (fillfactor = 50);
