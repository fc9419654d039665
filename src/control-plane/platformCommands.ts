// Commands on the platform stream: the operator-set platform default per dimension, and branding.default.
import type { Branding } from '../ledger/index.ts';
import { PLATFORM_STREAM } from '../ledger/index.ts';
import type { ControlPlaneCommand } from './controlPlaneCommand.ts';
import { checkMode, levelValueAfter, type LimitMode } from './shadowLimits.ts';
import { checkBranding, checkLimitChange, checkReason, isControlPlaneError, type LimitInput } from './validation.ts';

export interface SetPlatformDefaultInput extends LimitInput {
  dimension: string;
  /** SHADOW: decided beside the enforced default, refusing nothing (shadowLimits.ts); default ENFORCE. */
  mode?: LimitMode | null;
  reason?: string | null;
}

export interface SetBrandingDefaultInput {
  branding: Branding;
  reason?: string | null;
}

const platformPlan = () => ({ target: PLATFORM_STREAM, reads: [] });

export const setPlatformDefault: ControlPlaneCommand<SetPlatformDefaultInput> = {
  alsoAllowed: 'nobody',
  plan: platformPlan,
  decide(input, view) {
    const change = checkLimitChange(input, false);
    if (isControlPlaneError(change)) return change;
    const { dimension, value, reason } = change;
    const mode = checkMode(dimension, input.mode);
    if (isControlPlaneError(mode)) return mode;
    const previous = view.platform.defaults[dimension] ?? null;
    const stored = levelValueAfter(previous, value, mode);
    return { event: { type: 'PlatformDefaultSet', data: { dimension, previous, value: stored, ...(mode === 'SHADOW' ? { mode } : {}) } }, reason };
  },
};

export const setBrandingDefault: ControlPlaneCommand<SetBrandingDefaultInput> = {
  alsoAllowed: 'nobody',
  plan: platformPlan,
  decide(input, view) {
    const branding = checkBranding(input.branding);
    if (isControlPlaneError(branding)) return branding;
    const reason = checkReason(input.reason, false);
    if (isControlPlaneError(reason)) return reason;
    return { event: { type: 'BrandingDefaultSet', data: { previous: view.platform.brandingDefault, branding } }, reason };
  },
};
