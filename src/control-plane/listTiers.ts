// Every tier with its limits and default model, one query, in id order.
import type { Queryable } from '../db/db.ts';
import type { Dimension } from '../governance/index.ts';

export interface TierRecord {
  tierId: string;
  name: string;
  defaultModel: string | null;
  /** As set (raw); resolution through the cascade validates them. */
  limits: Partial<Record<Dimension, unknown>>;
  definedAt: Date;
}

interface Row {
  tier_id: string;
  name: string;
  default_model: string | null;
  limits: Record<string, unknown> | null;
  defined_at: Date;
}

export async function listTiers(q: Queryable, tierIds?: readonly string[]): Promise<TierRecord[]> {
  const { rows } = await q.query<Row>(
    `SELECT t.tier_id, t.name, t.default_model, t.defined_at,
       (SELECT jsonb_object_agg(l.dimension, l.value) FROM gl_tier_limits l WHERE l.tier_id = t.tier_id) AS limits
     FROM gl_tiers t WHERE ($1::text[] IS NULL OR t.tier_id = ANY($1::text[]))
     ORDER BY t.tier_id`,
    [tierIds ? [...tierIds] : null],
  );
  return rows.map((row) => ({
    tierId: row.tier_id,
    name: row.name,
    defaultModel: row.default_model,
    limits: (row.limits ?? {}) as Partial<Record<Dimension, unknown>>,
    definedAt: new Date(row.defined_at),
  }));
}
