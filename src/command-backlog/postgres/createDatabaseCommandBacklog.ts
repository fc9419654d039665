// The command backlog when the ledger lives in PostgreSQL/PGlite: the guard count, the command rows and the
// ledger events are written in ONE transaction (appendInTransaction; appendStreamsInTransaction for all the
// streams of an enqueue batch), so they commit together or not at all, and the ledger can never disagree
// with the count. The guard row is taken before the tenant's stream is appended to, in every transaction
// that writes both, so the stream's revision order is the order the count changed in, and the guard row is
// the stream's lock (the appends pass `lockedByCaller`). A transaction that takes several
// tenants' guard rows (an enqueue batch of several tenants, an expiry pass) takes them in tenant id order,
// so no two of them can deadlock.
import { sqlStateOf, UNIQUE_VIOLATION, type Db, type Tx } from '../../db/db.ts';
import { StorageUnavailable } from '../../db/storageUnavailable.ts';
import type { NewEvent } from '../../ledger/index.ts';
import { MAX_APPEND_BYTES, appendInTransaction, appendStreamsInTransaction, type StreamAppend, commandsStream, SETTLEMENT_EVENT_TYPES } from '../../ledger/index.ts';
import { commandEvent } from '../commandEvents.ts';
import { retryAfterSeconds } from '../retryAfter.ts';
import { unknownTenant, conflictMessage, repeatOutcome, settleOutcome } from '../answers.ts';
import type { BacklogOptions, BacklogActor, CommandBacklog, CommandRejected, EnqueueOutcome, TenantCeiling } from '../types.ts';
import { settlementMethods, type SettleCommand, validateEnqueue, type ValidCommand } from '../validateCommand.ts';
import { createGroupBatcher, type GroupBatcherLimits, type KeyGroup } from '../keyedBatcher.ts';
import { readCeilings } from '../ceilings.ts';
import { expireQueuedCommands, expiryAppends } from './expireQueuedCommands.ts';
import { settleQueuedCommand } from './settleQueuedCommand.ts';
import { takeBacklogSlots, type SlotDecision, type SlotRequest } from './takeBacklogSlots.ts';

/** Commands expired per transaction: bounds how long one expiry pass holds guard rows. */
const EXPIRY_BATCH = 500;
/** Enqueues of one tenant decided in one transaction, at most. */
const MAX_ENQUEUE_BATCH = 100;
/** Tenants decided in one transaction, at most: bounds how many guard rows one batch holds. */
const MAX_TENANTS_PER_BATCH = 8;
/**
 * Enqueue transactions running at once, at most (each on a connection of its own). Measured with
 * bench/command-enqueue.ts on a 2-core database host, 16 clients on 16 tenants: 8 tenants x 2 running gave
 * about 20% more enqueues/s than 6 x 3 (more batches at once only queue on the same locks and cores), and
 * the same on one tenant.
 */
const MAX_RUNNING_BATCHES = 2;

/** The enqueue path's group commit (bench/command-enqueue.ts gives its baseline the same). */
export const ENQUEUE_BATCH_LIMITS: GroupBatcherLimits = {
  maxItemsPerKey: MAX_ENQUEUE_BATCH,
  maxKeys: MAX_TENANTS_PER_BATCH,
  maxRunning: MAX_RUNNING_BATCHES,
};

interface EnqueueCall {
  actor: BacklogActor;
  command: ValidCommand;
}

/** One enqueue's answer from a batch: its outcome, or the fault that failed it alone. */
type EnqueueAnswer = PromiseSettledResult<EnqueueOutcome>;
const answered = (value: EnqueueOutcome): EnqueueAnswer => ({ status: 'fulfilled', value });
const failed = (reason: unknown): EnqueueAnswer => ({ status: 'rejected', reason });

export interface DatabaseBacklogOptions extends BacklogOptions {
  /** The serialized size each ledger append of an expiry pass is kept under (MAX_APPEND_BYTES). */
  maxAppendBytes?: number;
}

