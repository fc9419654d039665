// A limit in force before first contact (docs/governance-model.md, "When a limit takes effect"). Two halves:
// - at start, every registered tenant's ceilings are read in pages and handed to the Governor before the
//   service is ready, so no registered tenant is metered at the platform default while its read is under way;
// - every committed change to ceilings is announced with NOTIFY on a per-schema channel, sent by the
//   control-plane projection that folded it, inside the transaction that changed the read model: the
//   notification is delivered when (and only when) the new values are readable, to every process listening on
//   the database, whichever process ran the command or the projection. Each listening process reads the
//   tenants concerned again at once.
// A NOTIFY lost while the listening connection was down is covered by a reload of everything once it listens
// again (src/db/postgres.ts calls the listener with an empty payload), and by the Governor's cache TTL.
import type { Db, Queryable } from '../db/db.ts';
import { prepared } from '../db/preparedStatements.ts';
import type { Dimension, LimitReload, TenantGovernanceRecord } from '../governance/index.ts';
import { loadPlatformDefaults, recordOfRow, type GovernanceRow } from './effectiveLimits.ts';
import { layDueChanges, loadDueChanges } from './change-requests/dueChanges.ts';

/** The NOTIFY channel of limit changes, as an SQL expression: per schema, like the ledger's (appendSignal.ts). */
export const LIMITS_CHANNEL_SQL = `left('gl_limits_' || current_schema(), 63)`;

/** Tenants read per query at start. */
export const LIMIT_PRELOAD_PAGE_SIZE = 5_000;

/** What follows limit changes: the service's Governors. */
export interface LimitReloader {
  learnLimits(records: Iterable<TenantGovernanceRecord>, platformDefaults: Partial<Record<Dimension, unknown>>): number;
  reloadLimits(change: LimitReload): void;
}

export function encodeLimitChange(change: LimitReload): string {
  switch (change.kind) {
    case 'tenant':
      return `tenant:${change.tenantId}`;
    case 'tier':
      return `tier:${change.tierId}`;
    default:
      return change.kind;
  }
}

/** Anything else (the empty payload after a reconnect included) asks for everything to be read again. */
export function decodeLimitChange(payload: string): LimitReload {
  if (payload.startsWith('tenant:')) return { kind: 'tenant', tenantId: payload.slice('tenant:'.length) };
  if (payload.startsWith('tier:')) return { kind: 'tier', tierId: payload.slice('tier:'.length) };
  if (payload === 'platform') return { kind: 'platform' };
  return { kind: 'all' };
}

/** Announces a change inside the transaction that made it: delivered at its commit, dropped with its rollback. */
export async function announceLimitChange(tx: Queryable, change: LimitReload): Promise<void> {
  await tx.query(`SELECT pg_notify(${LIMITS_CHANNEL_SQL}, $1)`, [encodeLimitChange(change)]);
}

async function limitsChannel(db: Queryable): Promise<string> {
  const { rows } = await db.query<{ channel: string }>(`SELECT ${LIMITS_CHANNEL_SQL} AS channel`);
  return rows[0]!.channel;
}

// Keyset pages over the tenants' primary key: a page of tenants, then the overrides in force of that page's
// key range in one grouped query; the tier limits once (there are few tiers). Three plain scans instead of two
// correlated subqueries per tenant: on PGlite, where every query shares the service's thread, a page costs a
// fraction of what the per-tenant form did.
const TIER_LIMITS_SQL = prepared('SELECT tier_id, jsonb_object_agg(dimension, value) AS limits FROM gl_tier_limits GROUP BY tier_id');
const TENANT_PAGE_SQL = prepared(`
SELECT tenant_id, tier_id, api_over_limit_policy FROM gl_tenants WHERE tenant_id > $1 ORDER BY tenant_id LIMIT $2`);
const OVERRIDES_SQL = prepared(`
SELECT tenant_id, jsonb_object_agg(dimension, value) AS overrides FROM gl_tenant_overrides
WHERE tenant_id > $1 AND tenant_id <= $2 AND (expires_at IS NULL OR expires_at > $3)
GROUP BY tenant_id`);

type TenantRow = Pick<GovernanceRow, 'tenant_id' | 'tier_id' | 'api_over_limit_policy'>;

export interface LimitPreload {
  tenants: number;
  durationMs: number;
}

export interface LimitFollowing {
  /** What was read at start. */
  preload: LimitPreload;
  /** Whether changes are followed by NOTIFY (false: the LISTEN failed; the Governors' cache TTL still applies). */
  listening: boolean;
  close(): Promise<void>;
}

export interface LimitFollowingOptions {
  pageSize?: number;
  now?: () => Date;
  onError?: (error: unknown) => void;
}

/**
 * Listens for limit changes, then reads every registered tenant's ceilings into `governors`, then applies the
 * changes heard meanwhile (a change applied before the page holding its tenant would be overwritten by older
 * values). Resolves once every tenant is loaded: the service is ready only after.
 */
export async function loadLimitsAndFollowChanges(
  db: Db,
  governors: readonly LimitReloader[],
  { pageSize = LIMIT_PRELOAD_PAGE_SIZE, now = () => new Date(), onError = () => {} }: LimitFollowingOptions = {},
): Promise<LimitFollowing> {
  let heardDuringPreload: LimitReload[] | null = [];
  const apply = (change: LimitReload) => {
    for (const governor of governors) governor.reloadLimits(change);
  };
  let unlisten: (() => Promise<void>) | undefined;
  try {
    unlisten = await db.listen(await limitsChannel(db), (payload) => {
      const change = decodeLimitChange(payload);
      if (heardDuringPreload) heardDuringPreload.push(change);
      else apply(change);
    });
  } catch (error) {
    onError(error);
  }
  const startedMs = performance.now();
  const at = now();
  const platformDefaults = await loadPlatformDefaults(db, at);
  const due = await loadDueChanges(db, at);
  const tierLimits = new Map(
    (await db.query<{ tier_id: string; limits: Record<string, unknown> }>(TIER_LIMITS_SQL)).rows.map((row) => [row.tier_id, row.limits]),
  );
  let tenants = 0;
  let after = '';
  for (;;) {
    const { rows } = await db.query<TenantRow>(TENANT_PAGE_SQL, [after, pageSize]);
    if (rows.length === 0) break;
    const last = rows[rows.length - 1]!.tenant_id;
    const overrides = new Map(
      (await db.query<{ tenant_id: string; overrides: Record<string, unknown> }>(OVERRIDES_SQL, [after, last, at])).rows.map((row) => [row.tenant_id, row.overrides]),
    );
    const records = rows.map((row) =>
      recordOfRow({
        ...row,
        tier_limits: row.tier_id === null ? null : (tierLimits.get(row.tier_id) ?? null),
        overrides: overrides.get(row.tenant_id) ?? null,
        platform_defaults: null,
      }),
    );
    layDueChanges(due, records, {});
    for (const governor of governors) governor.learnLimits(records, platformDefaults);
    tenants += rows.length;
    if (rows.length < pageSize) break;
    after = last;
  }
  const heard = heardDuringPreload;
  heardDuringPreload = null;
  for (const change of heard) apply(change);
  return {
    preload: { tenants, durationMs: Math.round(performance.now() - startedMs) },
    listening: unlisten !== undefined,
    close: async () => {
      await unlisten?.();
    },
  };
}
