-- The CI jobs retry_ci_jobs retried, recorded under the lease right after
-- the forge's retry: the retry's own webhooks can supersede the
-- executor's write of its decision, and the next run must know the newer
-- job is the service's retry (a JSON array, the latest 20).
ALTER TABLE mr_details ADD COLUMN ci_retried TEXT NOT NULL DEFAULT '';
