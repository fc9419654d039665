// SIGKILL a process in the middle of projecting, restart it: every event counts exactly once, the read
// model never holds part of a page, and the second process resumes from the first one's checkpoint.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Db } from '../../../src/db/db.ts';
import { migrate } from '../../../src/db/migrate.ts';
import { openPglite } from '../../../src/db/pglite.ts';
import { loadCheckpoint } from '../../../src/ledger/checkpoints.ts';
import { comparePositions } from '../../../src/ledger/eventStore.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import { postgresOnly } from '../../support/databases.ts';
import { appendCounterEvents, countApplications, counterScope, createCounterTables } from '../../support/counterProjection.ts';

const CHILD = fileURLToPath(new URL('./projectionCrash.child.ts', import.meta.url));
const EVENTS = 2_000;
const KILL_AFTER_APPLIED = 200;
const scope = counterScope('crash');

interface ChildRun {
  /** Resolves with the signal or exit code once the child has ended. */
  ended: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(): void;
  output(): string;
}

function runChild(env: Record<string, string>, onApplied?: (applied: number) => void): ChildRun {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD], {
    env: { ...process.env, GOVERNANCE_QUIET_SKIPS: '1', CRASH_SCOPE: scope.name, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
    const last = /applied (\d+)\n$/.exec(output);
    if (last) onApplied?.(Number(last[1]));
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  return {
    ended: new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal }))),
    kill: () => child.kill('SIGKILL'),
    output: () => output,
  };
}

async function applicationsByRun(db: Db) {
  const { rows } = await db.query<{ run: string; n: bigint }>(`SELECT run, count(*) AS n FROM ${scope.applications} GROUP BY run`);
  return Object.fromEntries(rows.map((row) => [row.run, Number(row.n)]));
}

/** The read model must hold exactly the counter events up to the checkpoint: no partial page survives. */
async function expectReadModelMatchesCheckpoint(db: Db) {
  const checkpoint = await loadCheckpoint(db, scope.name);
  const store = createPostgresEventStore(db);
  try {
    const upTo = checkpoint && checkpoint.position !== 'start' ? checkpoint.position : undefined;
    const events = upTo ? await store.readAll('start', EVENTS) : [];
    const covered = events.filter((event) => comparePositions(event.position, upTo!) <= 0 && event.type === scope.incremented).length;
    expect(await countApplications(db, scope)).toEqual({ applications: covered, distinctEvents: covered });
    return covered;
  } finally {
    await store.close();
  }
}

async function killMidProjection(env: Record<string, string>) {
  const child: ChildRun = runChild({ ...env, CRASH_RUN: 'killed', CRASH_PAGE_SIZE: '10' }, (applied) => {
    if (applied >= KILL_AFTER_APPLIED) child.kill();
  });
  const ended = await child.ended;
  expect(ended.signal, child.output()).toBe('SIGKILL');
}

async function resumeToTheEnd(env: Record<string, string>) {
  const child = runChild({ ...env, CRASH_RUN: 'resumed' });
  const ended = await child.ended;
  expect(ended, child.output()).toEqual({ code: 0, signal: null });
}

describe.skipIf(!postgresOnly)('projection crash on postgres', () => {
  it('a projecting process killed mid-way resumes from its checkpoint and counts every event once', async () => {
    const testDb = await postgresOnly!.open();
    const { db } = testDb;
    try {
      await createCounterTables(db, scope);
      const store = createPostgresEventStore(db);
      const counted = await appendCounterEvents(store, scope, EVENTS, { batchSize: 500 });
      await store.close();

      await killMidProjection(testDb.env!);
      const beforeRestart = await expectReadModelMatchesCheckpoint(db);
      expect(beforeRestart).toBeGreaterThanOrEqual(KILL_AFTER_APPLIED);
      expect(beforeRestart).toBeLessThan(counted);

      await resumeToTheEnd(testDb.env!);
      expect(await countApplications(db, scope)).toEqual({ applications: counted, distinctEvents: counted });
      expect(await applicationsByRun(db)).toEqual({ killed: beforeRestart, resumed: counted - beforeRestart });
    } finally {
      await testDb.dispose();
    }
  });
});

if (!postgresOnly) console.warn('DATABASE_URL is not set: the PostgreSQL projection crash test is skipped.');

describe('projection crash on PGlite on disk', () => {
  it('a projecting process killed mid-way resumes from its checkpoint and counts every event once', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'governance-crash-'));
    const env = { GOVERNANCE_DATA_DIR: dataDir, DATABASE_URL: '' };
    const withDb = async <T>(work: (db: Db) => Promise<T>) => {
      const db = await openPglite(dataDir);
      try {
        return await work(db);
      } finally {
        await db.close();
      }
    };
    try {
      const counted = await withDb(async (db) => {
        await migrate(db);
        await createCounterTables(db, scope);
        const store = createPostgresEventStore(db);
        const appended = await appendCounterEvents(store, scope, EVENTS, { batchSize: 500 });
        await store.close();
        return appended;
      });

      await killMidProjection(env);
      const beforeRestart = await withDb(expectReadModelMatchesCheckpoint);
      expect(beforeRestart).toBeGreaterThanOrEqual(KILL_AFTER_APPLIED);
      expect(beforeRestart).toBeLessThan(counted);

      await resumeToTheEnd(env);
      await withDb(async (db) => {
        expect(await countApplications(db, scope)).toEqual({ applications: counted, distinctEvents: counted });
        expect(await applicationsByRun(db)).toEqual({ killed: beforeRestart, resumed: counted - beforeRestart });
      });
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
    // Five PGlite start-ups from disk (three here, one per child): seconds each, far more on a busy machine.
  }, 180_000);
});
