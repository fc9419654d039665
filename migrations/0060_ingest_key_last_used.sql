-- When each ingest key was last seen by the front door (issueIngestKey / ingestKeys). The front door keeps
-- verified keys in memory for a while, so this is refreshed when a key is looked up again, not per request.
ALTER TABLE gl_ingest_credentials ADD COLUMN last_used_at timestamptz;
