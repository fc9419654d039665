// The operator-set platform default per dimension, raw as stored: the cascade decides whether a value is
// usable, so nothing here validates it.
import type { Queryable } from '../db/db.ts';
import type { Dimension } from '../governance/index.ts';

export async function loadPlatformDefaults(q: Queryable): Promise<Partial<Record<Dimension, unknown>>> {
  const { rows } = await q.query<{ dimension: Dimension; value: unknown }>('SELECT dimension, value FROM gl_platform_defaults');
  return Object.fromEntries(rows.map((row) => [row.dimension, row.value])) as Partial<Record<Dimension, unknown>>;
}
