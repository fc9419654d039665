// Commands on a tier's stream: define it, set or clear its limit per dimension, name its default AI model.
import { tierStream } from '../ledger/index.ts';
import type { ControlPlaneCommand, StreamPlan } from './controlPlaneCommand.ts';
import { controlPlaneError, type ControlPlaneError } from './controlPlaneCommand.ts';
import type { TierState } from './state.ts';
import { checkMode, levelValueAfter, type LimitMode } from './shadowLimits.ts';
import { textProblem } from '../db/storableValues.ts';
import { checkId, checkLimitChange, checkLimitClearing, checkModel, checkReason, isControlPlaneError, type LimitInput } from './validation.ts';

const TIER_NAME_MAX_CHARS = 200;

export interface DefineTierInput {
  tierId: string;
  name: string;
}

export interface SetTierLimitInput extends LimitInput {
  tierId: string;
  dimension: string;
  /** SHADOW: decided beside the enforced limit, refusing nothing (shadowLimits.ts); default ENFORCE. */
  mode?: LimitMode | null;
  reason?: string | null;
}

export interface ClearTierLimitInput {
  tierId: string;
  dimension: string;
  reason?: string | null;
}

export interface SetTierDefaultModelInput {
  tierId: string;
  /** null: the tier no longer names a default model. */
  model: string | null;
  reason?: string | null;
}

function tierPlan(input: { tierId: string }): StreamPlan | ControlPlaneError {
  return checkId('tierId', input.tierId) ?? { target: tierStream(input.tierId), reads: [] };
}

function existingTier(tier: TierState | undefined, tierId: string): TierState | ControlPlaneError {
  return tier ?? controlPlaneError('UnknownTier', `no tier ${tierId} is defined`, 'tierId');
}

export const defineTier: ControlPlaneCommand<DefineTierInput> = {
  alsoAllowed: 'nobody',
  plan: tierPlan,
  decide(input, view) {
    if (view.tier(input.tierId)) return controlPlaneError('TierAlreadyDefined', `tier ${input.tierId} is already defined`, 'tierId');
    const name = typeof input.name === 'string' ? input.name.trim() : '';
    if (name === '' || name.length > TIER_NAME_MAX_CHARS) {
      return controlPlaneError('InvalidInput', `a tier's name is 1 to ${TIER_NAME_MAX_CHARS} characters`, 'name');
    }
    const unstorable = textProblem(name, "the tier's name");
    if (unstorable) return controlPlaneError('InvalidInput', unstorable, 'name');
    return { event: { type: 'TierDefined', data: { tierId: input.tierId, name } } };
  },
};

export const setTierLimit: ControlPlaneCommand<SetTierLimitInput> = {
  alsoAllowed: 'nobody',
  plan: tierPlan,
  decide(input, view) {
    const tier = existingTier(view.tier(input.tierId), input.tierId);
    if (isControlPlaneError(tier)) return tier;
    const change = checkLimitChange(input, false);
    if (isControlPlaneError(change)) return change;
    const { dimension, value, reason } = change;
    const mode = checkMode(dimension, input.mode);
    if (isControlPlaneError(mode)) return mode;
    const previous = tier.limits[dimension] ?? null;
    const stored = levelValueAfter(previous, value, mode);
    return { event: { type: 'TierLimitSet', data: { tierId: tier.tierId, dimension, previous, value: stored, ...(mode === 'SHADOW' ? { mode } : {}) } }, reason };
  },
};

export const clearTierLimit: ControlPlaneCommand<ClearTierLimitInput> = {
  alsoAllowed: 'nobody',
  plan: tierPlan,
  decide(input, view) {
    const tier = existingTier(view.tier(input.tierId), input.tierId);
    if (isControlPlaneError(tier)) return tier;
    const clearing = checkLimitClearing(input, false);
    if (isControlPlaneError(clearing)) return clearing;
    const { dimension, reason } = clearing;
    const previous = tier.limits[dimension];
    if (!previous) return controlPlaneError('InvalidInput', `tier ${tier.tierId} sets no ${dimension} limit to clear`, 'dimension');
    return { event: { type: 'TierLimitCleared', data: { tierId: tier.tierId, dimension, previous } }, reason };
  },
};

export const setTierDefaultModel: ControlPlaneCommand<SetTierDefaultModelInput> = {
  alsoAllowed: 'nobody',
  plan: tierPlan,
  decide(input, view) {
    const tier = existingTier(view.tier(input.tierId), input.tierId);
    if (isControlPlaneError(tier)) return tier;
    const model = checkModel(input.model);
    if (isControlPlaneError(model)) return model;
    const reason = checkReason(input.reason, false);
    if (isControlPlaneError(reason)) return reason;
    return { event: { type: 'TierDefaultModelSet', data: { tierId: tier.tierId, previous: tier.defaultModel, model } }, reason };
  },
};
