// Pruning a read model's old rows now and then every interval, one run at a time: a slow run (a large first
// prune) is not overlapped by the next tick, and a failed run is reported and retried at the next tick. The
// trend tables (src/metrics/trends/pruneTrends.ts) and the limit preview's demand (src/limit-preview) use it.

export interface Pruning {
  close(): Promise<void>;
}

/** Runs `prune` now and then every `intervalMs` (default 10 minutes) until closed; close waits for a run under way. */
export function startPeriodicPrune(prune: () => Promise<unknown>, options: { intervalMs?: number; onError: (error: unknown) => void }): Pruning {
  let running: Promise<unknown> | undefined;
  const run = () => {
    if (running) return;
    running = prune()
      .catch(options.onError)
      .finally(() => {
        running = undefined;
      });
  };
  run();
  const timer = setInterval(run, options.intervalMs ?? 10 * 60_000);
  timer.unref();
  return {
    async close() {
      clearInterval(timer);
      await running;
    },
  };
}
