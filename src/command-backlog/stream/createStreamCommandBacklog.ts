// The command backlog when the ledger is EventStoreDB (EVENTSTORE_URL): there is no shared transaction
// between the ledger and PostgreSQL, so the tenant's commands stream itself is the guard. Each decision is
// made on the stream folded up to its last revision and appended with that revision expected; when another
// process appended first (WrongExpectedRevision), the state is caught up and the decision made again. So
// every event in the stream was decided on everything before it, and the count it carries never passes the
// ceiling however many processes enqueue. Written against the EventStore port only, so the same code runs
// (and is tested) on the PostgreSQL adapter, which enforces expected revisions the same way.
//
// Memory and start-up: a process keeps the folded state of its most recently used tenants only
// (maxTenantsInMemory); a tenant it no longer holds is restored from its latest snapshot
// (gl_command_state_snapshots) and folded on from there. A snapshot is taken once enough events were folded
// since the last one: `snapshotEveryEvents`, or a quarter of the tenant's commands when that is more, so
// writing a tenant's whole command map costs a bounded amount per event however many commands it holds.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../../db/db.ts';
import { MAX_APPEND_BYTES, splitAppend, WrongExpectedRevision, type EventStore, type NewEvent, commandsStream, SETTLEMENT_EVENT_TYPES } from '../../ledger/index.ts';
import type { BacklogOptions, CommandBacklog, EnqueueOutcome } from '../types.ts';
import { commandEvent, EXPIRY_ACTOR } from '../commandEvents.ts';
import { retryAfterSeconds } from '../retryAfter.ts';
import { unknownTenant, decideRepeat, repeatOutcome, settleOutcome, type SettleDecision } from '../answers.ts';
import { settlementMethods, type SettleCommand, validateEnqueue } from '../validateCommand.ts';
import { emptyCommandsState, foldCommandEvent, type TenantCommandsState } from './foldCommandStream.ts';
import { createKeyedQueue } from './keyedQueue.ts';
import { discardCommandStateSnapshot, loadCommandStateSnapshot, saveCommandStateSnapshot } from './commandStateSnapshots.ts';

/** Decisions tried before giving up under contention (a fault: the stream kept changing). */
const MAX_ATTEMPTS = 200;

/** Tenants whose folded state a process keeps, by default. */
export const DEFAULT_MAX_TENANTS_IN_MEMORY = 10_000;
/** Events folded since a tenant's last snapshot before the next is taken, at least (see above). */
export const DEFAULT_SNAPSHOT_EVERY_EVENTS = 500;

export interface StreamBacklogOptions extends BacklogOptions {
  store: EventStore;
  /** For the ceilings, the snapshots, and to find tenants with a backlog (the command-backlog read model) for expiry. */
  db: Db;
  /** 0 keeps no tenant between decisions (every decision restores from the snapshot: tests use it). */
  maxTenantsInMemory?: number;
  snapshotEveryEvents?: number;
  /** The serialized size each append is kept under (MAX_APPEND_BYTES): an expiry pass splits a tenant's events. */
  maxAppendBytes?: number;
}

/** A tenant's state as this process holds it. */
interface HeldState {
  state: TenantCommandsState;
  /** The id of the event at state.revision (what a snapshot of it is checked against). */
  lastEventId: string | null;
  foldedSinceSnapshot: number;
}

