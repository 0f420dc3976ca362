-- PostgreSQL's 0015 (work_items' fill factor, issue 31) has no SQLite
-- counterpart: SQLite has no fill factor. The number is kept so that a
-- version means the same schema in both dialects.
SELECT 1;
