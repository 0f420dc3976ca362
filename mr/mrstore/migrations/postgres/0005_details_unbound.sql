-- mr_details no longer references work_items by a foreign key (issue
-- 31), as work_item_statuses stopped doing in the queue's migration 11.
-- Every submission inserts its item and its details in one transaction,
-- and the key's check ran at the end of the details' insert: a trigger
-- and a query locking the item's row just inserted (one more WAL
-- record). A pgbench of a submission's two inserts, three alternating
-- rounds of 12 s, spent 231-259 ms of the machine's CPU per 1,000
-- without the key and 257-293 with it. The details are written only
-- with their item (CreateMR, one implicit transaction) or under its
-- lease. The cascade stays, as a trigger: the service deletes no item,
-- and an operator who does loses its details with it.
ALTER TABLE mr_details DROP CONSTRAINT IF EXISTS mr_details_work_item_id_fkey;

CREATE FUNCTION mr_details_cascade() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM mr_details WHERE work_item_id = OLD.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER work_items_mr_details_delete AFTER DELETE ON work_items
    FOR EACH ROW EXECUTE FUNCTION mr_details_cascade();
