import cliProgress from 'cli-progress';
import type { RebuildProgress } from './rebuild.ts';

/** A terminal progress bar for one rebuild: done/total, events per second, ETA. */
export function progressBar(projection: string): { onProgress: (progress: RebuildProgress) => void; stop: () => void } {
  const bar = new cliProgress.SingleBar(
    {
      format: `${projection} [{bar}] {percentage}% | {value}/{total} events | {rate} events/s | ETA {eta_formatted}`,
      etaBuffer: 50,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    onProgress({ done, total, ratePerSecond }) {
      if (!started) {
        bar.start(total, done, { rate: '0' });
        started = true;
      }
      bar.setTotal(total);
      bar.update(done, { rate: Math.round(ratePerSecond).toString() });
    },
    stop: () => bar.stop(),
  };
}
