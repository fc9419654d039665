// The control plane's surface: the commands that change tiers, tenants and platform settings (createControlPlane
// runs them), the Caller they run for, and the read side other parts use: effective limits and the Governor's
// LimitSource, tenant records, history, time travel and the cascade explained.
export * from './controlPlane.ts';
export * from './controlPlaneCommand.ts';
export * from './effectiveLimits.ts';
export * from './effectiveLimitsAt.ts';
export * from './effectiveLimitTimeline.ts';
export * from './explainCascade.ts';
export * from './limitChanges.ts';
export * from './limitHistory.ts';
export * from './sourceEvents.ts';
export * from './listTiers.ts';
export * from './tenantRecords.ts';
export * from './view.ts';
export { isControlPlaneError } from './validation.ts';
export * from './change-requests/index.ts';
export { checkMode, enforcedPart, type LimitMode, type PromoteShadowLimitInput } from './shadowLimits.ts';
