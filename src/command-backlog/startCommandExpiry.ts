// The service's periodic expiry pass: every interval, commands queued longer than the TTL leave the backlog
// (each with a CommandExpired event). Passes never overlap; closing waits for the one in flight, so the
// database is not closed under it.
import type { CommandBacklog } from './types.ts';

/** Between passes. A command leaves at most this long after its TTL ran out. */
export const DEFAULT_EXPIRY_INTERVAL_MS = 30_000;

export interface CommandExpiryOptions {
  intervalMs?: number;
  onExpired?: (expired: number) => void;
  onError?: (error: unknown) => void;
}

export function startCommandExpiry(
  backlog: Pick<CommandBacklog, 'expireOlderThanTtl'>,
  { intervalMs = DEFAULT_EXPIRY_INTERVAL_MS, onExpired, onError }: CommandExpiryOptions = {},
): () => Promise<void> {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> = Promise.resolve();

  const pass = async () => {
    try {
      const { expired } = await backlog.expireOlderThanTtl();
      if (expired > 0) onExpired?.(expired);
    } catch (error) {
      // A failed pass (database briefly away) is retried at the next interval; nothing is lost meanwhile.
      onError?.(error);
    }
  };

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      inFlight = pass().finally(schedule);
    }, intervalMs);
    // The expiry timer alone must not keep the process alive.
    timer.unref();
  };
  schedule();

  return async () => {
    stopped = true;
    clearTimeout(timer);
    await inFlight;
  };
}
