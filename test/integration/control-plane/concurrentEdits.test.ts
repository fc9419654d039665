// Two concurrent edits never lose one: parallel clients (on PostgreSQL each with its own pool, as separate
// processes would be) edit one tier and one tenant at once. Every edit is applied or reported as a
// ConcurrentEdit, and the ledger's history holds exactly the applied ones, each naming the value the edit
// before it wrote as its previous value. The race is also forced (a rival edit between one client's read and its
// append), so a ConcurrentEdit is required to happen, not left to the scheduler.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createControlPlane, type ControlPlane } from '../../../src/control-plane/controlPlane.ts';
import type { LimitChangeResult as ControlPlaneResult } from '../../../src/control-plane/change-requests/runRequests.ts';
import type { Db } from '../../../src/db/db.ts';
import type { TierLimitSetData } from '../../../src/ledger/catalog/controlPlane.ts';
import type { EventStore } from '../../../src/ledger/eventStore.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import { describeOnEachStorage, type TestDb } from '../../support/databases.ts';
import { OPERATOR, SETUP_TIMEOUT_MS } from '../../support/controlPlaneHarness.ts';

const CLIENTS = 20;

describeOnEachStorage('concurrent control-plane edits on $name', (target) => {
  let testDb: TestDb;
  const clients: Array<{ db: Db; store: EventStore }> = [];

  beforeAll(async () => {
    testDb = await target.open();
    for (let i = 0; i < CLIENTS; i++) {
      const db = testDb.connectAgain ? testDb.connectAgain({ max: 1 }) : testDb.db;
      clients.push({ db, store: createPostgresEventStore(db) });
    }
    const first = createControlPlane({ ...clients[0]!, now: () => new Date() });
    expect((await first.defineTier(OPERATOR, { tierId: 'busy', name: 'Busy' })).status).toBe('applied');
    expect((await first.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'busy' })).status).toBe('applied');
  }, SETUP_TIMEOUT_MS);
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.store.close()));
    await testDb.dispose();
  });

  const controlPlanes = (maxAttempts?: number): ControlPlane[] =>
    clients.map((client) => createControlPlane({ ...client, ...(maxAttempts ? { maxAttempts } : {}) }));

  async function tierHistory(dimension: string): Promise<TierLimitSetData[]> {
    const events = await clients[0]!.store.readStream('tier-busy');
    return events.filter((event) => event.type === 'TierLimitSet').map((event) => event.data as TierLimitSetData).filter((data) => data.dimension === dimension);
  }

  function expectUnbrokenChain(history: TierLimitSetData[]): void {
    history.forEach((change, i) => expect(change.previous).toEqual(i === 0 ? null : history[i - 1]!.value));
  }

  it(`applies all ${CLIENTS} parallel setTierLimit on one tier, deciding again on fresh state`, async () => {
    const results = await Promise.all(
      controlPlanes().map((cp, i) => cp.setTierLimit(OPERATOR, { tierId: 'busy', dimension: 'INGEST', ratePerSecond: 1001 + i, reason: `edit ${i}` })),
    );
    expect(results.map((result) => result.status)).toEqual(Array(CLIENTS).fill('applied'));
    const history = await tierHistory('INGEST');
    expect(history.map((change) => change.value.ratePerSecond).sort()).toEqual(Array.from({ length: CLIENTS }, (_, i) => 1001 + i));
    expectUnbrokenChain(history);
  });

  it('reports ConcurrentEdit, appending nothing, when retries run out; no applied edit is lost', async () => {
    const results: ControlPlaneResult[] = await Promise.all(
      controlPlanes(1).map((cp, i) => cp.setTierLimit(OPERATOR, { tierId: 'busy', dimension: 'EGRESS', ratePerSecond: 101 + i })),
    );
    const appliedValues = results.flatMap((result, i) => (result.status === 'applied' ? [101 + i] : []));
    for (const result of results) {
      if (result.status === 'failed') expect(result.error.kind).toBe('ConcurrentEdit');
    }
    expect(appliedValues.length).toBeGreaterThan(0);
    const history = await tierHistory('EGRESS');
    expect(history.map((change) => change.value.ratePerSecond).sort()).toEqual(appliedValues.sort());
    expectUnbrokenChain(history);
  });

  /**
   * A client whose every append is preceded by a rival's edit of the same stream: the rival's edit lands between
   * this client's read and its append, the race forced on every attempt (or on the first `racedAttempts`), so a
   * ConcurrentEdit does not depend on how the machine schedules twenty clients.
   */
  function racedControlPlane(options: { maxAttempts: number; racedAttempts: number; rivalValue: (attempt: number) => number }): ControlPlane {
    const rival = createControlPlane(clients[1]!);
    const own = clients[0]!;
    let appends = 0;
    const store = new Proxy(own.store, {
      get(target, property, receiver) {
        if (property !== 'append') return Reflect.get(target, property, receiver) as unknown;
        return async (...args: Parameters<EventStore['append']>) => {
          appends += 1;
          if (appends <= options.racedAttempts) {
            const edit = await rival.setTierLimit(OPERATOR, { tierId: 'busy', dimension: 'PROVISIONING', ratePerSecond: options.rivalValue(appends) });
            expect(edit.status).toBe('applied');
          }
          return target.append(...args);
        };
      },
    });
    return createControlPlane({ db: own.db, store, maxAttempts: options.maxAttempts });
  }

  it('reports ConcurrentEdit, appending nothing, when another edit lands between its read and its append on every attempt', async () => {
    const attempts = 3;
    const raced = racedControlPlane({ maxAttempts: attempts, racedAttempts: Infinity, rivalValue: (attempt) => 500 + attempt });
    const result = await raced.setTierLimit(OPERATOR, { tierId: 'busy', dimension: 'PROVISIONING', ratePerSecond: 999 });
    expect(result.status).toBe('failed');
    if (result.status === 'failed') expect(result.error.kind).toBe('ConcurrentEdit');
    // The rival's three edits are the ledger's history; the raced edit's value is in none of it.
    const history = await tierHistory('PROVISIONING');
    expect(history.map((change) => change.value.ratePerSecond)).toEqual([501, 502, 503]);
    expectUnbrokenChain(history);
  });

  it('decides again on fresh state after a lost race and is applied, naming the rival\'s value as its previous', async () => {
    const raced = racedControlPlane({ maxAttempts: 50, racedAttempts: 1, rivalValue: () => 600 });
    const result = await raced.setTierLimit(OPERATOR, { tierId: 'busy', dimension: 'PROVISIONING', ratePerSecond: 601 });
    expect(result.status).toBe('applied');
    const history = await tierHistory('PROVISIONING');
    expect(history.slice(-2).map((change) => change.value.ratePerSecond)).toEqual([600, 601]);
    expectUnbrokenChain(history);
  });

  it('keeps every one of many different edits to one tenant made at once', async () => {
    const cps = controlPlanes();
    const dimensions = ['INGEST', 'EGRESS', 'AI_INFERENCE', 'PROVISIONING', 'API_REQUESTS'] as const;
    const results = await Promise.all([
      ...dimensions.map((dimension, i) => cps[i]!.setTenantOverride(OPERATOR, { tenantId: 'acme', dimension, ratePerSecond: 10 + i, reason: 'load test' })),
      cps[5]!.setTenantOverride(OPERATOR, { tenantId: 'acme', dimension: 'UNDELIVERED_COMMANDS', ceiling: 42, reason: 'load test' }),
      cps[6]!.assignTenantModel(OPERATOR, { tenantId: 'acme', model: 'gpt-4o-mini' }),
      cps[7]!.setTenantBranding(OPERATOR, { tenantId: 'acme', branding: { productName: 'Acme' } }),
      cps[8]!.setTenantOverLimitPolicy(OPERATOR, { tenantId: 'acme', policy: 'STABLE_DOWNSAMPLE' }),
    ]);
    expect(results.map((result) => result.status)).toEqual(Array(results.length).fill('applied'));
    const events = await clients[0]!.store.readStream('tenant-acme');
    expect(events.map((event) => event.revision)).toEqual(events.map((_, i) => BigInt(i)));
    expect(events.filter((event) => event.type === 'TenantOverrideSet')).toHaveLength(6);
    expect(events.map((event) => event.type)).toEqual(
      expect.arrayContaining(['TenantModelAssigned', 'TenantBrandingSet', 'TenantOverLimitPolicySet']),
    );
  });
});
