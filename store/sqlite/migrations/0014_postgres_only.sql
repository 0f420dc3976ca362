-- PostgreSQL's 0014 (the ready set's two partial indexes, issue 31) has
-- no SQLite counterpart: SQLite plans the sweep's ranges with the indexes
-- it has. The number is kept so that a version means the same schema in
-- both dialects.
SELECT 1;
