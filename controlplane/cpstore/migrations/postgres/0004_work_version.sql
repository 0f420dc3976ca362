-- A version of the work inventory: every statement that writes cp_work
-- bumps it, in its own transaction, so that an instance may keep the open
-- work in memory and re-read it only when the version moved (the
-- allocator read 5,000 rows on every call). A trigger rather than a write
-- at each call site, so that no present or future write can leave it
-- behind.
CREATE TABLE cp_work_version (
    id      integer PRIMARY KEY CHECK (id = 1),
    version bigint NOT NULL
);
INSERT INTO cp_work_version (id, version) VALUES (1, 1);

CREATE FUNCTION cp_work_version_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE cp_work_version SET version = version + 1 WHERE id = 1;
    RETURN NULL;
END $$;

CREATE TRIGGER cp_work_version_bump AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON cp_work
    FOR EACH STATEMENT EXECUTE FUNCTION cp_work_version_bump();
