// SIGKILL a process in the middle of appending: afterwards every batch is all there or not there at all,
// no id is stored twice, each stream's revisions run 0..n-1 without a hole, and the store opens and
// appends again. Runs on a PGlite data directory always, and on PostgreSQL when DATABASE_URL is set.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Db } from '../../../src/db/db.ts';
import { migrate } from '../../../src/db/migrate.ts';
import { openPglite } from '../../../src/db/pglite.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import { postgresOnly } from '../../support/databases.ts';
import { waitFor } from '../../support/waitFor.ts';

const CHILD = fileURLToPath(new URL('../../support/appendLoop.ts', import.meta.url));
// Each kill restarts the child; PGlite's start-up (WASM, reopening the directory) is the slow part.
const KILLS = 2;

interface KilledRun {
  /** Batches whose append() returned before the kill. */
  acknowledged: string[];
  /** True when the kill came between a batch's `begin` and its `done`: inside an append. */
  killedMidAppend: boolean;
}

/** Starts the appending child, waits until it has committed `batches` batches, then SIGKILLs it. */
async function appendUntilKilled(env: Record<string, string>, run: string, batches: number): Promise<KilledRun> {
  // The child picks its storage from `env` alone, never from this process's DATABASE_URL.
  const { DATABASE_URL: _url, GOVERNANCE_DB_SCHEMA: _schema, ...inherited } = process.env;
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD], {
    env: { ...inherited, ...env, FAULT_RUN: run },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let partial = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  let exited = false;
  const closed = new Promise<NodeJS.Signals | null>((resolve) => child.on('close', (_code, signal) => ((exited = true), resolve(signal))));
  const acknowledged = () => lines.filter((line) => line.startsWith('done ')).map((line) => line.slice('done '.length));
  try {
    // Killed once an append has begun (the last line is its `begin`), so the kill lands inside it unless that
    // append finishes in the moment between this check and the signal; killedMidAppend says which happened.
    await waitFor(() => (acknowledged().length >= batches && lines.at(-1)?.startsWith('begin ')) || exited, {
      timeoutMs: 45_000,
      description: `${batches} committed batches and an append under way`,
    });
    if (exited) throw new Error(`the appending child exited on its own: ${stderr}`);
    child.kill('SIGKILL');
    expect(await closed).toBe('SIGKILL');
    return { acknowledged: acknowledged(), killedMidAppend: lines.at(-1)?.startsWith('begin ') ?? false };
  } finally {
    if (!exited) child.kill('SIGKILL');
  }
}

/** The checks after the kills; returns the number of events stored. */
async function expectNoPartialBatch(db: Db, acknowledged: string[]): Promise<number> {
  const batches = await db.query<{ batch: string; size: number; stored: bigint }>(
    `SELECT metadata->>'batch' AS batch, (metadata->>'size')::int AS size, count(*) AS stored
     FROM gl_events WHERE type = 'FaultProbe' GROUP BY 1, 2`,
  );
  for (const row of batches.rows) expect({ batch: row.batch, stored: Number(row.stored) }).toEqual({ batch: row.batch, stored: row.size });
  const storedBatches = new Set(batches.rows.map((row) => row.batch));
  for (const batch of acknowledged) expect(storedBatches.has(batch), `acknowledged batch ${batch} is stored`).toBe(true);

  const ids = await db.query<{ events: bigint; distinct_ids: bigint }>(
    'SELECT count(*) AS events, count(DISTINCT event_id) AS distinct_ids FROM gl_events',
  );
  expect(ids.rows[0]!.distinct_ids).toBe(ids.rows[0]!.events);

  const streams = await db.query<{ stream: string; events: bigint; first: bigint; last: bigint }>(
    'SELECT stream, count(*) AS events, min(revision) AS first, max(revision) AS last FROM gl_events GROUP BY stream',
  );
  for (const row of streams.rows) expect({ stream: row.stream, first: row.first, last: row.last }).toEqual({ stream: row.stream, first: 0n, last: row.events - 1n });
  return Number(ids.rows[0]!.events);
}

async function expectAppendsAgain(db: Db): Promise<void> {
  const store = createPostgresEventStore(db);
  const result = await store.append('fault-0', [{ type: 'AfterCrash', data: {} }]);
  expect((await store.readStream('fault-0', { direction: 'backwards', maxCount: 1 }))[0]!.revision).toBe(result.nextRevision);
  await store.close();
}

describe('appending process killed mid-append', () => {
  // Four PGlite start-ups (set-up, two children, the check) take seconds each on a busy machine.
  it('leaves a PGlite data directory whole and reopenable', { timeout: 150_000 }, async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'gl-append-crash-'));
    try {
      const setup = await openPglite(dir);
      await migrate(setup);
      await setup.close();
      const runs: KilledRun[] = [];
      for (let kill = 0; kill < KILLS; kill++) runs.push(await appendUntilKilled({ PGLITE_DIR: dir }, `pglite${kill}`, 5));
      expect(runs.some((each) => each.killedMidAppend), 'a kill landed inside an append').toBe(true);
      const acknowledged = runs.flatMap((each) => each.acknowledged);

      const db = await openPglite(dir);
      try {
        expect(await expectNoPartialBatch(db, acknowledged)).toBeGreaterThan(0);
        await expectAppendsAgain(db);
      } finally {
        await db.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  describe.skipIf(!postgresOnly)('on PostgreSQL', () => {
    it('leaves no partial batch, no duplicate and no revision hole', async () => {
      const { db, env, dispose } = await postgresOnly!.open();
      const appName = `gl-append-crash-${env!.GOVERNANCE_DB_SCHEMA}`;
      try {
        const runs: KilledRun[] = [];
        for (let kill = 0; kill < KILLS; kill++) runs.push(await appendUntilKilled({ ...env!, PGAPPNAME: appName }, `postgres${kill}`, 10));
        expect(runs.some((each) => each.killedMidAppend), 'a kill landed inside an append').toBe(true);
        const acknowledged = runs.flatMap((each) => each.acknowledged);
        // The server finishes (commits or rolls back) what a dead client left running; wait for that.
        await waitFor(
          async () =>
            (await db.query('SELECT 1 FROM pg_stat_activity WHERE application_name = $1', [appName])).rowCount === 0,
          { description: "the killed children's sessions to end" },
        );
        expect(await expectNoPartialBatch(db, acknowledged)).toBeGreaterThan(0);
        await expectAppendsAgain(db);
      } finally {
        await dispose();
      }
    });
  });
});
