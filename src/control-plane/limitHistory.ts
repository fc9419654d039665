// The audit trail of limit changes, newest first, one query per page. Each change names the ledger
// position of the event it comes from; an override's lapse (OVERRIDE_EXPIRED) names the position of the
// event that set the override, with ":expired" after it, and appears once its instant has passed.
import type { Queryable } from '../db/db.ts';
import type { Dimension, LimitValue, OverLimitPolicy } from '../governance/index.ts';
import { limitChangeMode, type LimitChangeKind } from './view.ts';
import { pageSize, type Page } from './tenantRecords.ts';
import type { RequestOrigin } from './change-requests/runRequests.ts';

export interface LimitChange {
  /** Also the pagination cursor. */
  position: string;
  at: Date;
  kind: LimitChangeKind;
  /** SHADOW: the change set a shadow limit (previous and value are shadow limits). */
  mode: 'ENFORCE' | 'SHADOW';
  actor: string;
  reason: string | null;
  tenantId: string | null;
  tierId: string | null;
  previousTierId: string | null;
  dimension: Dimension | null;
  previous: LimitValue | null;
  value: LimitValue | null;
  /** OVER_LIMIT_POLICY_SET only. */
  previousPolicy: OverLimitPolicy | null;
  policy: OverLimitPolicy | null;
  expiresAt: Date | null;
  /** Set when the change came from a request: scheduled, or approved by a second operator (change-requests/). */
  approval: RequestOrigin | null;
}

export interface LimitHistoryQuery {
  tenantId?: string | null;
  tierId?: string | null;
  dimension?: Dimension | null;
  first?: number;
  after?: string | null;
  /** Lapses after this instant have not happened yet. */
  now?: Date;
}

interface Row {
  commit_position: bigint | string;
  prepare_position: bigint | string;
  seq: number;
  at: Date;
  kind: LimitChangeKind;
  actor: string;
  reason: string | null;
  tenant_id: string | null;
  tier_id: string | null;
  previous_tier_id: string | null;
  dimension: Dimension | null;
  previous: Record<string, unknown> | null;
  value: Record<string, unknown> | null;
  expires_at: Date | null;
  approval: RequestOrigin | null;
}

const LAPSE_SUFFIX = ':expired';

const SQL = `
SELECT commit_position, prepare_position, seq, at, kind, actor, reason, tenant_id, tier_id, previous_tier_id,
       dimension, previous, value, expires_at, approval
FROM gl_limit_history h
WHERE h.at <= $1
  AND ($2::text IS NULL OR h.tenant_id = $2)
  AND ($3::text IS NULL OR h.tier_id = $3)
  AND ($4::text IS NULL OR h.dimension = $4)
  AND ($5::bigint IS NULL OR (h.at, h.commit_position, h.prepare_position, h.seq) <
       (SELECT c.at, c.commit_position, c.prepare_position, c.seq FROM gl_limit_history c
         WHERE c.commit_position = $5::bigint AND c.prepare_position = $6::bigint AND c.seq = $7::smallint))
ORDER BY h.at DESC, h.commit_position DESC, h.prepare_position DESC, h.seq DESC
LIMIT $8`;

export async function limitHistory(q: Queryable, query: LimitHistoryQuery = {}): Promise<Page<LimitChange>> {
  const first = pageSize(query.first);
  const cursor = query.after ? parseCursor(query.after) : null;
  if (cursor === undefined) throw new RangeError(`limit history cursor ${JSON.stringify(query.after)} is not a position this history returned`);
  const { rows } = await q.query<Row>(SQL, [
    query.now ?? new Date(),
    query.tenantId ?? null,
    query.tierId ?? null,
    query.dimension ?? null,
    cursor?.commit ?? null,
    cursor?.prepare ?? null,
    cursor?.seq ?? null,
    first + 1,
  ]);
  const nodes = rows.slice(0, first).map(toLimitChange);
  return { nodes, hasNextPage: rows.length > first, endCursor: nodes.at(-1)?.position ?? null };
}

/** Whether `text` is a position this history hands out (what `after` may be). */
export function isLimitHistoryPosition(text: string): boolean {
  return parseCursor(text) !== undefined;
}

const MAX_BIGINT = 2n ** 63n - 1n;

function parseCursor(text: string): { commit: string; prepare: string; seq: number } | undefined {
  const match = /^(\d{1,19}):(\d{1,19})(:expired)?$/.exec(text);
  if (!match || BigInt(match[1]!) > MAX_BIGINT || BigInt(match[2]!) > MAX_BIGINT) return undefined;
  return { commit: match[1]!, prepare: match[2]!, seq: match[3] ? 1 : 0 };
}

function toLimitChange(row: Row): LimitChange {
  const isPolicy = row.kind === 'OVER_LIMIT_POLICY_SET';
  return {
    position: `${row.commit_position}:${row.prepare_position}${row.seq === 1 ? LAPSE_SUFFIX : ''}`,
    at: new Date(row.at),
    kind: row.kind,
    mode: limitChangeMode(row.kind),
    actor: row.actor,
    reason: row.reason,
    tenantId: row.tenant_id,
    tierId: row.tier_id,
    previousTierId: row.previous_tier_id,
    dimension: row.dimension,
    previous: isPolicy ? null : (row.previous as LimitValue | null),
    value: isPolicy ? null : (row.value as LimitValue | null),
    previousPolicy: isPolicy ? ((row.previous?.policy as OverLimitPolicy | undefined) ?? null) : null,
    policy: isPolicy ? ((row.value?.policy as OverLimitPolicy | undefined) ?? null) : null,
    expiresAt: row.expires_at === null ? null : new Date(row.expires_at),
    approval: row.approval ?? null,
  };
}
