-- The content an accepted commandId stands for (src/commands/commandFingerprint.ts: device and payload), so
-- the same id sent with other content is answered CommandIdConflict instead of being taken for a repeat.
-- Rows accepted before this column existed have none: for them only the device is compared.
ALTER TABLE gl_commands ADD COLUMN fingerprint text;
