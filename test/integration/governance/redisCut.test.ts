// A network cut between one service replica and Redis (issue 32, item 5): Redis runs in a network namespace of
// its own, each of two Governors reaches it over its own veth link (test/support/networkNamespaces.ts), and one
// link is taken down for a few seconds mid-run. The cut replica's packets are dropped, not refused: it learns
// of the cut from the command timeout, meters at half the limit alone meanwhile, without a caller error, and
// returns to shared counting once the link is back; the other replica never leaves shared counting. Skipped,
// and said so, where namespaces cannot be made (not root, no iproute2) or redis-server is missing.
import { afterAll, expect, it, describe } from 'vitest';
import { Governor, loadRedisSharedBudget } from '../../../src/governance/index.ts';
import { MemoryLimitSource } from '../../unit/governance/memoryLimitSource.ts';
import { windowRatios } from '../../support/windowRatios.ts';
import { startNamespacedServer } from '../../support/networkNamespaces.ts';

const { createRedisSharedBudget } = await loadRedisSharedBudget();

const redis = await startNamespacedServer('redis-server', (port, dir) => ['--port', String(port), '--bind', '0.0.0.0', '--protected-mode', 'no', '--save', '', '--appendonly', 'no', '--dir', dir], 2);
afterAll(async () => redis?.dispose());

const LIMIT = 2000;
const CUT_MS = 3000;
/** Requests each replica offers per 10 ms step: 4,000 a second each when the loop keeps time, 2 x the limit when it runs at a quarter of that. */
const PER_STEP = 40;
const apiRequest = (at: number) => ({ tenant: 'acme', dimension: 'API_REQUESTS', units: 1, at }) as const;

