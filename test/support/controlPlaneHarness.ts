// A control plane on a real ledger for integration tests: an isolated migrated database, the PostgreSQL
// event store, a clock the test moves, and (on request) the control-plane projections running.
import type { Caller } from '../../src/control-plane/controlPlaneCommand.ts';
import { createControlPlane, type ControlPlane, type TenantNameConfirmer } from '../../src/control-plane/controlPlane.ts';
import { controlPlaneProjections } from '../../projections/controlPlane.ts';
import type { Db } from '../../src/db/db.ts';
import type { EventStore } from '../../src/ledger/eventStore.ts';
import { createPostgresEventStore } from '../../src/ledger/postgres/postgresEventStore.ts';
import { startProjections, type ProjectionSet } from '../../src/ledger/projectionSet.ts';
import type { StorageTarget, TestDb } from './databases.ts';
import { waitFor } from './waitFor.ts';

export const OPERATOR: Caller = { id: 'alice@ops', role: 'OPERATOR' };

/** Opening an embedded database compiles PGlite's WebAssembly: seconds alone, far longer on a busy machine. */
export const SETUP_TIMEOUT_MS = 180_000;

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
    caughtUp: () => (projections ? caughtUpWithHead(db, projections) : Promise.resolve()),
    async close() {
      await projections?.close();
      await store.close();
      await testDb.dispose();
    },
  };
}

/**
 * Caught up with every event committed before this call. waitForCaughtUp alone can resolve early on a shared
 * PostgreSQL server: reads stop below the oldest open transaction of the whole server (other suites' too),
 * so a pass may find "nothing more" while our last events are still held back. So also wait until every
 * checkpoint has passed the ledger's last committed row.
 */
async function caughtUpWithHead(db: Db, projections: ProjectionSet): Promise<void> {
  const { rows } = await db.query<{ commit: string; prepare: string }>(
    'SELECT tx_id::text AS commit, global_position::text AS prepare FROM gl_events ORDER BY tx_id DESC, global_position DESC LIMIT 1',
  );
  const head = rows[0];
  await waitFor(
    async () => {
      await projections.waitForCaughtUp({ timeoutMs: 20_000 });
      if (!head) return true;
      const names = projections.runners.map((runner) => runner.projection.name);
      const checkpoints = await db.query<{ commit_position: string | null; prepare_position: string | null }>(
        'SELECT commit_position::text, prepare_position::text FROM gl_checkpoints WHERE projection = ANY($1::text[])',
        [names],
      );
      return (
        checkpoints.rows.length === names.length &&
        checkpoints.rows.every(
          (row) =>
            row.commit_position !== null &&
            (BigInt(row.commit_position) > BigInt(head.commit) ||
              (BigInt(row.commit_position) === BigInt(head.commit) && BigInt(row.prepare_position!) >= BigInt(head.prepare))),
        )
      );
    },
    { timeoutMs: 30_000, description: 'control-plane projections past the ledger head' },
  );
}
