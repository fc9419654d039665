// Shadow limits on the control plane's side: a platform default, a tier limit or an override set with mode SHADOW is stored in the
// level's value as `shadow`, beside the enforced numbers it leaves as they were, so every read model, the
// LimitSource and time travel carry it without a table of their own; the cascade reads only the enforced
// numbers (an unusable level, such as one holding only a shadow, is skipped), and the Governor decides the
// shadow beside them (src/governance, resolveShadowLimit). promoteShadowLimit makes a level's shadow its
// enforced limit.
import { DIMENSION_CATALOG } from '../governance/index.ts';
import type { Dimension, LimitValue } from '../governance/index.ts';
import { PLATFORM_STREAM, tenantStream, tierStream, type LevelValue } from '../ledger/index.ts';
import type { ControlPlaneCommand } from './controlPlaneCommand.ts';
import { controlPlaneError, type ControlPlaneError } from './controlPlaneCommand.ts';
import { overrideApplies } from './state.ts';
import { checkDimension, checkId, checkReason, isControlPlaneError } from './validation.ts';

export type LimitMode = 'ENFORCE' | 'SHADOW';

/** The mode a limit is set in (ENFORCE when not given); SHADOW only on rate dimensions (a count ceiling is not decided per request). */
export function checkMode(dimension: Dimension, mode: unknown): LimitMode | ControlPlaneError {
  if (mode === undefined || mode === null || mode === 'ENFORCE') return 'ENFORCE';
  if (mode !== 'SHADOW') return controlPlaneError('InvalidInput', 'mode must be ENFORCE or SHADOW', 'mode');
  if (DIMENSION_CATALOG[dimension].kind === 'COUNT_CEILING') {
    return controlPlaneError('InvalidInput', `${dimension} has no shadow limits: only rate dimensions (INGEST, EGRESS, AI_INFERENCE, PROVISIONING, API_REQUESTS) do`, 'mode');
  }
  return 'SHADOW';
}

/** The enforced numbers of a stored level value, without its shadow; null when it holds only a shadow. */
export function enforcedPart(value: LevelValue | null | undefined): LimitValue | null {
  if (!value) return null;
  const { shadow: _shadow, ...enforced } = value;
  return Object.keys(enforced).length === 0 ? null : enforced;
}

/** The level's value after `value` is set in `mode`: a shadow keeps the enforced numbers, an enforced value keeps the shadow. */
export function levelValueAfter(previous: LevelValue | null | undefined, value: LimitValue, mode: LimitMode): LevelValue {
  if (mode === 'SHADOW') return { ...enforcedPart(previous), shadow: value };
  return previous?.shadow ? { ...value, shadow: previous.shadow } : value;
}

export interface PromoteShadowLimitInput {
  /** The tier whose shadow limit becomes enforced; or tenantId, for an override's; or platform, for the platform default's. */
  tierId?: string | null;
  tenantId?: string | null;
  platform?: boolean | null;
  dimension: string;
  reason?: string | null;
}

export const promoteShadowLimit: ControlPlaneCommand<PromoteShadowLimitInput> = {
  alsoAllowed: 'nobody',
  plan(input) {
    const tier = typeof input.tierId === 'string';
    const tenant = typeof input.tenantId === 'string';
    const platform = input.platform === true;
    if (Number(tier) + Number(tenant) + Number(platform) !== 1) return controlPlaneError('InvalidInput', 'give exactly one of tierId, tenantId and platform: true', 'tierId');
    if (platform) return { target: PLATFORM_STREAM, reads: [] };
    if (tier) return checkId('tierId', input.tierId) ?? { target: tierStream(input.tierId!), reads: [] };
    return checkId('tenantId', input.tenantId) ?? { target: tenantStream(input.tenantId!), reads: [], tenantId: input.tenantId! };
  },
  decide(input, view, now) {
    const dimension = checkDimension(input.dimension);
    if (isControlPlaneError(dimension)) return dimension;
    const reason = checkReason(input.reason, typeof input.tenantId === 'string');
    if (isControlPlaneError(reason)) return reason;
    if (input.platform === true) {
      const previous = view.platform.defaults[dimension];
      if (!previous?.shadow) return controlPlaneError('InvalidInput', `the platform default of ${dimension} has no shadow limit to promote`, 'dimension');
      return { event: { type: 'PlatformDefaultSet', data: { dimension, previous, value: previous.shadow, mode: 'ENFORCE', promoted: true } }, reason };
    }
    if (typeof input.tierId === 'string') {
      const tier = view.tier(input.tierId);
      if (!tier) return controlPlaneError('UnknownTier', `no tier ${input.tierId} is defined`, 'tierId');
      const previous = tier.limits[dimension];
      if (!previous?.shadow) return controlPlaneError('InvalidInput', `tier ${tier.tierId} has no ${dimension} shadow limit to promote`, 'dimension');
      return { event: { type: 'TierLimitSet', data: { tierId: tier.tierId, dimension, previous, value: previous.shadow, mode: 'ENFORCE', promoted: true } }, reason };
    }
    const tenant = view.tenant(input.tenantId!);
    if (!tenant) return controlPlaneError('UnknownTenant', `no tenant ${input.tenantId} is registered`, 'tenantId');
    const current = tenant.overrides[dimension];
    if (!overrideApplies(current, now) || !current.value.shadow) {
      return controlPlaneError('InvalidInput', `tenant ${tenant.tenantId} has no ${dimension} shadow override in force to promote`, 'dimension');
    }
    return {
      event: {
        type: 'TenantOverrideSet',
        data: { tenantId: tenant.tenantId, dimension, previous: current, value: current.value.shadow, expiresAt: current.expiresAt, mode: 'ENFORCE', promoted: true },
      },
      reason,
    };
  },
};
