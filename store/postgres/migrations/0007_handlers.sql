-- Which instance handles which item type, and when its engine last swept
-- (issue 17): a submission of a type no instance has handled recently is
-- flagged instead of waiting silently. One row per instance and type,
-- refreshed by every sweep.
CREATE TABLE item_type_handlers (
    item_type text NOT NULL,
    instance  text NOT NULL,
    seen_at   timestamptz NOT NULL,
    PRIMARY KEY (item_type, instance)
);
