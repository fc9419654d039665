import type { Db } from '../db/db.ts';
import type { EventStore } from './eventStore.ts';
import type { Projection } from './projection.ts';
import { startProjectionRunner, type ProjectionLag, type ProjectionRunner, type ProjectionRunnerOptions } from './projectionRunner.ts';
import { startProjectionWorker, type PostgresConnection, type ProjectionIsolation } from './projectionWorker.ts';

export interface ProjectionSetOptions extends ProjectionRunnerOptions {
  /**
   * Projections run in worker threads of their own (startProjectionWorker), on the PostgreSQL ledger at
   * `connection`: those named in `projections`, each in a thread started from `entry`.
   */
  workers?: {
    entry: URL;
    connection: PostgresConnection;
    projections: readonly string[];
    /** Worker threads (the default) or child processes (startProjectionWorker's isolation). */
    isolation?: ProjectionIsolation;
    /** Each thread's heap, MB (startProjectionWorker's maxHeapMb). */
    maxHeapMb?: number;
    /** How long a thread's event loop may stay blocked on a page, ms (startProjectionWorker's maxBlockedMs). */
    maxBlockedMs?: number;
  };
}

/** The service's projection workers: one runner per projection, started and stopped together. */
export interface ProjectionSet {
  readonly runners: readonly ProjectionRunner[];
  /** Resolves when every projection has applied everything the ledger held at this call. */
  waitForCaughtUp(options?: { timeoutMs?: number }): Promise<void>;
  lag(): Promise<ProjectionLag[]>;
  close(): Promise<void>;
}

export async function startProjections(
  db: Db,
  store: EventStore,
  projections: readonly Projection[],
  options: ProjectionSetOptions = {},
): Promise<ProjectionSet> {
  const { workers, ...runnerOptions } = options;
  const inWorker = new Set(workers?.projections);
  const names = new Set<string>();
  for (const projection of projections) {
    if (names.has(projection.name)) throw new Error(`two projections are named ${projection.name}`);
    names.add(projection.name);
  }
  // The workers start together (each boots a process or a thread of its own: its start is mostly waiting), while
  // the service's own runners start one after another here.
  const workerStarts = new Map<string, Promise<ProjectionRunner>>();
  if (workers) {
    for (const projection of projections) {
      if (!inWorker.has(projection.name)) continue;
      const started = startProjectionWorker(db, store, projection, {
        ...runnerOptions,
        entry: workers.entry,
        connection: workers.connection,
        isolation: workers.isolation,
        maxHeapMb: workers.maxHeapMb,
        maxBlockedMs: workers.maxBlockedMs,
      });
      started.catch(() => {});
      workerStarts.set(projection.name, started);
    }
  }
  const runners: ProjectionRunner[] = [];
  try {
    for (const projection of projections) runners.push(await (workerStarts.get(projection.name) ?? startProjectionRunner(db, store, projection, runnerOptions)));
  } catch (error) {
    // Every runner that started, the workers that started after the failure too, is stopped.
    const workersStarted = (await Promise.allSettled(workerStarts.values())).flatMap((start) => (start.status === 'fulfilled' ? [start.value] : []));
    await Promise.all([...new Set([...runners, ...workersStarted])].map((runner) => runner.stop()));
    throw error;
  }
  return {
    runners,
    async waitForCaughtUp(waitOptions) {
      await Promise.all(runners.map((runner) => runner.waitForCaughtUp(waitOptions)));
    },
    lag: () => Promise.all(runners.map((runner) => runner.lag())),
    async close() {
      await Promise.all(runners.map((runner) => runner.stop()));
    },
  };
}
