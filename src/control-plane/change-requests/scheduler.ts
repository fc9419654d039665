// Each process's own timers for scheduled limit changes. A change takes effect at its instant in every
// process by that process's timer, not by a notification from whichever process applied it: at the instant
// the timer reads the tenants concerned again (reads lay due changes over the base tables, dueChanges.ts, so
// the read answers the new limit whether or not the change has been appended yet), then asks the control plane
// to append the change (every process asks; the change is appended once). Timers are armed from the read
// model at start and again whenever a request changes state (NOTIFY from projections/limitChangeRequests.ts),
// so a change scheduled, approved or withdrawn in any process is armed or dropped in all of them.
import type { Db, Queryable } from '../../db/db.ts';
import type { LimitReload } from '../../governance/index.ts';
import { loadScheduledRequests, type LimitChangeRequestRecord } from './requestRecords.ts';

/** The NOTIFY channel of request state changes, per schema like the limits channel (../limitChanges.ts). */
export const SCHEDULE_CHANNEL_SQL = `left('gl_limit_sched_' || current_schema(), 63)`;

/** The longest a Node timer waits (2^31 - 1 ms, about 24.8 days); a later instant is re-armed on the way. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Announces a request's change of state inside the transaction that folded it. */
export async function announceScheduleChange(tx: Queryable, changeId: string): Promise<void> {
  await tx.query(`SELECT pg_notify(${SCHEDULE_CHANNEL_SQL}, $1)`, [changeId]);
}

export interface ScheduledChangeApplier {
  applyLimitChange(changeId: string): Promise<unknown>;
}

export interface ScheduleFollowing {
  /** Changes armed right now, by id and instant (tests and /healthz-style reports). */
  armed(): ReadonlyMap<string, Date>;
  close(): Promise<void>;
}

export interface ScheduleFollowingOptions {
  onError?: (error: unknown) => void;
  /** Told when a timer fired and the tenants concerned were asked to read again, with how late it fired. */
  onSwitch?: (changeId: string, lateMs: number) => void;
}

/** The instant a scheduled request takes effect: its effectiveFrom, or its approval when that came later. */
export function instantOf(request: LimitChangeRequestRecord): Date {
  if (request.needsApproval && request.decidedAt && request.decidedAt > request.effectiveFrom) return request.decidedAt;
  return request.effectiveFrom;
}

export function reloadOf(request: Pick<LimitChangeRequestRecord, 'targetKind' | 'tenantId' | 'tierId'>): LimitReload {
  if (request.targetKind === 'tenant') return { kind: 'tenant', tenantId: request.tenantId! };
  if (request.targetKind === 'tier') return { kind: 'tier', tierId: request.tierId! };
  return { kind: 'platform' };
}

export async function followScheduledLimitChanges(
  db: Db,
  governors: readonly { reloadLimits(change: LimitReload): void }[],
  applier: ScheduledChangeApplier,
  { onError = () => {}, onSwitch = () => {} }: ScheduleFollowingOptions = {},
): Promise<ScheduleFollowing> {
  const timers = new Map<string, { at: Date; timer: NodeJS.Timeout }>();
  let closed = false;
  let reading: Promise<void> | null = null;
  let readAgain = false;

  const fire = (request: LimitChangeRequestRecord, at: Date) => {
    const remainingMs = at.getTime() - Date.now();
    // A timer may fire a millisecond early, or be capped below a far instant: wait out the rest.
    if (remainingMs > 0) return arm(request, at);
    timers.delete(request.changeId);
    const reload = reloadOf(request);
    for (const governor of governors) governor.reloadLimits(reload);
    onSwitch(request.changeId, -remainingMs);
    applier.applyLimitChange(request.changeId).catch(onError);
  };

  const arm = (request: LimitChangeRequestRecord, at: Date) => {
    const timer = setTimeout(() => fire(request, at), Math.min(MAX_TIMER_MS, Math.max(0, at.getTime() - Date.now())));
    timer.unref();
    timers.set(request.changeId, { at, timer });
  };

  const rearm = async () => {
    const scheduled = await loadScheduledRequests(db);
    if (closed) return;
    const seen = new Set<string>();
    for (const request of scheduled) {
      seen.add(request.changeId);
      const at = instantOf(request);
      const current = timers.get(request.changeId);
      if (current && current.at.getTime() === at.getTime()) continue;
      if (current) clearTimeout(current.timer);
      arm(request, at);
    }
    for (const [changeId, { timer }] of timers) {
      if (seen.has(changeId)) continue;
      clearTimeout(timer);
      timers.delete(changeId);
    }
  };

  // One read at a time; a notification during a read asks for one more after it.
  const refresh = () => {
    if (reading) {
      readAgain = true;
      return;
    }
    reading = rearm()
      .catch(onError)
      .finally(() => {
        reading = null;
        if (readAgain && !closed) {
          readAgain = false;
          refresh();
        }
      });
  };

  let unlisten: (() => Promise<void>) | undefined;
  try {
    const { rows } = await db.query<{ channel: string }>(`SELECT ${SCHEDULE_CHANNEL_SQL} AS channel`);
    unlisten = await db.listen(rows[0]!.channel, refresh);
  } catch (error) {
    onError(error);
  }
  await rearm();
  return {
    armed: () => new Map([...timers].map(([changeId, { at }]) => [changeId, at])),
    close: async () => {
      closed = true;
      for (const { timer } of timers.values()) clearTimeout(timer);
      timers.clear();
      await unlisten?.();
      await reading;
    },
  };
}
