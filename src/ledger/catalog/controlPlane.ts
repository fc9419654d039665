// Events of the control plane: operator configuration kept in the ledger. Every event names what it changed
// and carries the value before and after, so the history answers "from what to what" without replaying.
// Who and why travel in the event's metadata (actor, reason, occurredAt), set from the caller's identity.
import type { Dimension, LimitValue, OverLimitPolicy } from '../../governance/index.ts';

/** One stream per tenant, one per tier, one for platform-wide settings. */
export const PLATFORM_STREAM = 'platform';
export const tenantStream = (tenantId: string): string => `tenant-${tenantId}`;
export const tierStream = (tierId: string): string => `tier-${tierId}`;

/** How a tenant's product presents itself; the cascade is tenant -> branding.default -> shipped. */
export interface Branding {
  productName: string;
  logoUrl?: string;
  /** `#rrggbb`. */
  primaryColor?: string;
}

/** A tenant override as it stands: the limit and, when it lapses, the instant it stops applying. */
export interface OverrideValue {
  value: LimitValue & { shadow?: LimitValue };
  /** ISO 8601; null when it applies until cleared. */
  expiresAt: string | null;
}

export interface PlatformDefaultSetData extends LimitModeData {
  dimension: Dimension;
  previous: LevelValue | null;
  value: LevelValue;
}

export interface BrandingDefaultSetData {
  previous: Branding | null;
  branding: Branding;
}

export interface TierDefinedData {
  tierId: string;
  name: string;
}

/**
 * How a platform default, a tier limit or an override was set: SHADOW (decided beside the enforced limit, refusing nothing) rides in
 * the level's value as `shadow`, beside the enforced numbers it leaves as they were; `promoted` marks the
 * change that made a level's shadow its enforced limit (promoteShadowLimit). Absent: an enforced limit set.
 */
export interface LimitModeData {
  mode?: 'ENFORCE' | 'SHADOW';
  promoted?: boolean;
}

/** A level's value as stored: the enforced numbers, and the shadow limit set beside them, if any. */
export type LevelValue = LimitValue & { shadow?: LimitValue };

export interface TierLimitSetData extends LimitModeData {
  tierId: string;
  dimension: Dimension;
  previous: LevelValue | null;
  value: LevelValue;
}

export interface TierLimitClearedData {
  tierId: string;
  dimension: Dimension;
  previous: LimitValue;
}

export interface TierDefaultModelSetData {
  tierId: string;
  previous: string | null;
  /** null: the tier no longer names a default model. */
  model: string | null;
}

export interface TenantRegisteredData {
  tenantId: string;
  /** null: the tenant starts on the platform defaults. */
  tierId: string | null;
}

export interface TenantTierAssignedData {
  tenantId: string;
  previousTierId: string | null;
  tierId: string;
}

export interface TenantOverrideSetData extends LimitModeData {
  tenantId: string;
  dimension: Dimension;
  /** The override in force when this one was set (an expired one is not in force). */
  previous: OverrideValue | null;
  value: LevelValue;
  expiresAt: string | null;
}

export interface TenantOverrideClearedData {
  tenantId: string;
  dimension: Dimension;
  previous: OverrideValue;
}

export interface TenantModelAssignedData {
  tenantId: string;
  previous: string | null;
  /** null: the tenant falls back to its tier's default model. */
  model: string | null;
}

export interface TenantBrandingSetData {
  tenantId: string;
  previous: Branding | null;
  /** null: the tenant falls back to branding.default. */
  branding: Branding | null;
}

export interface TenantOverLimitPolicySetData {
  tenantId: string;
  dimension: 'API_REQUESTS';
  previous: OverLimitPolicy | null;
  policy: OverLimitPolicy;
}

export type ControlPlaneEventMap = {
  PlatformDefaultSet: PlatformDefaultSetData;
  BrandingDefaultSet: BrandingDefaultSetData;
  TierDefined: TierDefinedData;
  TierLimitSet: TierLimitSetData;
  TierLimitCleared: TierLimitClearedData;
  TierDefaultModelSet: TierDefaultModelSetData;
  TenantRegistered: TenantRegisteredData;
  TenantTierAssigned: TenantTierAssignedData;
  TenantOverrideSet: TenantOverrideSetData;
  TenantOverrideCleared: TenantOverrideClearedData;
  TenantModelAssigned: TenantModelAssignedData;
  TenantBrandingSet: TenantBrandingSetData;
  TenantOverLimitPolicySet: TenantOverLimitPolicySetData;
};

export type ControlPlaneEventType = keyof ControlPlaneEventMap;

/** A control-plane event as the deciders produce and the folds consume it. */
export type ControlPlaneEvent = {
  [Type in ControlPlaneEventType]: { type: Type; data: ControlPlaneEventMap[Type] };
}[ControlPlaneEventType];

export const CONTROL_PLANE_EVENT_TYPES: readonly ControlPlaneEventType[] = [
  'PlatformDefaultSet',
  'BrandingDefaultSet',
  'TierDefined',
  'TierLimitSet',
  'TierLimitCleared',
  'TierDefaultModelSet',
  'TenantRegistered',
  'TenantTierAssigned',
  'TenantOverrideSet',
  'TenantOverrideCleared',
  'TenantModelAssigned',
  'TenantBrandingSet',
  'TenantOverLimitPolicySet',
];
