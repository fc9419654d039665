// The ledger tells the same backlog as the guard rows: the command-backlog read model, caught up or rebuilt,
// equals the authoritative count for every tenant. Ceilings come from the control plane, as in the service.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Db } from '../../../src/db/db.ts';
import type { EventStore } from '../../../src/ledger/eventStore.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import { startProjections, type ProjectionSet } from '../../../src/ledger/projectionSet.ts';
import { rebuildProjection } from '../../../src/ledger/rebuild.ts';
import { createControlPlane } from '../../../src/control-plane/controlPlane.ts';
import { controlPlaneProjections } from '../../../projections/controlPlane.ts';
import type { Caller } from '../../../src/control-plane/controlPlaneCommand.ts';
import { createCommandBacklog } from '../../../src/command-backlog/createCommandBacklog.ts';
import { controlPlaneCeilings, loadCommandBacklogs } from '../../../src/command-backlog/ceilings.ts';
import type { CommandBacklog } from '../../../src/command-backlog/types.ts';
import { commandBacklogProjection } from '../../../projections/commandBacklog.ts';
import { describeOnEachStorage, type TestDb } from '../../support/databases.ts';

// Opening a migrated database (PGlite above all) is the slow step on a busy two-core machine.
const OPEN_TIMEOUT_MS = 180_000;

const operator: Caller = { id: 'ops@example.com', role: 'OPERATOR' };
const delivery: Caller = { id: 'svc:command-delivery', role: 'SERVICE' };

async function readModel(db: Db) {
  const { rows } = await db.query<{ tenant_id: string; undelivered: number }>('SELECT tenant_id, undelivered FROM gl_command_backlog_view ORDER BY tenant_id');
  return rows;
}

async function guardCounts(db: Db) {
  const { rows } = await db.query<{ tenant_id: string; undelivered: number }>('SELECT tenant_id, undelivered FROM gl_command_backlog_guard ORDER BY tenant_id');
  return rows;
}

describeOnEachStorage('command backlog read model on $name', (target) => {
  let testDb: TestDb;
  let store: EventStore;
  let projections: ProjectionSet;
  let backlog: CommandBacklog;

  beforeAll(async () => {
    testDb = await target.open();
    store = createPostgresEventStore(testDb.db);
    projections = await startProjections(testDb.db, store, [...controlPlaneProjections(), commandBacklogProjection]);
    const controlPlane = createControlPlane({ db: testDb.db, store });
    const applied = await Promise.all([
      controlPlane.defineTier(operator, { tierId: 'basic', name: 'Basic' }),
      controlPlane.setPlatformDefault(operator, { dimension: 'UNDELIVERED_COMMANDS', ceiling: 7, reason: 'small instance' }),
    ]);
    applied.push(await controlPlane.setTierLimit(operator, { tierId: 'basic', dimension: 'UNDELIVERED_COMMANDS', ceiling: 4, reason: 'launch' }));
    applied.push(await controlPlane.registerTenant(operator, { tenantId: 'acme', tierId: 'basic' }));
    applied.push(await controlPlane.registerTenant(operator, { tenantId: 'globex', tierId: 'basic' }));
    applied.push(await controlPlane.registerTenant(operator, { tenantId: 'initech' }));
    applied.push(
      await controlPlane.setTenantOverride(operator, { tenantId: 'globex', dimension: 'UNDELIVERED_COMMANDS', ceiling: 2, reason: 'pilot' }),
    );
    expect(applied.map((each) => each.status)).toEqual(Array(7).fill('applied'));
    await projections.waitForCaughtUp();
    backlog = createCommandBacklog({ db: testDb.db, store, ceilings: controlPlaneCeilings });
  }, OPEN_TIMEOUT_MS);

  afterAll(async () => {
    await projections.close();
    await store.close();
    await testDb.dispose();
  });

  it('enforces the cascade ceiling and reports the backlog with it', async () => {
    const enqueue = (tenantId: string, commandId: string) => backlog.enqueue(delivery, { tenantId, commandId, deviceId: 'd', payload: { n: 1 } });
    const outcomes = [];
    for (let i = 0; i < 6; i++) outcomes.push(await enqueue('acme', `a${i}`));
    for (let i = 0; i < 3; i++) outcomes.push(await enqueue('globex', `g${i}`));
    outcomes.push(await enqueue('initech', 'i0'));
    outcomes.push(await enqueue('hooli', 'h0'));
    expect(outcomes.map((each) => (each.status === 'rejected' ? each.reason : each.status))).toEqual([
      ...Array(4).fill('accepted'),
      'CEILING_REACHED',
      'CEILING_REACHED',
      'accepted',
      'accepted',
      'CEILING_REACHED',
      'accepted',
      'UNKNOWN_TENANT',
    ]);
    await backlog.markDelivered(delivery, { tenantId: 'acme', commandId: 'a0' });
    await backlog.cancel(delivery, { tenantId: 'globex', commandId: 'g1', reason: 'superseded' });

    const backlogs = await loadCommandBacklogs(testDb.db, ['acme', 'globex', 'initech', 'hooli']);
    expect([...backlogs.values()].sort((a, b) => a.tenantId.localeCompare(b.tenantId))).toEqual([
      { tenantId: 'acme', undelivered: 3, ceiling: 4, source: 'TIER' },
      { tenantId: 'globex', undelivered: 1, ceiling: 2, source: 'TENANT_OVERRIDE' },
      { tenantId: 'initech', undelivered: 1, ceiling: 7, source: 'PLATFORM_DEFAULT' },
    ]);
  });

  it('derives from the ledger exactly the guard count, caught up and after a rebuild', async () => {
    await projections.waitForCaughtUp();
    const caughtUp = await readModel(testDb.db);
    const guard = await guardCounts(testDb.db);
    // The unknown tenant left nothing: no rejection in the ledger, no row in the view, no guard row.
    expect(caughtUp).toEqual(guard);
    expect(caughtUp.map((row) => row.tenant_id)).not.toContain('hooli');

    await rebuildProjection(testDb.db, store, commandBacklogProjection);
    expect(await readModel(testDb.db)).toEqual(caughtUp);
    const totals = await testDb.db.query('SELECT tenant_id, accepted_total, rejected_total, settled_total FROM gl_command_backlog_view ORDER BY tenant_id');
    expect(totals.rows).toEqual([
      { tenant_id: 'acme', accepted_total: 4n, rejected_total: 2n, settled_total: 1n },
      { tenant_id: 'globex', accepted_total: 2n, rejected_total: 1n, settled_total: 1n },
      { tenant_id: 'initech', accepted_total: 1n, rejected_total: 0n, settled_total: 0n },
    ]);
  });

  it('reads several tenants\' ceilings at once exactly as it reads each alone', async () => {
    const tenantIds = ['acme', 'globex', 'initech', 'hooli'];
    const many = await controlPlaneCeilings.many!(testDb.db, tenantIds);
    for (const tenantId of tenantIds) expect(many.get(tenantId) ?? null).toEqual(await controlPlaneCeilings(testDb.db, tenantId));
    expect(many.get('hooli') ?? null).toBeNull();
    expect(many.get('acme')).toMatchObject({ ceiling: expect.any(Number) });
  });
});
