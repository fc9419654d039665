// Changes whose instant has come, laid over the base read models. A scheduled change takes effect at its
// instant on every replica by each replica's own timer (scheduler.ts), which reads the tenants concerned again
// at that instant; the read must then already answer the new limit, whether or not any process has yet
// appended the change to its tier's, tenant's or platform's stream and the projections have folded it. So
// every read of limits at `at` lays the requests that are SCHEDULED, due at `at`, and not yet in the base
// tables (gl_limit_change_requests_applied, written in the base projections' own transactions) over what the
// base tables hold. One indexed query per read; it answers no rows outside the moments between a change's
// instant and its projection.
import type { Queryable, Tx } from '../../db/db.ts';
import type { Dimension, TenantGovernanceRecord } from '../../governance/index.ts';
import type { ControlPlaneEvent, RecordedEvent } from '../../ledger/index.ts';
import { plannedStillApplies } from './requests.ts';

/**
 * The due changes not yet in the base tables, oldest first, as one jsonb array (a scalar subquery, so the
 * governance query of effectiveLimits.ts stays one round trip); `$at` is the parameter holding the instant.
 */
export function dueChangesSql(at: string): string {
  return `(SELECT jsonb_agg(r.planned ORDER BY r.effective_from, r.position) FROM gl_limit_change_requests r
    WHERE r.state = 'SCHEDULED' AND r.effective_from <= ${at} AND (NOT r.needs_approval OR r.decided_at <= ${at})
      AND NOT EXISTS (SELECT 1 FROM gl_limit_change_requests_applied a WHERE a.change_id = r.change_id))`;
}

const DUE_SQL = `SELECT ${dueChangesSql('$1')} AS due`;

/** The due changes not yet in the base tables, oldest first. */
export async function loadDueChanges(q: Queryable, at: Date): Promise<ControlPlaneEvent[]> {
  const { rows } = await q.query<{ due: ControlPlaneEvent[] | null }>(DUE_SQL, [at]);
  return stillApplying(rows[0]?.due ?? null, at);
}

/** The due changes of a query's column, without a scheduled override that has lapsed by `at`. */
export function stillApplying(due: readonly ControlPlaneEvent[] | null, at: Date): ControlPlaneEvent[] {
  return (due ?? []).filter((planned) => plannedStillApplies(planned, at));
}

/** Lays due changes over tenants' records and the platform defaults (both changed in place). */
export function layDueChanges(
  due: readonly ControlPlaneEvent[],
  records: Iterable<TenantGovernanceRecord>,
  platformDefaults: Partial<Record<Dimension, unknown>>,
): void {
  if (due.length === 0) return;
  const list = [...records];
  for (const change of due) {
    switch (change.type) {
      case 'PlatformDefaultSet':
        platformDefaults[change.data.dimension] = change.data.value;
        break;
      case 'TierLimitSet':
      case 'TierLimitCleared':
        for (const record of list) {
          if (record.tierId !== change.data.tierId) continue;
          const { tier: _replaced, ...rest } = record.levels[change.data.dimension] ?? {};
          record.levels[change.data.dimension] = change.type === 'TierLimitSet' ? { ...rest, tier: change.data.value } : rest;
        }
        break;
      case 'TenantOverrideSet':
      case 'TenantOverrideCleared':
        for (const record of list) {
          if (record.tenantId !== change.data.tenantId) continue;
          const { override: _replaced, ...rest } = record.levels[change.data.dimension] ?? {};
          record.levels[change.data.dimension] = change.type === 'TenantOverrideSet' ? { ...rest, override: change.data.value } : rest;
        }
        break;
    }
  }
}

/**
 * Called by the projections that fold a limit (tiers, tenant overrides, platform) in the transaction that
 * folded it: a change that came from a request is in the base tables from this commit on.
 */
export async function noteLimitChangeInBase(tx: Tx, recorded: Pick<RecordedEvent, 'metadata'>): Promise<void> {
  const changeId = recorded.metadata.changeId;
  if (typeof changeId !== 'string') return;
  await tx.query('INSERT INTO gl_limit_change_requests_applied (change_id) VALUES ($1) ON CONFLICT DO NOTHING', [changeId]);
}
