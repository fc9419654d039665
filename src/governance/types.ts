// Shared vocabulary of governance. Every enforcement point, the control plane, the ledger catalog and the
// API speak these names; they are a contract (docs/governance-model.md) and must not be renamed.

export const DIMENSIONS = [
  'INGEST',
  'EGRESS',
  'AI_INFERENCE',
  'PROVISIONING',
  'UNDELIVERED_COMMANDS',
  'API_REQUESTS',
] as const;
export type Dimension = (typeof DIMENSIONS)[number];

export const ALLOWANCES = [
  'LIVE',
  'BACKLOG',
  'HTTP',
  'INTEGRATIONS',
  'LWM2M',
  'SPARKPLUG',
  'DETECTION',
  'CONNECTORS',
] as const;
export type Allowance = (typeof ALLOWANCES)[number];

/**
 * What a tenant or tier ID may be: a letter or digit, then up to 63 letters, digits, '_', '.', ':' or '-'.
 * IDs name streams and URL path segments; the control plane refuses any other, and the front doors answer
 * 404 to a path naming one (it could never be a tenant, so it costs no state).
 */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;

/** The calendar periods a quota counts over (quotaValue.ts). */
export const QUOTA_PERIODS = ['DAY', 'MONTH'] as const;
export type QuotaPeriod = (typeof QUOTA_PERIODS)[number];

/** A quota over a calendar period, as a level of the cascade sets it (checked by validateQuota). */
export interface QuotaValue {
  period: QuotaPeriod;
  /** Units one period allows, in the dimension's unit (readings, actions, requests). */
  limit: number;
  /** MONTH: the day of the month (1 to 28) a period starts on. DAY: always 1. */
  resetDay: number;
  /** IANA time zone the period's midnight is in ('UTC' when not given). */
  timeZone: string;
}

/** Which level of the cascade supplied a value. */
export type LimitSourceLevel = 'TENANT_OVERRIDE' | 'TIER' | 'PLATFORM_DEFAULT' | 'SHIPPED_DEFAULT';

/** What happens to traffic over the limit. */
export type OverLimitBehaviour = 'SHED' | 'REJECT' | 'STABLE_DOWNSAMPLE' | 'DROP_ACCEPTED';

/** API_REQUESTS over-limit policy a tenant may choose (OpenRUM). */
export type OverLimitPolicy = 'EXACT_REJECT' | 'STABLE_DOWNSAMPLE';

/** Why an admission was metered at the platform default. */
export type UnresolvedCause = 'pending' | 'unreachable' | 'unknown-tenant';

/**
 * A limit as configured. Rate dimensions use ratePerSecond + burst; UNDELIVERED_COMMANDS uses ceiling;
 * API_REQUESTS uses ratePerSecond (a fixed one-second window). Values read from storage are `unknown`
 * until the cascade has validated them: nothing outside the cascade trusts a stored number.
 */
export interface LimitValue {
  ratePerSecond?: number;
  burst?: number;
  ceiling?: number;
  /**
   * A quota over a calendar period beside the rate (quotaValue.ts). A level may set it alone: the rate then
   * falls through to the level below, as the quota does where a level sets none.
   */
  quota?: QuotaValue;
}

/** The raw, unvalidated contents of each configurable level for one dimension. */
export interface LimitLevels {
  override?: unknown;
  tier?: unknown;
  platformDefault?: unknown;
}

export interface EffectiveLimit {
  dimension: Dimension;
  value: LimitValue;
  source: LimitSourceLevel;
  /** The shadow limit watching this dimension (mode SHADOW: decided beside `value`, refusing nothing), if any. */
  shadow?: { value: LimitValue; source: LimitSourceLevel };
}

/** Everything the Governor needs to know about one tenant, as the control plane holds it. */
export interface TenantGovernanceRecord {
  tenantId: string;
  tierId: string | null;
  levels: Partial<Record<Dimension, LimitLevels>>;
  apiOverLimitPolicy?: OverLimitPolicy;
}

/**
 * Port through which the Governor learns ceilings. Implemented by the control plane's read models.
 * - loadTenants: a tenant absent from the returned map does not exist (unknown-tenant);
 *   a rejected promise means the source is unreachable.
 * - loadPlatformDefaults: the operator-set platform defaults (raw, validated by the cascade).
 */
