// A real SQL-backed CeilingSource for the commands suites, until the control plane's read model is wired
// in: one row per known tenant; no row means an unknown tenant.
import type { Queryable } from '../../../src/db/db.ts';
import type { CeilingSource } from '../../../src/command-backlog/types.ts';
import type { LimitSourceLevel } from '../../../src/governance/index.ts';

export async function createCeilingTable(db: Queryable): Promise<void> {
  await db.query(`CREATE TABLE IF NOT EXISTS test_command_ceilings (
    tenant_id text PRIMARY KEY, ceiling integer NOT NULL, source text NOT NULL)`);
}

export async function setCeiling(db: Queryable, tenantId: string, ceiling: number, source: LimitSourceLevel = 'TIER'): Promise<void> {
  await db.query(
    `INSERT INTO test_command_ceilings (tenant_id, ceiling, source) VALUES ($1, $2, $3)
     ON CONFLICT (tenant_id) DO UPDATE SET ceiling = EXCLUDED.ceiling, source = EXCLUDED.source`,
    [tenantId, ceiling, source],
  );
}

export const tableCeilings: CeilingSource = async (q, tenantId) => {
  const { rows } = await q.query<{ ceiling: number; source: LimitSourceLevel }>(
    'SELECT ceiling, source FROM test_command_ceilings WHERE tenant_id = $1',
    [tenantId],
  );
  return rows[0] ?? null;
};

/** The same table, with the batch form: several tenants' ceilings in one query. */
export const tableCeilingsOfMany: CeilingSource = Object.assign((q: Queryable, tenantId: string) => tableCeilings(q, tenantId), {
  many: async (q: Queryable, tenantIds: readonly string[]) => {
    const { rows } = await q.query<{ tenant_id: string; ceiling: number; source: LimitSourceLevel }>(
      'SELECT tenant_id, ceiling, source FROM test_command_ceilings WHERE tenant_id = ANY($1::text[])',
      [tenantIds],
    );
    return new Map(rows.map(({ tenant_id, ceiling, source }) => [tenant_id, { ceiling, source }]));
  },
});
