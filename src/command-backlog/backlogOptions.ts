import type { CeilingSource } from './types.ts';

/** A command older than this is expired: a stale actuation is worse than none (configurable per service). */
export const DEFAULT_COMMAND_TTL_MS = 60 * 60 * 1_000;

export interface BacklogOptions {
  ceilings: CeilingSource;
  commandTtlMs: number;
  now: () => Date;
}
