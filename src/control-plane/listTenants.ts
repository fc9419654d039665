// A page of tenants in id order; the cursor is the last tenant id of the page.
import type { Queryable } from '../db/db.ts';
import { TENANT_COLUMNS, toTenantRecord, type TenantRecord, type TenantRow } from './loadTenants.ts';

export interface Page<Node> {
  nodes: Node[];
  hasNextPage: boolean;
  endCursor: string | null;
}

export const MAX_PAGE_SIZE = 500;

export function pageSize(first: number | undefined, fallback = 50): number {
  if (first === undefined) return fallback;
  if (!Number.isInteger(first) || first < 0 || first > MAX_PAGE_SIZE) {
    throw new RangeError(`first must be a whole number from 0 to ${MAX_PAGE_SIZE}, got ${first}`);
  }
  return first;
}

/** `search` keeps the tenants whose id contains it, ignoring case. */
export async function listTenants(
  q: Queryable,
  options: { first?: number; after?: string | null; search?: string | null } = {},
): Promise<Page<TenantRecord>> {
  const first = pageSize(options.first);
  const { rows } = await q.query<TenantRow>(
    `SELECT ${TENANT_COLUMNS} FROM gl_tenants
      WHERE ($1::text IS NULL OR tenant_id > $1) AND ($3::text IS NULL OR strpos(lower(tenant_id), lower($3)) > 0)
      ORDER BY tenant_id LIMIT $2`,
    [options.after ?? null, first + 1, options.search || null],
  );
  const nodes = rows.slice(0, first).map(toTenantRecord);
  return { nodes, hasNextPage: rows.length > first, endCursor: nodes.at(-1)?.tenantId ?? null };
}
