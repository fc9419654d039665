// Folds loaded streams into the view deciders and time travel read. An event counts as of its occurredAt
// (the control plane's clock when it decided; the runner keeps it non-decreasing within a stream), so
// "as of an instant" is a prefix of each stream.
import { CONTROL_PLANE_EVENT_TYPES, PLATFORM_STREAM, type ControlPlaneEvent } from '../ledger/index.ts';
import type { RecordedEvent } from '../ledger/index.ts';
import type { ControlPlaneView } from './controlPlaneCommand.ts';
import { EMPTY_PLATFORM, evolvePlatform, evolveTenant, evolveTier, type PlatformState, type TenantState, type TierState } from './state.ts';

/** The kinds of limit change the limit-history read model holds (projections/limitHistory.ts). */
export type LimitChangeKind =
  | 'PLATFORM_DEFAULT_SET'
  | 'TIER_LIMIT_SET'
  | 'TIER_LIMIT_CLEARED'
  | 'TENANT_REGISTERED'
  | 'TENANT_TIER_ASSIGNED'
  | 'OVERRIDE_SET'
  | 'OVERRIDE_CLEARED'
  | 'OVERRIDE_EXPIRED'
  | 'OVER_LIMIT_POLICY_SET'
  // A shadow limit set (mode SHADOW: previous and value are the level's shadow limits), and a level's shadow
  // made its enforced limit (promoteShadowLimit).
  | 'TIER_SHADOW_LIMIT_SET'
  | 'TIER_SHADOW_LIMIT_PROMOTED'
  | 'OVERRIDE_SHADOW_SET'
  | 'OVERRIDE_SHADOW_PROMOTED'
  | 'PLATFORM_SHADOW_DEFAULT_SET'
  | 'PLATFORM_SHADOW_DEFAULT_PROMOTED';

/** The mode of the limit a history entry set: SHADOW for the shadow kinds, ENFORCE for every other. */
export function limitChangeMode(kind: LimitChangeKind): 'ENFORCE' | 'SHADOW' {
  return kind === 'TIER_SHADOW_LIMIT_SET' || kind === 'OVERRIDE_SHADOW_SET' || kind === 'PLATFORM_SHADOW_DEFAULT_SET' ? 'SHADOW' : 'ENFORCE';
}

/** Who an override's lapse names in the limit history: nobody acted, the instant passed. */
export const OVERRIDE_EXPIRY_ACTOR = 'system:override-expiry';
export const OVERRIDE_EXPIRY_REASON = 'expired';

/** The platform setting that holds the operator's default branding (projections/platformSettings.ts). */
export const BRANDING_DEFAULT_KEY = 'branding.default';

/** What a fold needs of a stored event. */
export type StreamEvent = Pick<RecordedEvent, 'stream' | 'type' | 'data' | 'metadata' | 'recordedAt'>;

const CONTROL_PLANE_TYPES = new Set<string>(CONTROL_PLANE_EVENT_TYPES);

export function asControlPlaneEvent(event: Pick<RecordedEvent, 'type' | 'data'>): ControlPlaneEvent | undefined {
  return CONTROL_PLANE_TYPES.has(event.type) ? ({ type: event.type, data: event.data } as ControlPlaneEvent) : undefined;
}

export function occurredAt(event: Pick<RecordedEvent, 'metadata' | 'recordedAt'>): Date {
  const stated = event.metadata.occurredAt;
  return typeof stated === 'string' ? new Date(stated) : event.recordedAt;
}

/**
 * The state of every loaded stream, from each stream's events in revision order, up to (and including)
 * `until` when given. A stream that is not loaded reads as undefined: deciders ask only for what they planned.
 */
export function viewOf(streams: ReadonlyMap<string, readonly StreamEvent[]>, until?: Date): ControlPlaneView {
  let platform: PlatformState = EMPTY_PLATFORM;
  const tiers = new Map<string, TierState | undefined>();
  const tenants = new Map<string, TenantState | undefined>();
  for (const [stream, events] of streams) {
    let tier: TierState | undefined;
    let tenant: TenantState | undefined;
    for (const stored of events) {
      if (until && occurredAt(stored).getTime() > until.getTime()) break;
      const event = asControlPlaneEvent(stored);
      if (!event) continue;
      if (stream === PLATFORM_STREAM) platform = evolvePlatform(platform, event);
      else if (stream.startsWith('tier-')) tier = evolveTier(tier, event);
      else if (stream.startsWith('tenant-')) tenant = evolveTenant(tenant, event);
    }
    if (stream.startsWith('tier-')) tiers.set(stream.slice('tier-'.length), tier);
    if (stream.startsWith('tenant-')) tenants.set(stream.slice('tenant-'.length), tenant);
  }
  return {
    platform,
    tier: (tierId) => tiers.get(tierId),
    tenant: (tenantId) => tenants.get(tenantId),
  };
}
