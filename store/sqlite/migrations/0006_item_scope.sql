-- Every item may act on one project of one forge ('' for neither): grants
-- are per project, and listing filters by them, whatever the item's type.
ALTER TABLE work_items ADD COLUMN forge TEXT NOT NULL DEFAULT '';
ALTER TABLE work_items ADD COLUMN project TEXT NOT NULL DEFAULT '';
CREATE INDEX work_items_scope ON work_items (forge, project, id);
