// POST /v1/admissions with shared counting on the machine's real Redis (issue 34, item 5): a batch is admitted as
// far as the shared tokens allow, not as far as the slice this replica holds, and a count over the burst is
// refused as never-fits with a bounded retry, leaving the tenant's next unit admitted.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdmissionRoutes } from '../../../../src/doors/admissions/admissionRoutes.ts';
import { Governor, loadRedisSharedBudget, type RedisSharedBudget } from '../../../../src/governance/index.ts';
import { MemoryLimitSource } from '../../../unit/governance/memoryLimitSource.ts';

const redisUrl = process.env.REDIS_URL;
if (!redisUrl) console.warn('REDIS_URL is not set: the admission API on shared counters is skipped.');

describe.skipIf(!redisUrl)('the admission API on shared counters (Redis)', () => {
  const budgets: RedisSharedBudget[] = [];
  const governors: Governor[] = [];
  let server: Server;
  let baseUrl: string;
  let other: Governor;

  beforeAll(async () => {
    const { createRedisSharedBudget } = await loadRedisSharedBudget();
    const keyPrefix = `gl-test:${randomBytes(6).toString('hex')}:`;
    const replica = async () => {
      const budget = createRedisSharedBudget({ url: redisUrl!, keyPrefix, commandTimeoutMs: 5_000 });
      expect(await budget.ready()).toBe(true);
      const source = new MemoryLimitSource()
        .tenant('acme', { AI_INFERENCE: { override: { ratePerSecond: 5, burst: 10 } } })
        .tenant('wide', { AI_INFERENCE: { override: { ratePerSecond: 250, burst: 500 } } });
      const governor = new Governor({ limitSource: source, sharedBudget: budget });
      budgets.push(budget);
      governors.push(governor);
      for (const tenant of ['acme', 'wide']) governor.admit({ tenant, dimension: 'AI_INFERENCE', units: 0, at: Date.now() });
      await governor.loadsSettled();
      return governor;
    };
    const governor = await replica();
    other = await replica();
    const routes = createAdmissionRoutes({
      governor,
      inferenceSpend: { record: () => ({ status: 'recorded' }) } as never,
      callers: { check: () => ({ status: 'ok', actor: { id: 'detection-engine', role: 'SERVICE' } }) },
    });
    const admissions = routes.find((route) => route.path === '/v1/admissions')!;
    // The handler reads neither the parsed target nor the fault hook.
    server = createServer((req, res) => void admissions.handle(req, res, undefined as never, undefined as never));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    for (const governor of governors) await governor.close();
    for (const budget of budgets) await budget.close();
  });

  type Decision = { admitted: boolean; neverFits?: boolean; retryAfterSeconds: number };
  const post = async (items: unknown[]): Promise<Decision[]> => {
    const response = await fetch(`${baseUrl}/v1/admissions`, { method: 'POST', body: JSON.stringify({ items }), headers: { 'content-type': 'application/json' } });
    expect(response.status).toBe(200);
    return ((await response.json()) as { decisions: Decision[] }).decisions;
  };

  it('admits a batch of 50 while the shared bucket holds ~498, and a batch on a burst of 10 gets exactly the 10', async () => {
    const at = Date.now();
    // Another replica spends two units first.
    for (let i = 0; i < 2; i++) {
      other.admit({ tenant: 'wide', dimension: 'AI_INFERENCE', units: 1, at });
      await other.reservationsSettled();
    }
    const wide = await post(Array.from({ length: 50 }, () => ({ tenantId: 'wide', dimension: 'AI_INFERENCE', units: 1, at })));
    expect(wide.filter((decision) => decision.admitted)).toHaveLength(50);
    const acme = await post(Array.from({ length: 50 }, () => ({ tenantId: 'acme', dimension: 'AI_INFERENCE', units: 1, at })));
    expect(acme.filter((decision) => decision.admitted)).toHaveLength(10);
    for (const refused of acme.filter((decision) => !decision.admitted)) expect(refused.retryAfterSeconds).toBeLessThanOrEqual(2);
  });

  it('refuses 999,999,999 units on a burst of 10 as never-fits with a bounded retry; the next unit is admitted later', async () => {
    const at = Date.now() + 5_000;
    const [huge] = await post([{ tenantId: 'acme', dimension: 'AI_INFERENCE', units: 999_999_999, at }]);
    expect(huge).toMatchObject({ admitted: false, neverFits: true });
    expect(huge!.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(huge!.retryAfterSeconds).toBeLessThanOrEqual(2);
    const [next] = await post([{ tenantId: 'acme', dimension: 'AI_INFERENCE', units: 1, at }]);
    expect(next).toMatchObject({ admitted: true });
  });
});
