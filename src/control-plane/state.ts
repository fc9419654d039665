// The state of each stream, folded from its events. Deciders decide on it; time travel folds the same
// events up to an instant. One fold per stream kind, so "what the ledger says" has one definition.
import type { Branding, ControlPlaneEvent, LevelValue, OverrideValue } from '../ledger/index.ts';
import type { Dimension, OverLimitPolicy } from '../governance/index.ts';

export interface PlatformState {
  /** As stored: the enforced numbers and any shadow limit beside them (shadowLimits.ts). */
  defaults: Partial<Record<Dimension, LevelValue>>;
  brandingDefault: Branding | null;
}

export interface TierState {
  tierId: string;
  name: string;
  /** As stored: the enforced numbers and any shadow limit beside them (shadowLimits.ts). */
  limits: Partial<Record<Dimension, LevelValue>>;
  defaultModel: string | null;
}

export interface TenantState {
  tenantId: string;
  tierId: string | null;
  /** Overrides as set, expired ones included: whether one applies depends on the instant asked about. */
  overrides: Partial<Record<Dimension, OverrideValue>>;
  model: string | null;
  branding: Branding | null;
  apiOverLimitPolicy: OverLimitPolicy | null;
}

export const EMPTY_PLATFORM: PlatformState = { defaults: {}, brandingDefault: null };

export function evolvePlatform(state: PlatformState, event: ControlPlaneEvent): PlatformState {
  switch (event.type) {
    case 'PlatformDefaultSet':
      return { ...state, defaults: { ...state.defaults, [event.data.dimension]: event.data.value } };
    case 'BrandingDefaultSet':
      return { ...state, brandingDefault: event.data.branding };
    default:
      return state;
  }
}

/** undefined: the tier has not been defined. */
export function evolveTier(state: TierState | undefined, event: ControlPlaneEvent): TierState | undefined {
  if (event.type === 'TierDefined') return { tierId: event.data.tierId, name: event.data.name, limits: {}, defaultModel: null };
  if (!state) return state;
  switch (event.type) {
    case 'TierLimitSet':
      return { ...state, limits: { ...state.limits, [event.data.dimension]: event.data.value } };
    case 'TierLimitCleared': {
      const limits = { ...state.limits };
      delete limits[event.data.dimension];
      return { ...state, limits };
    }
    case 'TierDefaultModelSet':
      return { ...state, defaultModel: event.data.model };
    default:
      return state;
  }
}

/** undefined: the tenant has not been registered. */
export function evolveTenant(state: TenantState | undefined, event: ControlPlaneEvent): TenantState | undefined {
  if (event.type === 'TenantRegistered') {
    return {
      tenantId: event.data.tenantId,
      tierId: event.data.tierId,
      overrides: {},
      model: null,
      branding: null,
      apiOverLimitPolicy: null,
    };
  }
  if (!state) return state;
  switch (event.type) {
    case 'TenantTierAssigned':
      return { ...state, tierId: event.data.tierId };
    case 'TenantOverrideSet':
      return {
        ...state,
        overrides: { ...state.overrides, [event.data.dimension]: { value: event.data.value, expiresAt: event.data.expiresAt } },
      };
    case 'TenantOverrideCleared': {
      const overrides = { ...state.overrides };
      delete overrides[event.data.dimension];
      return { ...state, overrides };
    }
    case 'TenantModelAssigned':
      return { ...state, model: event.data.model };
    case 'TenantBrandingSet':
      return { ...state, branding: event.data.branding };
    case 'TenantOverLimitPolicySet':
      return { ...state, apiOverLimitPolicy: event.data.policy };
    default:
      return state;
  }
}

/** An override applies strictly before its expiresAt: at that instant it has lapsed. */
export function overrideApplies(override: OverrideValue | undefined, at: Date): override is OverrideValue {
  return override !== undefined && (override.expiresAt === null || Date.parse(override.expiresAt) > at.getTime());
}
