-- How many slots the last enqueue batch took. RETURNING shows only the row after the UPDATE, so the
-- statement that takes up to N slots also writes how many it took, computed from the same old row as the
-- new count, and reads both back (src/commands/postgres/takeBacklogSlots.ts).
ALTER TABLE gl_command_backlog_guard ADD COLUMN last_batch_taken integer NOT NULL DEFAULT 0;
