// What a limit change would have refused over a past range: the recorded demand of every tenant the change
// affects (readDemand.ts), replayed (replayDemand.ts) through the limit proposed and through the limit in
// force now, beside what was refused then (the recorded shed and rejected counts). One dimension, one level:
// a tenant's override, a tier's limit (the tier's tenants whose effective limit it changes) or the platform
// default (every tenant whose effective limit it changes).
import type { Queryable } from '../db/db.ts';
import { loadTenantGovernance } from '../control-plane/index.ts';
import { DIMENSION_CATALOG, DIMENSIONS, resolveEffectiveLimits, validateLimitValue } from '../governance/index.ts';
import type { Dimension, LimitSourceLevel, LimitValue, TenantGovernanceRecord } from '../governance/index.ts';
import { readRecordedDemand } from './readDemand.ts';
import { PreviewSeries, type PreviewPoint } from './previewSeries.ts';
import { cannotRefuse, peakUnits, RefusalTally, replaySeries, type ReplayLimit } from './replayDemand.ts';

/** The range a preview may replay, at most: a month of summaries. */
export const MAX_PREVIEW_DAYS = 31;
/** The range when none is given: the last 7 days. */
export const DEFAULT_PREVIEW_DAYS = 7;
/** Tenants with demand a preview may replay, at most (a tier or the platform with more is refused, not cut). */
export const MAX_PREVIEW_TENANTS = 10_000;
/** Tenants listed by default, and at most (the totals cover every tenant replayed). */
export const DEFAULT_LISTED_TENANTS = 100;
export const MAX_LISTED_TENANTS = 1_000;

const DAY_MS = 86_400_000;

export interface LimitFields {
  dimension: string;
  ratePerSecond?: number | null;
  burst?: number | null;
  ceiling?: number | null;
}

/** The change asked about: exactly one of the three. */
export interface ProposedLimitChange {
  override?: (LimitFields & { tenantId: string }) | null;
  tierLimit?: (LimitFields & { tierId: string }) | null;
  platformDefault?: LimitFields | null;
}

export interface PreviewQuery extends ProposedLimitChange {
  from?: Date | null;
  to?: Date | null;
  /** Tenants listed, most refused first (DEFAULT_LISTED_TENANTS, at most MAX_LISTED_TENANTS). */
  first?: number | null;
  now?: Date;
}

export interface WorstMinute {
  start: Date;
  refusedUnits: number;
}

/** Replayed refusals under one limit. */
export interface RefusalFigures {
  refusedUnits: number;
  refusedMessages: number;
  limitedSeconds: number;
  worstMinute: WorstMinute | null;
}

export interface TenantLimitPreview extends RefusalFigures {
  tenantId: string;
  proposedLimit: LimitValue;
  currentLimit: LimitValue;
  currentSource: LimitSourceLevel;
  /** Units and messages offered over the range (admitted + shed + rejected), as recorded. */
  demandUnits: number;
  demandMessages: number;
  currentRefusedUnits: number;
  currentRefusedMessages: number;
  currentLimitedSeconds: number;
  currentWorstMinute: WorstMinute | null;
  /** What the limits in force then refused, as recorded (shed + rejected). */
  recordedRefusedUnits: number;
  recordedRefusedMessages: number;
}

export interface LimitChangePreview {
  dimension: Dimension;
  from: Date;
  to: Date;
  /** The value proposed at its level, as it would be stored. */
  proposedLimit: LimitValue;
  /** Tenants with recorded demand whose effective limit the change moves (all of them are in `total`). */
  tenantsAffected: number;
  total: Omit<TenantLimitPreview, 'tenantId' | 'proposedLimit' | 'currentLimit' | 'currentSource'>;
  /** The `first` affected tenants, most refused units under the proposed limit first. */
  tenants: TenantLimitPreview[];
  /** The range in buckets of whole minutes, for a chart (previewSeries.ts). */
  series: PreviewPoint[];
}

/** A preview that cannot be answered as asked: which argument, and why. Nothing was read. */
export class InvalidPreview extends Error {
  override readonly name = 'InvalidPreview';
  constructor(
    readonly field: string,
    message: string,
    readonly code: 'INVALID_INPUT' | 'UNKNOWN_TENANT' | 'UNKNOWN_TIER' | 'TOO_LARGE' = 'INVALID_INPUT',
  ) {
    super(message);
  }
}

interface Target {
  level: 'override' | 'tierLimit' | 'platformDefault';
  dimension: Dimension;
  value: LimitValue;
  tenantId?: string;
  tierId?: string;
}

