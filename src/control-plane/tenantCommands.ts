// Commands on a tenant's stream: register it (which confirms its name), move it to a tier, set or clear an
// audited override, assign its AI model and branding, and choose its API_REQUESTS over-limit policy.
import type { Branding } from '../ledger/index.ts';
import { tenantStream, tierStream } from '../ledger/index.ts';
import type { ControlPlaneCommand, StreamPlan } from './controlPlaneCommand.ts';
import { controlPlaneError, type ControlPlaneError } from './controlPlaneCommand.ts';
import { overrideApplies, type TenantState } from './state.ts';
import { checkMode, levelValueAfter, type LimitMode } from './shadowLimits.ts';
import {
  checkBranding,
  checkDimension,
  checkExpiresAt,
  checkId,
  checkLimitChange,
  checkLimitClearing,
  checkModel,
  checkOverLimitPolicy,
  checkReason,
  isControlPlaneError,
  type LimitInput,
} from './validation.ts';

export interface RegisterTenantInput {
  tenantId: string;
  /** Absent or null: the tenant starts on the platform defaults. */
  tierId?: string | null;
}

export interface AssignTenantTierInput {
  tenantId: string;
  tierId: string;
  reason?: string | null;
}

export interface SetTenantOverrideInput extends LimitInput {
  tenantId: string;
  dimension: string;
  /** SHADOW: decided beside the enforced limit, refusing nothing (shadowLimits.ts); default ENFORCE. */
  mode?: LimitMode | null;
  reason: string;
  /** ISO 8601 or a Date; the override stops applying at that instant. */
  expiresAt?: string | Date | null;
}

export interface ClearTenantOverrideInput {
  tenantId: string;
  dimension: string;
  reason: string;
}

export interface AssignTenantModelInput {
  tenantId: string;
  /** null: back to the tier's default model. */
  model: string | null;
  reason?: string | null;
}

export interface SetTenantBrandingInput {
  tenantId: string;
  /** null: back to branding.default. */
  branding: Branding | null;
  reason?: string | null;
}

export interface SetTenantOverLimitPolicyInput {
  tenantId: string;
  /** Only API_REQUESTS has a choice of policy; defaults to it. */
  dimension?: string;
  policy: string;
  reason?: string | null;
}

function tenantPlan(input: { tenantId: string }, tierId?: string | null): StreamPlan | ControlPlaneError {
  const badTenant = checkId('tenantId', input.tenantId);
  if (badTenant) return badTenant;
  if (tierId === undefined || tierId === null) return { target: tenantStream(input.tenantId), reads: [], tenantId: input.tenantId };
  return checkId('tierId', tierId) ?? { target: tenantStream(input.tenantId), reads: [tierStream(tierId)], tenantId: input.tenantId };
}

function existingTenant(tenant: TenantState | undefined, tenantId: string): TenantState | ControlPlaneError {
  return tenant ?? controlPlaneError('UnknownTenant', `no tenant ${tenantId} is registered`, 'tenantId');
}

export const registerTenant: ControlPlaneCommand<RegisterTenantInput> = {
  alsoAllowed: 'nobody',
  plan: (input) => tenantPlan(input, input.tierId),
  decide(input, view) {
    if (view.tenant(input.tenantId)) {
      return controlPlaneError('TenantAlreadyRegistered', `tenant ${input.tenantId} is already registered`, 'tenantId');
    }
    const tierId = input.tierId ?? null;
    if (tierId !== null && !view.tier(tierId)) return controlPlaneError('UnknownTier', `no tier ${tierId} is defined`, 'tierId');
    return { event: { type: 'TenantRegistered', data: { tenantId: input.tenantId, tierId } } };
  },
};

export const assignTenantTier: ControlPlaneCommand<AssignTenantTierInput> = {
  alsoAllowed: 'nobody',
  plan: (input) => tenantPlan(input, input.tierId),
  decide(input, view) {
    const tenant = existingTenant(view.tenant(input.tenantId), input.tenantId);
    if (isControlPlaneError(tenant)) return tenant;
    if (!view.tier(input.tierId)) return controlPlaneError('UnknownTier', `no tier ${input.tierId} is defined`, 'tierId');
    const reason = checkReason(input.reason, false);
    if (isControlPlaneError(reason)) return reason;
    return {
      event: { type: 'TenantTierAssigned', data: { tenantId: tenant.tenantId, previousTierId: tenant.tierId, tierId: input.tierId } },
      reason,
    };
  },
};

