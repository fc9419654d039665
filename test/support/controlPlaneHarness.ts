// A control plane on a real ledger for integration tests: an isolated migrated database, the PostgreSQL
// event store, a clock the test moves, and (on request) the control-plane projections running.
import type { Actor } from '../../src/control-plane/actor.ts';
import { createControlPlane, type ControlPlane, type TenantNameConfirmer } from '../../src/control-plane/controlPlane.ts';
import { controlPlaneProjections } from '../../src/control-plane/projections.ts';
import type { Db } from '../../src/db/db.ts';
import type { EventStore } from '../../src/ledger/eventStore.ts';
import { createPostgresEventStore } from '../../src/ledger/postgres/postgresEventStore.ts';
import { startProjections, type ProjectionSet } from '../../src/ledger/projectionSet.ts';
import type { StorageTarget, TestDb } from './databases.ts';

export const OPERATOR: Actor = { id: 'alice@ops', role: 'OPERATOR' };

export interface ControlPlaneHarness {
  testDb: TestDb;
  db: Db;
  store: EventStore;
  controlPlane: ControlPlane;
  clock: { now: Date; advance(ms: number): Date };
  projections?: ProjectionSet;
  caughtUp(): Promise<void>;
  close(): Promise<void>;
}

export async function openControlPlane(
  target: StorageTarget,
  options: { start?: Date; project?: boolean; governor?: TenantNameConfirmer } = {},
): Promise<ControlPlaneHarness> {
  const testDb = await target.open();
  const { db } = testDb;
  const store = createPostgresEventStore(db, { pollIntervalMs: 50 });
  const clock = {
    now: options.start ?? new Date('2026-01-01T00:00:00.000Z'),
    advance(ms: number) {
      clock.now = new Date(clock.now.getTime() + ms);
      return clock.now;
    },
  };
  const controlPlane = createControlPlane({ db, store, now: () => clock.now, ...(options.governor ? { governor: options.governor } : {}) });
  const projections = options.project ? await startProjections(db, store, controlPlaneProjections(options.governor), { retryDelayMs: 50 }) : undefined;
  return {
    testDb,
    db,
    store,
    controlPlane,
    clock,
    ...(projections ? { projections } : {}),
    caughtUp: async () => projections?.waitForCaughtUp({ timeoutMs: 20_000 }),
    async close() {
      await projections?.close();
      await store.close();
      await testDb.dispose();
    },
  };
}