describe.skipIf(!redis)('one replica cut off from Redis (network namespace, link down)', () => {
  it('meters on its half-limit fallback while cut, without a caller error, and returns to shared counting', { timeout: 90_000 }, async () => {
    const replicas = [];
    for (const host of redis!.hosts) {
      // The production command timeout (250 ms) and probe interval (1 s).
      const budget = createRedisSharedBudget({ url: `redis://${host}:${redis!.port}`, keyPrefix: 'gl-cut:' });
      expect(await budget.ready(10_000)).toBe(true);
      const governor = new Governor({ limitSource: new MemoryLimitSource().tenant('acme', { API_REQUESTS: { override: { ratePerSecond: LIMIT } } }), sharedBudget: budget });
      governor.confirmTenant('acme');
      governor.admit({ tenant: 'acme', dimension: 'AI_INFERENCE', units: 0, at: Date.now() });
      await governor.loadsSettled();
      replicas.push({ governor, budget, fallbackBySecond: new Map<number, number>(), lastFallback: 0, everFellBack: false });
    }
    const [cutOff, other] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
    const admittedBySecond = new Map<number, number>();
    const offeredBySecond = new Map<number, number>();
    let callerErrors = 0;
    let cutAt = 0;
    let restoredAt = 0;
    let sharedAgainAt = 0;
    const firstSecond = Math.floor(Date.now() / 1000) + 1;
    while (Date.now() < firstSecond * 1000) await new Promise((resolve) => setTimeout(resolve, 5));
    const deadline = firstSecond * 1000 + 45_000;
    while (Date.now() < deadline) {
      const now = Date.now();
      const second = Math.floor(now / 1000);
      if (cutAt === 0 && second >= firstSecond + 3) {
        cutAt = Date.now();
        void redis!.namespace.cut(0);
      }
      if (cutAt > 0 && restoredAt === 0 && now - cutAt >= CUT_MS) {
        restoredAt = Date.now();
        void redis!.namespace.heal(0);
      }
      for (const replica of replicas) {
        const { governor } = replica;
        for (let i = 0; i < PER_STEP; i++) {
          try {
            const at = Date.now();
            const atSecond = Math.floor(at / 1000);
            offeredBySecond.set(atSecond, (offeredBySecond.get(atSecond) ?? 0) + 1);
            if (governor.admit(apiRequest(at)).admitted) admittedBySecond.set(atSecond, (admittedBySecond.get(atSecond) ?? 0) + 1);
            // A fallback admission counts in the second of its own instant, the fallback window it was decided
            // in: a step that straddles a second would otherwise put two windows' admissions in one.
            const fallbacks = governor.stats().sharedFallbackAdmissions;
            if (fallbacks !== replica.lastFallback) {
              replica.fallbackBySecond.set(atSecond, (replica.fallbackBySecond.get(atSecond) ?? 0) + fallbacks - replica.lastFallback);
              replica.lastFallback = fallbacks;
            }
          } catch {
            callerErrors++;
          }
        }
      }
      for (const replica of replicas) {
        if (replica.governor.stats().sharedFallbackActive) replica.everFellBack = true;
      }
      if (restoredAt > 0 && sharedAgainAt === 0 && !cutOff.governor.stats().sharedFallbackActive) sharedAgainAt = Date.now();
      // Two whole seconds of real traffic after the return, then the accuracy is measured window by window.
      if (sharedAgainAt > 0 && now > (Math.floor(sharedAgainAt / 1000) + 3) * 1000) break;
      // Replies are waited for between steps (as the first test does), so a machine too busy to answer within a
      // step does not show as refusals; a reply later than the command timeout is still a failure and a fallback.
      await Promise.all(replicas.map(({ governor }) => governor.reservationsSettled()));
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const governors = replicas.map(({ governor }) => governor);
    const after = await windowRatios(governors, LIMIT, (Math.floor(Date.now() / 1000) + 1) * 1000, 3);
    for (const { governor, budget } of replicas) {
      await governor.close();
      await budget.close();
    }

    // Admitted over what the limit allowed of what was offered (a loaded machine may run the loop slower than it asks).
    const ratioIn = (second: number) => (admittedBySecond.get(second) ?? 0) / Math.min(LIMIT, offeredBySecond.get(second) ?? 0);
    const lastSecond = Math.floor(Date.now() / 1000) - 1;
    const ratios = [];
    for (let second = firstSecond; second <= lastSecond; second++) ratios.push(`${second - firstSecond}:${ratioIn(second).toFixed(3)}(${offeredBySecond.get(second) ?? 0})`);
    const fallbackSeconds = [...cutOff.fallbackBySecond.entries()].filter(([, admitted]) => admitted > 0).map(([second, admitted]) => `${second - firstSecond}:${admitted}`);
    console.log(
      `Redis cut off from one of two replicas for ${CUT_MS / 1000} s (link down in a network namespace): shared again ${((sharedAgainAt - restoredAt) / 1000).toFixed(2)} s ` +
        `after the link came back; the cut replica's fallback admissions per second (second:count) ${fallbackSeconds.join(' ')}; ` +
        `admitted / min(limit, offered) per second, both replicas (second:ratio(offered), cut in second 3) ${ratios.join(' ')}; ` +
        `then admitted / limit in 3 windows driven step by step ${after.map((ratio) => ratio.toFixed(3)).join(' ')}`,
    );

    expect(callerErrors).toBe(0);
    expect(cutOff.everFellBack).toBe(true);
    expect(other.everFellBack).toBe(false);
    expect(sharedAgainAt).toBeGreaterThan(0);
    // Alone at half the limit while cut off.
    for (const admitted of cutOff.fallbackBySecond.values()) expect(admitted).toBeLessThanOrEqual(LIMIT / 2);
    expect([...cutOff.fallbackBySecond.values()].some((admitted) => admitted > 0)).toBe(true);
    // Real traffic never passed 1.10 x the limit outside the cut (below it it may, on a loaded machine: slow
    // replies cost admissions, docs/scaling.md), and the windows measured after the return are exact.
    for (let second = firstSecond; second <= lastSecond; second++) {
      if (second >= Math.floor(cutAt / 1000) && second <= Math.floor(sharedAgainAt / 1000)) continue;
      expect(ratioIn(second)).toBeLessThanOrEqual(1.1);
    }
    for (const ratio of after) {
      expect(ratio).toBeGreaterThanOrEqual(0.95);
      expect(ratio).toBeLessThanOrEqual(1.1);
    }
  });
});
