-- This version made an item type's table, which moved to that type's own
-- migration chain; it stays as a no-op so that versions keep their numbers.
SELECT 1;