export function createDatabaseCommandBacklog(db: Db, { ceilings, commandTtlMs, now, maxAppendBytes = MAX_APPEND_BYTES }: DatabaseBacklogOptions): CommandBacklog {
  const settle: SettleCommand = async (actor, ref, settlement, detail) => {
    const at = now();
    return retryTransaction(db, async (tx) => {
      const decision = await settleQueuedCommand(tx, ref, settlement, at);
      if (decision.kind === 'settled') {
        const data = { tenantId: ref.tenantId, commandId: ref.commandId, undelivered: decision.undelivered };
        const event =
          settlement === 'failed'
            ? commandEvent('CommandFailed', { ...data, error: detail.error ?? null }, actor, at)
            : commandEvent(SETTLEMENT_EVENT_TYPES[settlement], data, actor, at, detail.reason);
        // The statement that settled it holds the tenant's guard row, which every writer of the stream takes first.
        await appendInTransaction(tx, commandsStream(ref.tenantId), [event], { lockedByCaller: true });
      }
      return settleOutcome(ref.commandId, decision);
    });
  };

  // One transaction per batch of concurrent enqueues, of one tenant or of several: the slots, the command
  // rows and the ledger events of the whole batch commit together (or, on a fault, none of them). Tenants
  // are handled in tenant id order: the guard rows are locked in that order (by the slot statement), and
  // then all their streams are appended to in one statement, after every guard row.
  const decideTenants = async (groups: ReadonlyArray<KeyGroup<EnqueueCall>>): Promise<EnqueueOutcome[][]> => {
    const at = now();
    const order = groups.map((_, g) => g).sort((a, b) => compareIds(groups[a]!.key, groups[b]!.key));
    const tenantIds = order.map((g) => groups[g]!.key);
    // On PostgreSQL the ceilings are read on another connection of the pool while this one begins the
    // transaction: one round trip less in every batch. Nothing locks a ceiling, and under READ COMMITTED a
    // read inside the transaction would see the same committed values, a moment later. (PGlite is one
    // connection: there it is read in the transaction.) A retried transaction reads them again inside it.
    let readEarly = db.kind === 'postgres' ? readCeilings(ceilings, db, tenantIds) : undefined;
    // Awaited in the transaction; if the transaction cannot even begin, its own error is the answer.
    readEarly?.catch(() => {});
    return retryTransaction(db, async (tx) => {
      const early = readEarly;
      readEarly = undefined;
      const limits = await (early ?? readCeilings(ceilings, tx, tenantIds));
      const requests: SlotRequest[] = [];
      const distinctOf = new Map<string, Map<string, ValidCommand>>();
      for (const g of order) {
        const { key: tenantId, items } = groups[g]!;
        const limit = limits.get(tenantId);
        if (!limit) continue;
        // The same commandId twice in one batch is decided once; the repeat gets the same answer.
        const distinct = new Map<string, ValidCommand>();
        for (const call of items) if (!distinct.has(call.command.commandId)) distinct.set(call.command.commandId, call.command);
        distinctOf.set(tenantId, distinct);
        requests.push({ tenantId, ceiling: limit.ceiling, commands: [...distinct.values()] });
      }
      const taken = await takeBacklogSlots(tx, requests, at);
      const decisionsOf = new Map(requests.map((request, r) => [request.tenantId, taken[r]!]));

      const outcomes: EnqueueOutcome[][] = [];
      const appends: StreamAppend[] = [];
      for (const g of order) {
        const { key: tenantId, items } = groups[g]!;
        const events: NewEvent[] = [];
        outcomes[g] = decideTenant(tenantId, items, limits.get(tenantId) ?? null, distinctOf.get(tenantId), decisionsOf.get(tenantId), at, events);
        if (events.length > 0) appends.push({ stream: commandsStream(tenantId), events });
      }
      // Every tenant's stream in one statement, after all the guard rows are held: every writer of a
      // tenant's commands stream holds the tenant's guard row, so the streams' own locks are not needed.
      await appendStreamsInTransaction(tx, appends, { lockedByCaller: true });
      return outcomes;
    });
  };

  // A batch is decided in one transaction. If that transaction fails (one tenant's ceiling cannot be read,
  // one enqueue's events cannot be appended...), each tenant is decided again on its own, and a tenant whose
  // own transaction fails too has each of its enqueues decided alone, in arrival order: a fault fails only
  // the enqueue it belongs to. (Input is checked before it can get this far, see validateCommand.ts; this is
  // for what still fails.) A fault that fails everything (the database is away) is answered to each.
  const enqueueGroups = async (groups: Array<KeyGroup<EnqueueCall>>): Promise<Array<PromiseSettledResult<EnqueueAnswer[]>>> => {
    try {
      return (await decideTenants(groups)).map((outcomes) => ({ status: 'fulfilled', value: outcomes.map(answered) }));
    } catch (error) {
      // The database is away: deciding again, alone or one by one, would only wait for it again.
      if (error instanceof StorageUnavailable) return groups.map(() => ({ status: 'rejected', reason: error }));
      if (groups.length === 1 && groups[0]!.items.length === 1) return [{ status: 'rejected', reason: error }];
      return Promise.all(groups.map(async (group) => ({ status: 'fulfilled', value: await decideTenantAlone(group) }) as const));
    }
  };
  const decideTenantAlone = async (group: KeyGroup<EnqueueCall>): Promise<EnqueueAnswer[]> => {
    try {
      return (await decideTenants([group]))[0]!.map(answered);
    } catch (error) {
      if (group.items.length === 1 || error instanceof StorageUnavailable) return group.items.map(() => failed(error));
      const answers: EnqueueAnswer[] = [];
      for (const item of group.items) {
        answers.push(await decideTenants([{ key: group.key, items: [item] }]).then((outcomes) => answered(outcomes[0]![0]!), failed));
      }
      return answers;
    }
  };
  const enqueueInBatch = createGroupBatcher(enqueueGroups, ENQUEUE_BATCH_LIMITS);

  return {
    async enqueue(actor, input): Promise<EnqueueOutcome> {
      const command = validateEnqueue(input);
      if (command.status === 'invalid') return command;
      const answer = await enqueueInBatch(command.tenantId, { actor, command });
      if (answer.status === 'rejected') throw answer.reason;
      return answer.value;
    },

    ...settlementMethods(settle),

    async expireOlderThanTtl() {
      let expired = 0;
      for (;;) {
        const at = now();
        const cutoff = new Date(at.getTime() - commandTtlMs);
        const batch = await retryTransaction(db, async (tx) => {
          const commands = await expireQueuedCommands(tx, cutoff, at, EXPIRY_BATCH);
          // The tenants' streams in appends of at most maxAppendBytes each (most passes: one), after the
          // guard rows expireQueuedCommands holds (which every writer of those streams takes first).
          for (const appends of expiryAppends(commands, at, commandTtlMs, maxAppendBytes)) {
            await appendStreamsInTransaction(tx, appends, { lockedByCaller: true });
          }
          return commands.length;
        });
        expired += batch;
        if (batch < EXPIRY_BATCH) return { expired };
      }
    },
  };
}

