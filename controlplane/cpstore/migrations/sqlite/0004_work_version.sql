-- A version of the work inventory: every write to cp_work bumps it, in
-- its own transaction, so that an instance may keep the open work in
-- memory and re-read it only when the version moved (the allocator read
-- 5,000 rows on every call). Triggers rather than a write at each call
-- site, so that no present or future write can leave it behind. SQLite
-- has row triggers only: a statement of many rows bumps it many times,
-- in one transaction.
CREATE TABLE cp_work_version (
    id      integer PRIMARY KEY CHECK (id = 1),
    version integer NOT NULL
);
INSERT INTO cp_work_version (id, version) VALUES (1, 1);

CREATE TRIGGER cp_work_version_insert AFTER INSERT ON cp_work
BEGIN UPDATE cp_work_version SET version = version + 1 WHERE id = 1; END;
CREATE TRIGGER cp_work_version_update AFTER UPDATE ON cp_work
BEGIN UPDATE cp_work_version SET version = version + 1 WHERE id = 1; END;
CREATE TRIGGER cp_work_version_delete AFTER DELETE ON cp_work
BEGIN UPDATE cp_work_version SET version = version + 1 WHERE id = 1; END;
