-- PostgreSQL's version 5 replaces mr_details' foreign key to work_items
-- by a delete trigger; SQLite keeps the key. A no-op, so that both
-- drivers number their versions alike.
SELECT 1;
