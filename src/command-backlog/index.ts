// The command backlog's surface: createCommandBacklog (the database or the stream path), its vocabulary, the
// ceilings it reads through the control plane, and the expiry that runs beside it.
export * from './types.ts';
export * from './createCommandBacklog.ts';
export * from './ceilings.ts';
export * from './startCommandExpiry.ts';
export { retryAfterSeconds, DEFAULT_RETRY_AFTER_SECONDS, MAX_RETRY_AFTER_SECONDS } from './retryAfter.ts';
