// Which projections run in workers of their own (processes or threads) on a PostgreSQL ledger, and where such a
// worker starts.
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { PostgresConnection, Projection, ProjectionIsolation, ProjectionSetOptions } from '../src/ledger/index.ts';
import { packagePath } from '../src/packageRoot.ts';
import { admissionTrendsProjection } from './admissionTrends.ts';
import { admissionDemandProjection } from './admissionDemand.ts';

/**
 * The admission trends and the per-second demand: at tens of thousands of active tenants, parsing and merging
 * their summaries was the work that held the admitting thread's event loop longest (src/ledger/projectionWorker.ts
 * says why a thread helps).
 * Only projections without dependencies on the service's objects can run in a thread: it builds its own.
 */
export const WORKER_PROJECTIONS: readonly Projection[] = [admissionTrendsProjection, admissionDemandProjection];

/** The thread's module: this folder's worker.ts from the sources, the bundle's projection-worker.js once built. */
export function projectionWorkerEntry(): URL {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.ts')) return new URL('./worker.ts', import.meta.url);
  return pathToFileURL(packagePath('dist', 'service', 'projection-worker.js'));
}

/** startProjections' `workers` option: WORKER_PROJECTIONS in workers of their own on the PostgreSQL ledger at `connection`. */
export function projectionWorkers(
  connection: PostgresConnection,
  limits: { isolation?: ProjectionIsolation; maxHeapMb?: number; maxBlockedMs?: number } = {},
): NonNullable<ProjectionSetOptions['workers']> {
  return { entry: projectionWorkerEntry(), connection, projections: WORKER_PROJECTIONS.map((projection) => projection.name), ...limits };
}
