// The governance library's surface: everything the doors, the control plane, the ledger, the metrics and the
// service use of it. Code outside src/governance imports this file only (npm run deps checks it); the other
// files here are the library's insides and may change shape without notice.

// The vocabulary: dimensions, allowances, limit values, the LimitSource and Recorder ports.
export * from './types.ts';
// What each dimension is and how its limits are validated and resolved through the cascade.
export * from './dimensions.ts';
export * from './cascade.ts';
// Period quotas: the value a level may set, its cascade and periods, and the notices of thresholds reached.
export * from './quotaValue.ts';
export { DEFAULT_QUOTA_THRESHOLDS } from './quotaMeter.ts';
export type { QuotaBudget, QuotaGrant, QuotaReserveRequest, QuotaThresholdCrossing } from './quotaMeter.ts';

// Deciding admissions.
export { Governor, InvalidAdmission } from './governor.ts';
export type { AdmitBehaviour, AdmitDecision, AdmitRequest, GovernorOptions, GovernorStats } from './governor.ts';
export { HeldCharge } from './heldCharge.ts';
export type { ChargeOutcome, DecidedCharge } from './heldCharge.ts';
export { OVERFLOW_TENANT_ID } from './tenantNames.ts';
/** The (dimension, allowance) pairs the Governor meters: doors that map their own names onto them use these. */
export { SLOTS, slotIndexOf } from './slots.ts';
export type { SlotSpec } from './slots.ts';

// Recording decisions and sharing counters across replicas.
export { fanOutRecorder } from './recorders.ts';
export type { ReserveRequest, SharedBudget } from './sharedCounting.ts';
// Loaded when counters are shared (REDIS_URL): ioredis would otherwise cost every start of a lone replica.
export const loadRedisSharedBudget = () => import('./redis/redisSharedBudget.ts');
export type { RedisSharedBudget, RedisSharedBudgetOptions } from './redis/redisSharedBudget.ts';

// Limiters for use outside the Governor (the edge limit per client address, the limit preview's replay).
export { TokenBucket } from './tokenBucket.ts';
// The fixed window, for replaying recorded demand through the same arithmetic (src/limit-preview).
export { FixedWindow } from './fixedWindow.ts';
export { stableCallerFraction } from './callerHash.ts';