/** One tenant's outcomes in a batch, from its slot decisions; the events to record go to `events`. */
function decideTenant(
  tenantId: string,
  calls: readonly EnqueueCall[],
  limit: TenantCeiling | null,
  distinct: Map<string, ValidCommand> | undefined,
  decisions: SlotDecision[] | undefined,
  at: Date,
  events: NewEvent[],
): EnqueueOutcome[] {
  const refuse = (call: EnqueueCall, rejected: Omit<CommandRejected, 'status'>): EnqueueOutcome => {
    const data = { tenantId, deviceId: call.command.deviceId, ...rejected };
    events.push(commandEvent('CommandRejected', data, call.actor, at));
    return { status: 'rejected', ...rejected };
  };
  // An unknown tenant is answered but not recorded: recording would create a stream (and a read-model row)
  // for any name a caller makes up.
  if (!limit || !distinct || !decisions) return calls.map((call) => unknownTenant(call.command.commandId));
  const decisionOf = new Map([...distinct.keys()].map((commandId, i) => [commandId, decisions[i]!]));
  const recorded = new Set<string>();
  return calls.map((call) => {
    const { commandId, fingerprint } = call.command;
    // The same commandId twice in one batch: the first one sent is decided; a repeat with other content conflicts with it.
    if (distinct.get(commandId)!.fingerprint !== fingerprint) return { status: 'conflict', commandId, message: conflictMessage(commandId) };
    const decision = decisionOf.get(commandId)!;
    const first = !recorded.has(commandId);
    recorded.add(commandId);
    if (decision.kind === 'taken') {
      if (first) {
        const data = { tenantId, commandId, deviceId: call.command.deviceId, payload: call.command.payload, undelivered: decision.undelivered, ceiling: limit.ceiling, ceilingSource: limit.source };
        events.push(commandEvent('CommandEnqueued', data, call.actor, at));
      }
      return { status: 'accepted', commandId, undelivered: decision.undelivered, ceiling: limit.ceiling };
    }
    if (decision.kind !== 'full') return repeatOutcome(commandId, decision);
    return refuse(call, {
      commandId,
      reason: 'CEILING_REACHED',
      retryable: true,
      retryAfterSeconds: retryAfterSeconds(decision.pace, at),
      undelivered: decision.undelivered,
      ceiling: limit.ceiling,
    });
  });
}

/** A fixed order of tenant ids (by UTF-16 code units), the same in every process. */
function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

const DEADLOCK_DETECTED = '40P01';
const MAX_ATTEMPTS = 8;

/**
 * Runs `work` in a transaction and runs it again, from the start, when PostgreSQL refuses it for a reason
 * a fresh attempt resolves: a unique violation (a concurrent enqueue of the same commandId won; the retry
 * finds it and answers as a duplicate) or a deadlock (two expiry passes locking tenants in different order).
 */
export async function retryTransaction<T>(db: Db, work: (tx: Tx) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction(work);
    } catch (error) {
      const code = sqlStateOf(error);
      if (attempt >= MAX_ATTEMPTS || (code !== UNIQUE_VIOLATION && code !== DEADLOCK_DETECTED)) throw error;
    }
  }
}