export interface LimitSource {
  loadTenants(tenantIds: readonly string[]): Promise<ReadonlyMap<string, TenantGovernanceRecord>>;
  loadPlatformDefaults(): Promise<Partial<Record<Dimension, unknown>>>;
}

/**
 * A committed change to ceilings, as the control plane announces it (src/control-plane/limitChanges.ts): one
 * tenant's own record (registration, tier, override, policy), a tier's limits (every tenant on it), the
 * platform defaults (every tenant), or `all` when announcements may have been missed (a lost LISTEN).
 */
export type LimitReload = { kind: 'tenant'; tenantId: string } | { kind: 'tier'; tierId: string } | { kind: 'platform' } | { kind: 'all' };

/** Admissions of one (tenant, dimension, allowance) key over a span of whole seconds. */
export interface AdmissionSummary {
  tenantId: string;
  dimension: Dimension;
  allowance: Allowance | null;
  /** Unix seconds of the first second covered. */
  fromSecond: number;
  /**
   * How many seconds the span covers: at most the flush interval for the Governor's own summaries (tallies.ts),
   * at most 60 within one minute for a leasing client's (doors/leases/leaseSummary.ts).
   */
  seconds: number;
  admittedUnits: number;
  admittedMessages: number;
  shedUnits: number;
  shedMessages: number;
  rejectedUnits: number;
  rejectedMessages: number;
  /**
   * Charged, then refused because the sender's credential failed (the ingest door charges readings before it
   * checks the key; docs/governance-model.md): neither admitted nor a limit hit. Absent in summaries recorded before
   * it was counted, and from recorders that never see a credential (leasing clients): read as 0.
   */
  unauthenticatedUnits?: number;
  unauthenticatedMessages?: number;
  /**
   * What a shadow limit (mode SHADOW, decided beside the enforced one, refusing nothing) would have refused:
   * units and messages, whatever the enforced limit decided. Absent when it would have refused nothing, and
   * in summaries recorded before shadow limits: read as 0.
   */
  shadowLimitedUnits?: number;
  shadowLimitedMessages?: number;

  /**
   * Of the rejected above, refused for the tenant's period quota (not its rate): a part of rejectedUnits and
   * rejectedMessages, so sums of rejected stay whole. Absent in summaries recorded before quotas: read as 0.
   */
  quotaRejectedUnits?: number;
  quotaRejectedMessages?: number;
  /** Seconds within the span in which the limit was hit. */
  hitSeconds: number;
  /**
   * Set by a sender that may send the same summary again (a leasing client after a lost answer): the ledger
   * Recorder stores it in an event of its own whose id follows from this one, so it is stored once. Not a
   * column of the summary table.
   */
  id?: string;
}

/** Traffic admitted at the platform default because the tenant's ceilings were not known. */
export interface UnresolvedAdmissionSummary {
  tenantId: string;
  dimension: Dimension;
  cause: UnresolvedCause;
  fromSecond: number;
  seconds: number;
  units: number;
  messages: number;
}

/**
 * Port through which the Governor hands off its per-second aggregates, in batches. A failed record() keeps the
 * batch for the next try; a Recorder that stored part of it before failing says which part by throwing
 * RecordedInPart, and only the rest is kept.
 */
export interface Recorder {
  /**
   * `batchId` names the batch: when a record fails, the Governor offers the same batch, unchanged, under the
   * same id until it is taken, so a recorder of record can store it exactly once (the ledger derives its
   * event ids from it) even when a failure hid a commit. After RecordedInPart the rest is offered under a new id.
   */
  record(admissions: readonly AdmissionSummary[], unresolved: readonly UnresolvedAdmissionSummary[], batchId?: string): Promise<void>;
  /**
   * Present when the recorder keeps nothing of a batch's summaries once its record() resolved, or lets go of
   * them here: the Governor calls it when a batch was taken, and then makes those summary objects again for
   * later batches (fewer new objects for the garbage collector: Tallies' spare summaries). Without it, every
   * batch's summaries are new objects.
   */
  released?(admissions: readonly AdmissionSummary[]): void;
}

/** record() stored these summaries (the very objects it was given) and then failed on the rest. */
export class RecordedInPart extends Error {
  override readonly name = 'RecordedInPart';
  constructor(
    readonly admissions: ReadonlySet<AdmissionSummary>,
    readonly unresolved: ReadonlySet<UnresolvedAdmissionSummary>,
    override readonly cause: unknown,
  ) {
    super(`recorded ${admissions.size + unresolved.size} summaries, then failed: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
}