function targetOf(query: ProposedLimitChange): Target {
  const given = (['override', 'tierLimit', 'platformDefault'] as const).filter((level) => query[level] !== undefined && query[level] !== null);
  if (given.length !== 1) throw new InvalidPreview('override', 'give exactly one of override, tierLimit and platformDefault');
  const level = given[0]!;
  const input = query[level]!;
  const dimension = input.dimension as Dimension;
  if (!(DIMENSIONS as readonly string[]).includes(dimension)) throw new InvalidPreview(`${level}.dimension`, `unknown dimension ${JSON.stringify(input.dimension)}`);
  const kind = DIMENSION_CATALOG[dimension].kind;
  if (kind === 'COUNT_CEILING') {
    throw new InvalidPreview(`${level}.dimension`, `${dimension} is a count ceiling, not a rate: the ledger records no demand per second to replay against it`);
  }
  const checked = validateLimitValue(dimension, { ratePerSecond: input.ratePerSecond, burst: input.burst, ceiling: input.ceiling });
  if (!checked.ok) throw new InvalidPreview(`${level}.${checked.field}`, checked.message);
  return {
    level,
    dimension,
    value: checked.value,
    ...('tenantId' in input ? { tenantId: input.tenantId } : {}),
    ...('tierId' in input ? { tierId: input.tierId } : {}),
  };
}

function rangeOf(query: PreviewQuery, now: Date): { from: Date; to: Date } {
  const to = query.to ?? now;
  const from = query.from ?? new Date(to.getTime() - DEFAULT_PREVIEW_DAYS * DAY_MS);
  if (!(from.getTime() < to.getTime())) throw new InvalidPreview('from', 'from must be before to');
  if (to.getTime() - from.getTime() > MAX_PREVIEW_DAYS * DAY_MS) throw new InvalidPreview('to', `a preview replays at most ${MAX_PREVIEW_DAYS} days`);
  return { from, to };
}

/** The tenants whose demand is read: the one overridden, the tier's, or every tenant (null). */
async function candidateTenants(q: Queryable, target: Target): Promise<string[] | null> {
  if (target.level === 'override') {
    const { rows } = await q.query('SELECT 1 FROM gl_tenants WHERE tenant_id = $1', [target.tenantId]);
    if (rows.length === 0) throw new InvalidPreview('override.tenantId', `no tenant ${target.tenantId} is registered`, 'UNKNOWN_TENANT');
    return [target.tenantId!];
  }
  if (target.level === 'tierLimit') {
    const { rows: tier } = await q.query('SELECT 1 FROM gl_tiers WHERE tier_id = $1', [target.tierId]);
    if (tier.length === 0) throw new InvalidPreview('tierLimit.tierId', `no tier ${target.tierId} is defined`, 'UNKNOWN_TIER');
    const { rows } = await q.query<{ tenant_id: string }>('SELECT tenant_id FROM gl_tenants WHERE tier_id = $1 ORDER BY tenant_id LIMIT $2', [
      target.tierId,
      MAX_PREVIEW_TENANTS + 1,
    ]);
    if (rows.length > MAX_PREVIEW_TENANTS) throw tooMany();
    return rows.map((row) => row.tenant_id);
  }
  return null;
}

function tooMany(): InvalidPreview {
  return new InvalidPreview('to', `more than ${MAX_PREVIEW_TENANTS} tenants would be replayed: preview a tier, or a shorter range`, 'TOO_LARGE');
}

/** The tenant's record with the proposed value at the level asked about. */
function proposedRecord(record: TenantGovernanceRecord, target: Target): TenantGovernanceRecord {
  if (target.level === 'platformDefault') return record;
  const levels = { ...record.levels, [target.dimension]: { ...record.levels[target.dimension], [target.level === 'override' ? 'override' : 'tier']: target.value } };
  return { ...record, levels };
}

function limitFor(dimension: Dimension, value: LimitValue): ReplayLimit {
  const kind = DIMENSION_CATALOG[dimension].kind === 'FIXED_WINDOW' ? 'FIXED_WINDOW' : 'TOKEN_BUCKET';
  return { kind, ratePerSecond: value.ratePerSecond!, burst: value.burst ?? value.ratePerSecond! };
}

const sameLimit = (a: LimitValue, b: LimitValue) => a.ratePerSecond === b.ratePerSecond && a.burst === b.burst && a.ceiling === b.ceiling;