export const setTenantOverride: ControlPlaneCommand<SetTenantOverrideInput> = {
  alsoAllowed: 'nobody',
  plan: (input) => tenantPlan(input),
  decide(input, view, now) {
    const tenant = existingTenant(view.tenant(input.tenantId), input.tenantId);
    if (isControlPlaneError(tenant)) return tenant;
    const change = checkLimitChange(input, true);
    if (isControlPlaneError(change)) return change;
    const { dimension, value, reason } = change;
    const expiresAt = checkExpiresAt(input.expiresAt, now);
    if (isControlPlaneError(expiresAt)) return expiresAt;
    const mode = checkMode(dimension, input.mode);
    if (isControlPlaneError(mode)) return mode;
    const current = tenant.overrides[dimension];
    const previous = overrideApplies(current, now) ? current : null;
    const stored = levelValueAfter(previous?.value, value, mode);
    return {
      event: { type: 'TenantOverrideSet', data: { tenantId: tenant.tenantId, dimension, previous, value: stored, expiresAt, ...(mode === 'SHADOW' ? { mode } : {}) } },
      reason,
    };
  },
};

export const clearTenantOverride: ControlPlaneCommand<ClearTenantOverrideInput> = {
  alsoAllowed: 'nobody',
  plan: (input) => tenantPlan(input),
  decide(input, view, now) {
    const tenant = existingTenant(view.tenant(input.tenantId), input.tenantId);
    if (isControlPlaneError(tenant)) return tenant;
    const clearing = checkLimitClearing(input, true);
    if (isControlPlaneError(clearing)) return clearing;
    const { dimension, reason } = clearing;
    const current = tenant.overrides[dimension];
    if (!overrideApplies(current, now)) {
      return controlPlaneError('InvalidInput', `tenant ${tenant.tenantId} has no ${dimension} override in force to clear`, 'dimension');
    }
    return { event: { type: 'TenantOverrideCleared', data: { tenantId: tenant.tenantId, dimension, previous: current } }, reason };
  },
};

export const assignTenantModel: ControlPlaneCommand<AssignTenantModelInput> = {
  alsoAllowed: 'nobody',
  plan: (input) => tenantPlan(input),
  decide(input, view) {
    const tenant = existingTenant(view.tenant(input.tenantId), input.tenantId);
    if (isControlPlaneError(tenant)) return tenant;
    const model = checkModel(input.model);
    if (isControlPlaneError(model)) return model;
    const reason = checkReason(input.reason, false);
    if (isControlPlaneError(reason)) return reason;
    return { event: { type: 'TenantModelAssigned', data: { tenantId: tenant.tenantId, previous: tenant.model, model } }, reason };
  },
};

export const setTenantBranding: ControlPlaneCommand<SetTenantBrandingInput> = {
  alsoAllowed: 'tenant-admin',
  plan: (input) => tenantPlan(input),
  decide(input, view) {
    const tenant = existingTenant(view.tenant(input.tenantId), input.tenantId);
    if (isControlPlaneError(tenant)) return tenant;
    const branding = input.branding === null ? null : checkBranding(input.branding);
    if (isControlPlaneError(branding)) return branding;
    const reason = checkReason(input.reason, false);
    if (isControlPlaneError(reason)) return reason;
    return { event: { type: 'TenantBrandingSet', data: { tenantId: tenant.tenantId, previous: tenant.branding, branding } }, reason };
  },
};

export const setTenantOverLimitPolicy: ControlPlaneCommand<SetTenantOverLimitPolicyInput> = {
  alsoAllowed: 'tenant-admin',
  plan: (input) => tenantPlan(input),
  decide(input, view) {
    const tenant = existingTenant(view.tenant(input.tenantId), input.tenantId);
    if (isControlPlaneError(tenant)) return tenant;
    const dimension = checkDimension(input.dimension ?? 'API_REQUESTS');
    if (isControlPlaneError(dimension)) return dimension;
    if (dimension !== 'API_REQUESTS') {
      return controlPlaneError('InvalidInput', `only API_REQUESTS has a choice of over-limit policy, not ${dimension}`, 'dimension');
    }
    const policy = checkOverLimitPolicy(input.policy);
    if (isControlPlaneError(policy)) return policy;
    const reason = checkReason(input.reason, false);
    if (isControlPlaneError(reason)) return reason;
    return {
      event: {
        type: 'TenantOverLimitPolicySet',
        data: { tenantId: tenant.tenantId, dimension, previous: tenant.apiOverLimitPolicy, policy },
      },
      reason,
    };
  },
};
