// Time travel: the effective limits of a tenant as of a past instant, answered from the ledger itself.
// The tenant's stream says which tier it was on and which overrides applied then (an override whose
// expiresAt had passed did not); that tier's and the platform's streams say what they set then; the
// governance library's cascade resolves them exactly as it resolves today's limits.
import { DIMENSIONS, resolveEffectiveLimits } from '../governance/index.ts';
import type { Dimension, LimitLevels } from '../governance/index.ts';
import { PLATFORM_STREAM, tenantStream, tierStream } from '../ledger/index.ts';
import type { EventStore, RecordedEvent } from '../ledger/index.ts';
import type { TenantEffectiveLimits } from './effectiveLimits.ts';
import { overrideApplies } from './state.ts';
import { decidingEvents, type LedgerEventRef } from './sourceEvents.ts';
import { occurredAt, viewOf } from './view.ts';

/** Why there are no limits for that instant: the tenant was registered only later, or never. */
export interface NotRegisteredAt {
  notRegistered: true;
  /** When the tenant was registered (after the instant asked about); null when it never was. */
  registeredAt: Date | null;
}

/** Each limit names the ledger events that decide it (sourceEvents.ts), so an auditor can prove them. */
export interface TenantEffectiveLimitsAt extends TenantEffectiveLimits {
  sourceEvents: Partial<Record<Dimension, LedgerEventRef[]>>;
}

export async function effectiveLimitsAt(store: EventStore, tenantId: string, at: Date): Promise<TenantEffectiveLimitsAt | NotRegisteredAt> {
  const tenantEvents = await store.readStream(tenantStream(tenantId));
  const tenant = viewOf(new Map([[tenantStream(tenantId), tenantEvents]]), at).tenant(tenantId);
  if (!tenant) {
    const registration = tenantEvents.find((event) => event.type === 'TenantRegistered');
    return { notRegistered: true, registeredAt: registration ? occurredAt(registration) : null };
  }
  const streams = new Map<string, RecordedEvent[]>([[PLATFORM_STREAM, await store.readStream(PLATFORM_STREAM)]]);
  if (tenant.tierId !== null) streams.set(tierStream(tenant.tierId), await store.readStream(tierStream(tenant.tierId)));
  const view = viewOf(streams, at);
  const tier = tenant.tierId === null ? undefined : view.tier(tenant.tierId);
  const levels: Partial<Record<Dimension, LimitLevels>> = {};
  for (const dimension of DIMENSIONS) {
    const override = tenant.overrides[dimension];
    levels[dimension] = {
      override: overrideApplies(override, at) ? override.value : undefined,
      tier: tier?.limits[dimension],
      platformDefault: view.platform.defaults[dimension],
    };
  }
  streams.set(tenantStream(tenantId), tenantEvents);
  const limits = resolveEffectiveLimits(levels);
  const sourceEvents: TenantEffectiveLimitsAt['sourceEvents'] = {};
  for (const limit of limits) {
    sourceEvents[limit.dimension] = decidingEvents(streams, { tenantId, tierId: tenant.tierId, dimension: limit.dimension, source: limit.source, at });
  }
  return { tenantId, tierId: tenant.tierId, limits, sourceEvents };
}