export async function previewLimitChange(q: Queryable, query: PreviewQuery): Promise<LimitChangePreview> {
  const now = query.now ?? new Date();
  const target = targetOf(query);
  const { from, to } = rangeOf(query, now);
  const first = Math.min(MAX_LISTED_TENANTS, Math.max(0, Math.floor(query.first ?? DEFAULT_LISTED_TENANTS)));
  const candidates = await candidateTenants(q, target);
  const demand = await readRecordedDemand(q, { dimension: target.dimension, tenantIds: candidates, from, to });
  if (demand.size > MAX_PREVIEW_TENANTS) throw tooMany();
  const { tenants: records, platformDefaults } = await loadTenantGovernance(q, [...demand.keys()], now);
  const proposedDefaults = target.level === 'platformDefault' ? { ...platformDefaults, [target.dimension]: target.value } : platformDefaults;

  const previews: TenantLimitPreview[] = [];
  const totalProposed = new RefusalTally();
  const totalCurrent = new RefusalTally();
  let demandUnits = 0;
  let demandMessages = 0;
  let recordedRefusedUnits = 0;
  let recordedRefusedMessages = 0;
  // The seconds readRecordedDemand reads: [floor(from), ceil(to)).
  const series = new PreviewSeries(Math.floor(from.getTime() / 1000), Math.ceil(to.getTime() / 1000));
  for (const [tenantId, byAllowance] of demand) {
    const record = records.get(tenantId);
    // Demand of a name the control plane does not know (an unconfirmed HTTP name): no level of it can change.
    if (record === undefined) continue;
    const current = resolveEffectiveLimits(record, platformDefaults).find((limit) => limit.dimension === target.dimension)!;
    const proposed = resolveEffectiveLimits(proposedRecord(record, target), proposedDefaults).find((limit) => limit.dimension === target.dimension)!;
    if (sameLimit(current.value, proposed.value)) continue;
    const proposedTally = new RefusalTally();
    const currentTally = new RefusalTally();
    const proposedLimit = limitFor(target.dimension, proposed.value);
    const currentLimit = limitFor(target.dimension, current.value);
    let tenantUnits = 0;
    let tenantMessages = 0;
    let tenantRefusedUnits = 0;
    let tenantRefusedMessages = 0;
    for (const recorded of byAllowance.values()) {
      const peak = peakUnits(recorded);
      if (!cannotRefuse(proposedLimit, peak)) replaySeries(recorded, proposedLimit, proposedTally);
      if (!cannotRefuse(currentLimit, peak)) replaySeries(recorded, currentLimit, currentTally);
      series.addDemand(recorded);
      for (let i = 0; i < recorded.seconds.length; i++) {
        tenantUnits += recorded.units[i]!;
        tenantMessages += recorded.messages[i]!;
        tenantRefusedUnits += recorded.refusedUnits[i]!;
        tenantRefusedMessages += recorded.refusedMessages[i]!;
      }
    }
    addInto(totalProposed, proposedTally);
    addInto(totalCurrent, currentTally);
    demandUnits += tenantUnits;
    demandMessages += tenantMessages;
    recordedRefusedUnits += tenantRefusedUnits;
    recordedRefusedMessages += tenantRefusedMessages;
    previews.push({
      tenantId,
      proposedLimit: proposed.value,
      currentLimit: current.value,
      currentSource: current.source,
      demandUnits: Math.round(tenantUnits),
      demandMessages: Math.round(tenantMessages),
      ...figures(proposedTally),
      ...currentFigures(currentTally),
      recordedRefusedUnits: Math.round(tenantRefusedUnits),
      recordedRefusedMessages: Math.round(tenantRefusedMessages),
    });
  }
  series.addRefused(totalProposed.byMinute, totalCurrent.byMinute);
  previews.sort((a, b) => b.refusedUnits - a.refusedUnits || b.refusedMessages - a.refusedMessages || (a.tenantId < b.tenantId ? -1 : 1));
  return {
    dimension: target.dimension,
    from,
    to,
    proposedLimit: target.value,
    tenantsAffected: previews.length,
    total: {
      demandUnits: Math.round(demandUnits),
      demandMessages: Math.round(demandMessages),
      ...figures(totalProposed),
      ...currentFigures(totalCurrent),
      recordedRefusedUnits: Math.round(recordedRefusedUnits),
      recordedRefusedMessages: Math.round(recordedRefusedMessages),
    },
    tenants: previews.slice(0, first),
    series: series.points(),
  };
}

function addInto(total: RefusalTally, tally: RefusalTally): void {
  total.refusedUnits += tally.refusedUnits;
  total.refusedMessages += tally.refusedMessages;
  total.limitedSeconds += tally.limitedSeconds;
  for (const [minute, units] of tally.byMinute) total.byMinute.set(minute, (total.byMinute.get(minute) ?? 0) + units);
}

function worst(tally: RefusalTally): WorstMinute | null {
  const minute = tally.worstMinute();
  return minute === null ? null : { start: new Date(minute.start * 1000), refusedUnits: Math.round(minute.refusedUnits) };
}

function figures(tally: RefusalTally): RefusalFigures {
  return {
    refusedUnits: Math.round(tally.refusedUnits),
    refusedMessages: Math.round(tally.refusedMessages),
    limitedSeconds: tally.limitedSeconds,
    worstMinute: worst(tally),
  };
}

function currentFigures(tally: RefusalTally) {
  const { refusedUnits, refusedMessages, limitedSeconds, worstMinute } = figures(tally);
  return { currentRefusedUnits: refusedUnits, currentRefusedMessages: refusedMessages, currentLimitedSeconds: limitedSeconds, currentWorstMinute: worstMinute };
}
