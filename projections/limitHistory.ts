// Read model: every limit change with who, why, when, level, and the value before and after; the answer to
// "who changed this limit, from what to what". An override set with an expiry also gets its lapse, a row
// at expires_at (seq 1), taken out again if the override is replaced or cleared before it lapses; readers
// show a lapse once its instant has passed. So the lapse is part of the history without a timer appending
// to the ledger, and a rebuild from the ledger reproduces it exactly. The lapse is the system's doing, not the
// operator's who set the override: it names OVERRIDE_EXPIRY_ACTOR with reason "expired".
import type { Tx } from '../src/db/db.ts';
import type { RecordedEvent, Projection } from '../src/ledger/index.ts';
import { asControlPlaneEvent, enforcedPart, occurredAt, OVERRIDE_EXPIRY_ACTOR, OVERRIDE_EXPIRY_REASON, type LimitChangeKind } from '../src/control-plane/index.ts';

interface HistoryRow {
  seq?: 0 | 1;
  at?: Date;
  kind: LimitChangeKind;
  tenantId?: string;
  tierId?: string | null;
  previousTierId?: string | null;
  dimension?: string;
  previous?: unknown;
  value?: unknown;
  expiresAt?: string | null;
}

export const limitHistoryProjection: Projection = {
  name: 'control-plane-limit-history',
  // 2: a lapse names the system and reason "expired" (1 named the operator who set the override).
  // 3: a change that came from a request (scheduled, or approved by a second operator) names its proposer and
  // approver with their reasons and times (the event's metadata.request).
  version: 3,
  eventTypes: [
    'PlatformDefaultSet',
    'TierLimitSet',
    'TierLimitCleared',
    'TenantRegistered',
    'TenantTierAssigned',
    'TenantOverrideSet',
    'TenantOverrideCleared',
    'TenantOverLimitPolicySet',
  ],
  tables: ['gl_limit_history'],
  async apply(recorded: RecordedEvent, tx: Tx) {
    const event = asControlPlaneEvent(recorded);
    const insert = (row: HistoryRow) => insertRow(tx, recorded, row);
    switch (event?.type) {
      case 'PlatformDefaultSet': {
        const { dimension, previous, value, mode, promoted } = event.data;
        if (mode === 'SHADOW') return insert({ kind: 'PLATFORM_SHADOW_DEFAULT_SET', dimension, previous: previous?.shadow ?? null, value: value.shadow });
        return insert({ kind: promoted ? 'PLATFORM_SHADOW_DEFAULT_PROMOTED' : 'PLATFORM_DEFAULT_SET', dimension, previous: enforcedPart(previous), value: enforcedPart(value) });
      }
      case 'TierLimitSet': {
        const { tierId, dimension, previous, value, mode, promoted } = event.data;
        if (mode === 'SHADOW') return insert({ kind: 'TIER_SHADOW_LIMIT_SET', tierId, dimension, previous: previous?.shadow ?? null, value: value.shadow });
        return insert({ kind: promoted ? 'TIER_SHADOW_LIMIT_PROMOTED' : 'TIER_LIMIT_SET', tierId, dimension, previous: enforcedPart(previous), value: enforcedPart(value) });
      }
      case 'TierLimitCleared': {
        const { tierId, dimension, previous } = event.data;
        return insert({ kind: 'TIER_LIMIT_CLEARED', tierId, dimension, previous });
      }
      case 'TenantRegistered':
        return insert({ kind: 'TENANT_REGISTERED', tenantId: event.data.tenantId, tierId: event.data.tierId });
      case 'TenantTierAssigned': {
        const { tenantId, tierId, previousTierId } = event.data;
        return insert({ kind: 'TENANT_TIER_ASSIGNED', tenantId, tierId, previousTierId });
      }
      case 'TenantOverrideSet': {
        const { tenantId, dimension, previous, value, expiresAt, mode, promoted } = event.data;
        await dropLapsesAfter(tx, tenantId, dimension, occurredAt(recorded));
        if (mode === 'SHADOW') {
          await insert({ kind: 'OVERRIDE_SHADOW_SET', tenantId, dimension, previous: previous?.value.shadow ?? null, value: value.shadow, expiresAt });
        } else {
          const kind = promoted ? 'OVERRIDE_SHADOW_PROMOTED' : 'OVERRIDE_SET';
          await insert({ kind, tenantId, dimension, previous: enforcedPart(previous?.value), value: enforcedPart(value), expiresAt });
        }
        if (expiresAt !== null) {
          await insert({ seq: 1, at: new Date(expiresAt), kind: 'OVERRIDE_EXPIRED', tenantId, dimension, previous: value, expiresAt });
        }
        return;
      }
      case 'TenantOverrideCleared': {
        const { tenantId, dimension, previous } = event.data;
        await dropLapsesAfter(tx, tenantId, dimension, occurredAt(recorded));
        return insert({ kind: 'OVERRIDE_CLEARED', tenantId, dimension, previous: previous.value, expiresAt: previous.expiresAt });
      }
      case 'TenantOverLimitPolicySet': {
        const { tenantId, dimension, previous, policy } = event.data;
        return insert({
          kind: 'OVER_LIMIT_POLICY_SET',
          tenantId,
          dimension,
          previous: previous === null ? null : { policy: previous },
          value: { policy },
        });
      }
    }
  },
};

/** A replaced or cleared override no longer lapses later on: its pending lapse is not history. */
async function dropLapsesAfter(tx: Tx, tenantId: string, dimension: string, at: Date): Promise<void> {
  await tx.query(
    `DELETE FROM gl_limit_history
      WHERE kind = 'OVERRIDE_EXPIRED' AND tenant_id = $1 AND dimension = $2 AND at > $3`,
    [tenantId, dimension, at],
  );
}

async function insertRow(tx: Tx, recorded: RecordedEvent, row: HistoryRow): Promise<void> {
  const json = (value: unknown) => (value === undefined || value === null ? null : JSON.stringify(value));
  await tx.query(
    `INSERT INTO gl_limit_history (commit_position, prepare_position, seq, at, kind, actor, reason, tenant_id, tier_id,
       previous_tier_id, dimension, previous, value, expires_at, approval)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
     ON CONFLICT (commit_position, prepare_position, seq) DO NOTHING`,
    [
      recorded.position.commit.toString(),
      recorded.position.prepare.toString(),
      row.seq ?? 0,
      row.at ?? occurredAt(recorded),
      row.kind,
      row.seq === 1 ? OVERRIDE_EXPIRY_ACTOR : (recorded.metadata.actor ?? 'unknown'),
      row.seq === 1 ? OVERRIDE_EXPIRY_REASON : (recorded.metadata.reason ?? null),
      row.tenantId ?? null,
      row.tierId ?? null,
      row.previousTierId ?? null,
      row.dimension ?? null,
      json(row.previous),
      json(row.value),
      row.expiresAt ?? null,
      row.seq === 1 ? null : json(recorded.metadata.request),
    ],
  );
}
