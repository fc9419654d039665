// The read side the API serves, in the shapes its types resolve. Every function delegates to the part that
// owns the read model (control plane, commands); this file only adapts shapes, so a change there is absorbed
// here and not in every type file.
import type { Queryable } from '../db/db.ts';
import { acceptLimit, DIMENSIONS } from '../governance/index.ts';
import type { Dimension, EffectiveLimit, LimitValue } from '../governance/index.ts';
import type { EventStore } from '../ledger/eventStore.ts';
import { effectiveLimitsAt as replayEffectiveLimits, type NotRegisteredAt } from '../control-plane/effectiveLimitsAt.ts';
import { limitHistory as readLimitHistory, type LimitChange } from '../control-plane/limitHistory.ts';
import { listTenants as readTenantPage, type Page } from '../control-plane/listTenants.ts';
import { listTiers as readTiers } from '../control-plane/listTiers.ts';
import { loadEffectiveLimits as readEffectiveLimits, type TenantEffectiveLimits } from '../control-plane/loadEffectiveLimits.ts';
import { loadOverrides as readOverrides } from '../control-plane/loadOverrides.ts';
import { loadTenants as readTenants, type TenantRecord } from '../control-plane/loadTenants.ts';
import { loadCommandBacklogs as readCommandBacklogs, type TenantCommandBacklog } from '../command-backlog/loadCommandBacklogs.ts';
import { resolveTenantModels, type TenantModel } from '../control-plane/resolveTenantModels.ts';
import { resolveTenantBrandings, type TenantBranding } from '../control-plane/resolveTenantBrandings.ts';

export type { Page, TenantRecord, LimitChange as LimitChangeRecord, TenantCommandBacklog as BacklogRecord, TenantModel, TenantBranding };

export interface TierRecord {
  tierId: string;
  name: string;
  limits: Array<{ dimension: Dimension; value: LimitValue }>;
}

export interface OverrideRecord {
  dimension: Dimension;
  value: LimitValue;
  expiresAt: Date | null;
}

/** An effective limit with the tier the tenant is on (null on platform defaults). */
export interface TenantLimit extends EffectiveLimit {
  tierId: string | null;
}

function withTier({ tierId, limits }: TenantEffectiveLimits): TenantLimit[] {
  return limits.map((limit) => ({ ...limit, tierId }));
}

export const loadTenants = readTenants;

export const listTenants = (q: Queryable, page: { first: number; after?: string; search?: string | null }): Promise<Page<TenantRecord>> => readTenantPage(q, page);

/** Stored values are shown as the cascade would use them: a malformed one (never accepted as input) is left out. */
function tierRecord(tier: Awaited<ReturnType<typeof readTiers>>[number]): TierRecord {
  const limits = DIMENSIONS.flatMap((dimension) => {
    const value = acceptLimit(dimension, tier.limits[dimension]);
    return value ? [{ dimension, value }] : [];
  });
  return { tierId: tier.tierId, name: tier.name, limits };
}

export async function listTiers(q: Queryable): Promise<TierRecord[]> {
  return (await readTiers(q)).map(tierRecord);
}

export async function loadTiers(q: Queryable, tierIds: readonly string[]): Promise<Map<string, TierRecord>> {
  return new Map((await readTiers(q, tierIds)).map((tier) => [tier.tierId, tierRecord(tier)]));
}

export async function loadOverrides(q: Queryable, tenantIds: readonly string[]): Promise<Map<string, OverrideRecord[]>> {
  const byTenant = await readOverrides(q, tenantIds);
  return new Map(
    [...byTenant].map(([tenantId, overrides]) => [
      tenantId,
      overrides.flatMap(({ dimension, value, expiresAt }) => {
        const accepted = acceptLimit(dimension, value);
        return accepted ? [{ dimension, value: accepted, expiresAt }] : [];
      }),
    ]),
  );
}

export async function loadEffectiveLimits(q: Queryable, tenantIds: readonly string[]): Promise<Map<string, TenantLimit[]>> {
  const byTenant = await readEffectiveLimits(q, tenantIds);
  return new Map([...byTenant].map(([tenantId, limits]) => [tenantId, withTier(limits)]));
}

/** NotRegisteredAt: the tenant was not registered at that instant (it was later, or never). */
export async function effectiveLimitsAt(sources: { store: EventStore }, tenantId: string, at: Date): Promise<TenantLimit[] | NotRegisteredAt> {
  const limits = await replayEffectiveLimits(sources.store, tenantId, at);
  return 'notRegistered' in limits ? limits : withTier(limits);
}

export const loadCommandBacklogs = readCommandBacklogs;

/** Each tenant's AI model through the cascade (its own, then its tier's default); one query. */
export const loadTenantModels = resolveTenantModels;

/** Each tenant's branding through the cascade (its own, branding.default, shipped); one query. */
export const loadTenantBrandings = resolveTenantBrandings;

export interface HistoryFilter {
  tenantId?: string;
  tierId?: string;
  dimension?: Dimension;
  first: number;
  /** Position text of the last change already seen. */
  after?: string;
}

/** Newest first. */
export const limitHistory = (q: Queryable, filter: HistoryFilter): Promise<Page<LimitChange>> => readLimitHistory(q, filter);

/**
 * One change the history just recorded, found by its position among the newest changes to the same tenant,
 * tier and dimension. A subscriber asks right after the commit, so it is on the first page but for a burst.
 */
export async function limitChangeAt(
  q: Queryable,
  notice: { position: string; tenantId: string | null; tierId: string | null; dimension: Dimension | null },
): Promise<LimitChange | null> {
  let after: string | undefined;
  for (;;) {
    const page = await readLimitHistory(q, {
      tenantId: notice.tenantId,
      tierId: notice.tierId,
      dimension: notice.dimension,
      first: 50,
      after,
    });
    const change = page.nodes.find((node) => node.position === notice.position);
    if (change) return change;
    if (!page.hasNextPage || page.endCursor === null) return null;
    after = page.endCursor;
  }
}