export function createStreamCommandBacklog({
  store,
  db,
  ceilings,
  commandTtlMs,
  now,
  maxTenantsInMemory = DEFAULT_MAX_TENANTS_IN_MEMORY,
  snapshotEveryEvents = DEFAULT_SNAPSHOT_EVERY_EVENTS,
  maxAppendBytes = MAX_APPEND_BYTES,
}: StreamBacklogOptions): CommandBacklog {
  // In order of last use, least recent first (a Map keeps insertion order; a use moves the tenant last).
  const held = new Map<string, HeldState>();
  // Tenants this process last saw with queued commands, or has just enqueued for (a state folds its own
  // appends only at its next catch-up): the expiry pass's own list, bounded by tenants with a backlog, not
  // by tenants held.
  const mayHaveBacklog = new Set<string>();
  const oneAtATimePerTenant = createKeyedQueue();

  /** The tenant's latest snapshot when the stream still holds the event it was taken after; else nothing folded. */
  const restore = async (tenantId: string): Promise<HeldState> => {
    const snapshot = await loadCommandStateSnapshot(db, tenantId).catch(() => undefined);
    if (snapshot) {
      const [atSnapshot] = await store.readStream(commandsStream(tenantId), { fromRevision: snapshot.state.revision, maxCount: 1 });
      if (atSnapshot?.id === snapshot.lastEventId) return { state: snapshot.state, lastEventId: snapshot.lastEventId, foldedSinceSnapshot: 0 };
      await discardCommandStateSnapshot(db, tenantId, snapshot.lastEventId).catch(() => {});
    }
    return { state: emptyCommandsState(), lastEventId: null, foldedSinceSnapshot: 0 };
  };

  // Called only inside oneAtATimePerTenant, so one tenant is caught up by one call at a time, and reading from
  // the revision after the last one folded folds each event exactly once. A state dropped
  // from `held` while a decision still uses it is only folded by that decision and then forgotten.
  const catchUp = async (tenantId: string): Promise<TenantCommandsState> => {
    let entry = held.get(tenantId);
    if (entry) held.delete(tenantId);
    else entry = await restore(tenantId);
    held.set(tenantId, entry);
    for (const [leastRecent] of held) {
      if (held.size <= maxTenantsInMemory) break;
      held.delete(leastRecent);
    }
    const { state } = entry;
    const fromRevision = state.revision === 'no_stream' ? 'start' : state.revision + 1n;
    for (const event of await store.readStream(commandsStream(tenantId), { fromRevision })) {
      foldCommandEvent(state, event);
      entry.lastEventId = event.id;
      entry.foldedSinceSnapshot++;
    }
    if (state.undelivered > 0) mayHaveBacklog.add(tenantId);
    else mayHaveBacklog.delete(tenantId);
    if (entry.foldedSinceSnapshot >= Math.max(snapshotEveryEvents, state.commands.size / 4) && state.revision !== 'no_stream') {
      const snapshot = { state: { ...state, revision: state.revision }, lastEventId: entry.lastEventId! };
      // A snapshot only saves later folding: failing to store one must not fail the decision.
      const saved = await saveCommandStateSnapshot(db, tenantId, snapshot).then(() => true, () => false);
      if (saved) entry.foldedSinceSnapshot = 0;
    }
    return state;
  };

  /**
   * Decides on the caught-up state and appends at its revision, deciding again after every conflict.
   * `decide` returns the events to append (none: nothing to record) and the answer to give once stored.
   */
  const decideAndAppend = <Answer>(
    tenantId: string,
    decide: (state: TenantCommandsState) => { events: NewEvent[]; answer: Answer },
  ): Promise<Answer> => oneAtATimePerTenant(tenantId, async () => {
    for (let attempt = 1; ; attempt++) {
      const state = await catchUp(tenantId);
      const { events, answer } = decide(state);
      if (events.length === 0) return answer;
      try {
        await store.append(commandsStream(tenantId), events, { expectedRevision: state.revision });
        if (events.some((event) => event.type === 'CommandEnqueued')) mayHaveBacklog.add(tenantId);
        return answer;
      } catch (error) {
        if (!(error instanceof WrongExpectedRevision) || attempt >= MAX_ATTEMPTS) throw error;
        // Spread contenders out so they do not collide again in lock step.
        await sleep(Math.random() * Math.min(20, attempt));
      }
    }
  });

  const settle: SettleCommand = async (actor, ref, settlement, detail) => {
    const decision = await decideAndAppend<SettleDecision>(ref.tenantId, (state) => {
      const command = state.commands.get(ref.commandId);
      if (!command) return { events: [], answer: { kind: 'unknown' } };
      if (command.status !== 'queued') return { events: [], answer: { kind: 'already-settled', settledAs: command.status } };
      const at = now();
      const data = { tenantId: ref.tenantId, commandId: ref.commandId, undelivered: state.undelivered - 1 };
      const event =
        settlement === 'failed'
          ? commandEvent('CommandFailed', { ...data, error: detail.error ?? null }, actor, at)
          : commandEvent(SETTLEMENT_EVENT_TYPES[settlement], data, actor, at, detail.reason);
      return { events: [event], answer: { kind: 'settled', undelivered: data.undelivered } };
    });
    return settleOutcome(ref.commandId, decision);
  };

  return {
    async enqueue(actor, input): Promise<EnqueueOutcome> {
      const command = validateEnqueue(input);
      if (command.status === 'invalid') return command;
      const limit = await ceilings(db, command.tenantId);
      const base = { tenantId: command.tenantId, commandId: command.commandId, deviceId: command.deviceId };
      // Answered, not recorded: recording would create a stream for any name a caller makes up.
      if (!limit) return unknownTenant(command.commandId);
      return decideAndAppend<EnqueueOutcome>(command.tenantId, (state) => {
        const earlier = state.commands.get(command.commandId);
        if (earlier) return { events: [], answer: repeatOutcome(command.commandId, decideRepeat(earlier, command)) };
        const at = now();
        if (state.undelivered < limit.ceiling) {
          const undelivered = state.undelivered + 1;
          const data = { ...base, payload: command.payload, undelivered, ceiling: limit.ceiling, ceilingSource: limit.source };
          return {
            events: [commandEvent('CommandEnqueued', data, actor, at)],
            answer: { status: 'accepted', commandId: command.commandId, undelivered, ceiling: limit.ceiling },
          };
        }
        const rejected = {
          commandId: command.commandId,
          reason: 'CEILING_REACHED',
          retryable: true,
          retryAfterSeconds: retryAfterSeconds(state, at),
          undelivered: state.undelivered,
          ceiling: limit.ceiling,
        } as const;
        return { events: [commandEvent('CommandRejected', { ...base, ...rejected }, actor, at)], answer: { status: 'rejected', ...rejected } };
      });
    },

    ...settlementMethods(settle),

    async expireOlderThanTtl() {
      // Tenants with a backlog: what the read model knows (every process's commands, once projected) and
      // what this process has seen itself (its own, even before the projection caught up).
      const { rows } = await db.query<{ tenant_id: string }>('SELECT tenant_id FROM gl_command_backlog_view WHERE undelivered > 0');
      const tenants = new Set([...rows.map((row) => row.tenant_id), ...mayHaveBacklog]);
      let expired = 0;
      for (const tenantId of tenants) {
        // A tenant's due commands go out in appends of at most MAX_APPEND_BYTES each, oldest first.
        for (let more = true; more; ) {
          const pass = await decideAndAppend(tenantId, (state) => {
            const at = now();
            const cutoff = at.getTime() - commandTtlMs;
            const due = [...state.commands].filter(([, command]) => command.status === 'queued' && command.enqueuedAt.getTime() < cutoff);
            due.sort(([a, left], [b, right]) => left.enqueuedAt.getTime() - right.enqueuedAt.getTime() || a.localeCompare(b));
            if (due.length === 0) return { events: [], answer: { expired: 0, more: false } };
            const events = due.map(([commandId, command], i) =>
              commandEvent(
                'CommandExpired',
                { tenantId, commandId, undelivered: state.undelivered - i - 1, enqueuedAt: command.enqueuedAt.toISOString(), ttlMs: commandTtlMs },
                EXPIRY_ACTOR,
                at,
              ),
            );
            const [first] = splitAppend(events, maxAppendBytes);
            return { events: first!, answer: { expired: first!.length, more: first!.length < events.length } };
          });
          expired += pass.expired;
          more = pass.more;
        }
      }
      return { expired };
    },
  };
}
