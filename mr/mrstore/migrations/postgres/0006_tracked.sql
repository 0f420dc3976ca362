-- A merge request the service did not open, tracked because a person
-- labelled it (projects[].track_label): the service never writes its
-- branch, so its head is never one the service owns (OwnsBranchHead),
-- never a pushed head, and no submission takes its item over.
ALTER TABLE mr_details ADD COLUMN tracked BOOLEAN NOT NULL DEFAULT FALSE;
