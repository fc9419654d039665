-- projections/commandList.ts (version 2): a cancelled command's reason, as the canceller gave it (the
-- CommandCancelled event's metadata), beside a failed command's error. Query.commands answers it.
ALTER TABLE gl_command_list ADD COLUMN reason text;
