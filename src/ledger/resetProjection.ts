import type { Queryable } from '../db/db.ts';
import { quoteIdent } from '../db/postgres.ts';
import type { Projection } from './projection.ts';
import { storeCheckpoint, type StoredCheckpoint } from './checkpoints.ts';
import { clearQuarantine } from './quarantine.ts';

/**
 * Empties the projection's read model and moves its checkpoint to the start for the projection's
 * version, in the caller's transaction, only if the checkpoint is still `expected`: when two runners of a
 * new version start together, one resets and the other (its compare-and-set failing) must not truncate
 * what the first has begun to rebuild. Returns whether it reset.
 */
export async function resetProjection(tx: Queryable, projection: Projection, expected: StoredCheckpoint): Promise<boolean> {
  const reset = await storeCheckpoint(tx, expected, { projection: projection.name, version: projection.version, position: 'start' });
  if (reset) await truncateReadModel(tx, projection);
  return reset;
}

/** Empties the read model and the projection's quarantine (the replay sets aside again what it still cannot apply). */
export async function truncateReadModel(tx: Queryable, projection: Projection): Promise<void> {
  await clearQuarantine(tx, projection.name);
  if (projection.tables.length === 0) return;
  await tx.query(`TRUNCATE ${projection.tables.map(quoteTableName).join(', ')}`);
}

function quoteTableName(table: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/.test(table)) {
    throw new Error(`read-model table name ${JSON.stringify(table)} is not a plain (optionally schema-qualified) identifier`);
  }
  return table.split('.').map(quoteIdent).join('.');
}
