// Shared-counting accuracy as the Redis suites measure it: acme's API_REQUESTS admitted per one-second window.
import type { Governor } from '../../src/governance/index.ts';

const apiRequest = (at: number) => ({ tenant: 'acme', dimension: 'API_REQUESTS', units: 1, at }) as const;

/**
 * Admitted / `limit` in each of `windows` one-second windows from `windowStartMs`, offered in 100 steps of 10 ms
 * (20 requests per governor each), replies waited for between steps: accuracy alone, whatever the machine's
 * load does to reply times.
 */
export async function windowRatios(governors: Governor[], limit: number, windowStartMs: number, windows: number): Promise<number[]> {
  const ratios: number[] = [];
  for (let w = 0; w < windows; w++) {
    let admitted = 0;
    for (let step = 0; step < 100; step++) {
      const at = windowStartMs + w * 1000 + step * 10;
      for (const governor of governors) for (let i = 0; i < 20; i++) if (governor.admit(apiRequest(at)).admitted) admitted++;
      await Promise.all(governors.map((governor) => governor.reservationsSettled()));
    }
    ratios.push(admitted / limit);
  }
  return ratios;
}
