import type { Db } from '../db/db.ts';
import type { EventStore } from './eventStore.ts';
import type { Projection } from './projection.ts';
import { startProjectionRunner, type ProjectionLag, type ProjectionRunner, type ProjectionRunnerOptions } from './projectionRunner.ts';

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
  options?: ProjectionRunnerOptions,
): Promise<ProjectionSet> {
  const names = new Set<string>();
  for (const projection of projections) {
    if (names.has(projection.name)) throw new Error(`two projections are named ${projection.name}`);
    names.add(projection.name);
  }
  const runners: ProjectionRunner[] = [];
  try {
    for (const projection of projections) runners.push(await startProjectionRunner(db, store, projection, options));
  } catch (error) {
    await Promise.all(runners.map((runner) => runner.stop()));
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
