// Every change of one tenant's effective limit in one dimension, whatever level caused it: its own override
// set, cleared or lapsed; its tier reassigned; its tier's limit set or cleared; the platform default changed.
// limitHistory lists what each level recorded; this answers what the tenant felt. It replays the ledger (the
// tenant's stream, the platform's, and the stream of every tier the tenant was ever on) and resolves the
// cascade just before and at each event's instant, keeping only the events that moved the effective value.
import { resolveEffectiveLimit } from '../governance/index.ts';
import type { Dimension, LimitSourceLevel, LimitValue } from '../governance/index.ts';
import { PLATFORM_STREAM, tenantStream, tierStream, type ControlPlaneEvent, formatPosition, type EventStore, type RecordedEvent } from '../ledger/index.ts';
import type { NotRegisteredAt } from './effectiveLimitsAt.ts';
import { refOf, type LedgerEventRef } from './sourceEvents.ts';
import { overrideApplies } from './state.ts';
import { asControlPlaneEvent, occurredAt, viewOf, OVERRIDE_EXPIRY_ACTOR, OVERRIDE_EXPIRY_REASON } from './view.ts';

export type TimelineCause =
  | 'TENANT_REGISTERED'
  | 'TENANT_TIER_ASSIGNED'
  | 'OVERRIDE_SET'
  | 'OVERRIDE_CLEARED'
  | 'OVERRIDE_EXPIRED'
  | 'TIER_LIMIT_SET'
  | 'TIER_LIMIT_CLEARED'
  | 'PLATFORM_DEFAULT_SET';

export interface EffectiveLimitChange {
  at: Date;
  cause: TimelineCause;
  /** The effective value just before; null only at registration. */
  previous: LimitValue | null;
  previousSource: LimitSourceLevel | null;
  value: LimitValue;
  /** The level of the cascade that wins from now on. */
  source: LimitSourceLevel;
  tierId: string | null;
  actor: string;
  reason: string | null;
  /** Ledger position of the event that caused it (a lapse: of the event that set the override, with :expired). */
  position: string;
  /** The event that caused it (a lapse: the one that set the override), to prove with ledgerInclusionProof. */
  sourceEvents: LedgerEventRef[];
}

interface Candidate {
  at: Date;
  cause: TimelineCause;
  actor: string;
  reason: string | null;
  position: string;
  source: LedgerEventRef;
}

const CAUSES: Partial<Record<ControlPlaneEvent['type'], TimelineCause>> = {
  TenantRegistered: 'TENANT_REGISTERED',
  TenantTierAssigned: 'TENANT_TIER_ASSIGNED',
  TenantOverrideSet: 'OVERRIDE_SET',
  TenantOverrideCleared: 'OVERRIDE_CLEARED',
  TierLimitSet: 'TIER_LIMIT_SET',
  TierLimitCleared: 'TIER_LIMIT_CLEARED',
  PlatformDefaultSet: 'PLATFORM_DEFAULT_SET',
};

export async function effectiveLimitTimeline(
  store: EventStore,
  query: { tenantId: string; dimension: Dimension; from: Date; to: Date; now?: Date },
): Promise<EffectiveLimitChange[] | NotRegisteredAt> {
  const { tenantId, dimension, from, to } = query;
  const now = query.now ?? new Date();
  const tenantEvents = await store.readStream(tenantStream(tenantId));
  if (!tenantEvents.some((event) => event.type === 'TenantRegistered')) return { notRegistered: true, registeredAt: null };
  const tierIds = new Set<string>();
  for (const event of tenantEvents) {
    const tierId = (event.data as { tierId?: string | null }).tierId;
    if ((event.type === 'TenantRegistered' || event.type === 'TenantTierAssigned') && tierId) tierIds.add(tierId);
  }
  const streams = new Map<string, RecordedEvent[]>([
    [tenantStream(tenantId), tenantEvents],
    [PLATFORM_STREAM, await store.readStream(PLATFORM_STREAM)],
  ]);
  for (const tierId of tierIds) streams.set(tierStream(tierId), await store.readStream(tierStream(tierId)));

  const resolveAt = (at: Date) => {
    const view = viewOf(streams, at);
    const tenant = view.tenant(tenantId);
    if (!tenant) return null;
    const override = tenant.overrides[dimension];
    const tier = tenant.tierId === null ? undefined : view.tier(tenant.tierId);
    const resolved = resolveEffectiveLimit(dimension, {
      override: overrideApplies(override, at) ? override.value : undefined,
      tier: tier?.limits[dimension],
      platformDefault: view.platform.defaults[dimension],
    });
    return { ...resolved, tierId: tenant.tierId };
  };

  const candidates: Candidate[] = [];
  for (const events of streams.values()) {
    for (const stored of events) {
      const event = asControlPlaneEvent(stored);
      const cause = event && CAUSES[event.type];
      if (!event || !cause) continue;
      const eventDimension = (event.data as { dimension?: Dimension }).dimension;
      if (eventDimension !== undefined && eventDimension !== dimension) continue;
      const position = formatPosition(stored.position);
      const source = refOf(stored);
      candidates.push({ at: occurredAt(stored), cause, actor: stored.metadata.actor ?? 'unknown', reason: stored.metadata.reason ?? null, position, source });
      if (event.type === 'TenantOverrideSet' && event.data.expiresAt !== null) {
        candidates.push({
          at: new Date(event.data.expiresAt),
          cause: 'OVERRIDE_EXPIRED',
          actor: OVERRIDE_EXPIRY_ACTOR,
          reason: OVERRIDE_EXPIRY_REASON,
          position: `${position}:expired`,
          source,
        });
      }
    }
  }
  candidates.sort((a, b) => a.at.getTime() - b.at.getTime());

  const changes: EffectiveLimitChange[] = [];
  for (const candidate of candidates) {
    const time = candidate.at.getTime();
    if (time < from.getTime() || time > to.getTime() || time > now.getTime()) continue;
    const before = resolveAt(new Date(time - 1));
    const after = resolveAt(candidate.at);
    if (!after) continue;
    if (before && before.source === after.source && sameValue(before.value, after.value)) continue;
    // Several events at one instant: the last one stands for the change.
    if (changes.at(-1)?.at.getTime() === time) changes.pop();
    changes.push({
      at: candidate.at,
      cause: candidate.cause,
      previous: before?.value ?? null,
      previousSource: before?.source ?? null,
      value: after.value,
      source: after.source,
      tierId: after.tierId,
      actor: candidate.actor,
      reason: candidate.reason,
      position: candidate.position,
      sourceEvents: [candidate.source],
    });
  }
  return changes;
}

function sameValue(a: LimitValue, b: LimitValue): boolean {
  return a.ratePerSecond === b.ratePerSecond && a.burst === b.burst && a.ceiling === b.ceiling;
}
