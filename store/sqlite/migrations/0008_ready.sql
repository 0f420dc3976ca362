-- PostgreSQL's version 8 moved the sweep's ready set into a table of its
-- own, kept by triggers, so that an item's exit is a HOT update. SQLite
-- has no such cost to avoid: this version changes nothing, so that a
-- version means the same step on both databases.
SELECT 1;
