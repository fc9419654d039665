import cliProgress from 'cli-progress';
import type { RebuildProgress } from './rebuild.ts';

/** A terminal progress bar for one rebuild: done/total, events per second, ETA. */
export function progressBar(projection: string): { onProgress: (progress: RebuildProgress) => void; stop: () => void } {
  const bar = new cliProgress.SingleBar(
    {
      format: `${projection} [{bar}] {percentage}% | {value}/{total} events | {rate} events/s | ETA {etaSeconds}s`,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    onProgress({ done, total, ratePerSecond, etaSeconds }) {
      const payload = { rate: Math.round(ratePerSecond).toString(), etaSeconds: Math.ceil(etaSeconds).toString() };
      if (!started) {
        bar.start(total, done, payload);
        started = true;
      }
      bar.setTotal(total);
      bar.update(done, payload);
    },
    stop: () => bar.stop(),
  };
}
