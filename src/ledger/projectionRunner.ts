// Runs one projection: catches up with the ledger page by page (projectNextPage), then follows it live.
// The live subscription is only a wake-up call: every change goes through the same checkpointed page path,
// so catch-up, live following and a competing runner all share one exactly-once rule.
import type { Db } from '../db/db.ts';
import { comparePositions, type Checkpoint, type EventStore, type Position, type Subscription } from './eventStore.ts';
import type { Projection } from './projection.ts';
import { CheckpointOfAnotherLedger, checkLedger, loadOrCreateCheckpoint, type StoredCheckpoint } from './checkpoints.ts';
import type { LedgerIdentity } from './eventStore.ts';
import { projectNextPage, type ApplyAttempt } from './projectPage.ts';
import { resetProjection } from './resetProjection.ts';
import { eventRef, type EventRef } from './quarantine.ts';

/** An event a projection set aside, and why (QuarantinedEvent without the time it is stored with). */
export interface QuarantineNotice extends EventRef {
  projection: string;
  reason: string;
}

export interface ProjectionRunnerOptions {
  /** Ledger events read, applied and checkpointed per transaction. */
  pageSize?: number;
  /** Wait before retrying after a fault (database or ledger unreachable). */
  retryDelayMs?: number;
  /** How soon to read again while a waiter's head is committed but not yet readable (held back). */
  heldBackPollMs?: number;
  onError?: (error: unknown, projection: Projection) => void;
  /** Told of each event set aside in the quarantine (quarantine.ts), once its transaction has committed. */
  onQuarantined?: (event: QuarantineNotice) => void;
  /**
   * The first page is applied one event at a time (projectPage.ts): a worker thread started again after its
   * predecessor ended while it applied that page, so that an event that ends threads is found alone.
   */
  isolateFirstPage?: boolean;
  /** Told before each transaction that applies events, and (undefined) once it has ended (a worker's watchdog). */
  onApplying?: (attempt: ApplyAttempt | undefined) => void;
}

export interface ProjectionLag {
  projection: string;
  /** True while an event of the projection's types is committed after its checkpoint (readable or held back). */
  pending: boolean;
  /**
   * The age of the oldest event the projection still has to apply; 0 when it has applied everything of
   * its types up to the head. Events of other types never count: they are not its business.
   */
  secondsBehind: number;
  /** How far behind the projection stays on purpose (Projection.livePaceMs), in seconds; 0 when it is not paced. */
  paceSeconds?: number;
  /** The projection's own readiness bound (Projection.readyLagSeconds), when it has one. */
  readyLagSeconds?: number;
  checkpoint: Checkpoint;
}

export interface ProjectionRunner {
  readonly projection: Projection;
  /**
   * Resolves once the projection has applied every event the ledger held when this was called, and the work that
   * follows its pages (Projection.afterPages) has ended.
   */
  waitForCaughtUp(options?: { timeoutMs?: number }): Promise<void>;
  /** How far behind the ledger the stored checkpoint is: the checkpoint row and one indexed ledger read. */
  lag(): Promise<ProjectionLag>;
  /** The last fault, until a later page succeeds. */
  lastError(): unknown;
  stop(): Promise<void>;
}

interface Waiter {
  /** The ledger's head at the call: reached once the checkpoint is at or past it. */
  head: Position | undefined;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** A checkpoint written by a newer version of the projection: this (older) code must not touch the read model. */
export class ProjectionSuperseded extends Error {
  override readonly name = 'ProjectionSuperseded';
  constructor(
    readonly projection: string,
    readonly storedVersion: number,
    readonly runningVersion: number,
  ) {
    super(`projection ${projection}: stored version ${storedVersion} is newer than this code's version ${runningVersion}`);
  }
}

export async function startProjectionRunner(
  db: Db,
  store: EventStore,
  projection: Projection,
  { pageSize = 500, retryDelayMs = 1_000, heldBackPollMs = 25, onError, onQuarantined, isolateFirstPage = false, onApplying }: ProjectionRunnerOptions = {},
): Promise<ProjectionRunner> {
  // Refuses to start on a checkpoint taken on another ledger (CheckpointOfAnotherLedger names the rebuild).
  const ledger = await store.identity();
  let checkpoint = await prepareCheckpoint(db, projection, ledger);
  let stopped = false;
  let fatal: unknown;
  let fault: unknown;
  let passRequested = true;
  let wake: (() => void) | undefined;
  /** Until a page has been applied: apply it one event at a time (isolateFirstPage). */
  let alone = isolateFirstPage;
  let retryTimer: NodeJS.Timeout | undefined;
  let live: Subscription | undefined;
  const waiters = new Set<Waiter>();

  const requestPass = () => {
    passRequested = true;
    wake?.();
  };

  // Live events wake the runner at most every livePaceMs after a pass that caught up (Projection.livePaceMs).
  const livePaceMs = projection.livePaceMs ?? 0;
  let caughtUpAt = -Infinity;
  let paceTimer: NodeJS.Timeout | undefined;
  const requestLivePass = () => {
    const waitMs = caughtUpAt + livePaceMs - performance.now();
    if (waitMs <= 0 || waiters.size > 0) {
      requestPass();
      return;
    }
    paceTimer ??= setTimeout(() => {
      paceTimer = undefined;
      requestPass();
    }, waitMs);
  };

  const schedulePass = (delayMs: number) => {
    clearTimeout(retryTimer);
    retryTimer = setTimeout(requestPass, delayMs);
  };

  const report = (error: unknown) => {
    fault = error;
    onError?.(error, projection);
  };

  // The work that follows pages (Projection.afterPages), in the background: one run at a time, and one more
  // after it when a page committed while it ran.
  let following: Promise<void> | undefined;
  let followAgain = false;
  const follow = () => {
    const afterPages = projection.afterPages;
    if (afterPages === undefined || stopped) return;
    if (following) {
      followAgain = true;
      return;
    }
    following = (async () => {
      do {
        followAgain = false;
        try {
          await afterPages.call(projection, db);
        } catch (error) {
          if (!stopped) report(error);
        }
      } while (followAgain && !stopped);
    })().finally(() => {
      following = undefined;
      settleWaiters();
    });
  };

  const reached = (waiter: Waiter) => {
    if (following !== undefined) return false;
    if (waiter.head === undefined) return true;
    return checkpoint.position !== 'start' && comparePositions(checkpoint.position, waiter.head) >= 0;
  };

  const settleWaiters = () => {
    for (const waiter of waiters) {
      if (fatal !== undefined) waiter.reject(fatal);
      else if (reached(waiter)) waiter.resolve();
      else continue;
      waiters.delete(waiter);
    }
  };

  // A pass reloads the checkpoint (another runner may have moved it) and applies pages until a read
  // comes back empty, settling waiters whose head the checkpoint has reached on the way.
  const runPass = async () => {
    checkpoint = await prepareCheckpoint(db, projection, ledger);
    while (!stopped) {
      settleWaiters();
      const outcome = await projectNextPage(db, store, projection, checkpoint, pageSize, { alone, onApplying, onApplyFault: report });
      fault = undefined;
      checkpoint = outcome.checkpoint;
      if (outcome.status === 'applied') {
        alone = false;
        if (outcome.applied.length > 0) follow();
        for (const { event, reason } of outcome.quarantined) onQuarantined?.({ projection: projection.name, ...eventRef(event), reason });
      }
      if (outcome.status === 'caught-up') return true;
      // A paced projection ends its pass at a short page (the head, as that read saw it) and lets the pace
      // gather what comes next; reading on would apply each append as it lands, a page each.
      if (livePaceMs > 0 && outcome.status === 'applied' && outcome.short) return true;
      if (outcome.status === 'moved' && outcome.checkpoint.version !== projection.version) {
        checkpoint = await prepareCheckpoint(db, projection, ledger);
      }
    }
    return false;
  };

  const followLive = () => {
    if (live || stopped) return;
    const subscription = store.subscribe(checkpoint.position, { types: projection.eventTypes });
    live = subscription;
    void (async () => {
      try {
        for await (const event of subscription) {
          if (checkpoint.position === 'start' || comparePositions(event.position, checkpoint.position) > 0) requestLivePass();
        }
      } catch (error) {
        if (!stopped) report(error);
      } finally {
        if (live === subscription) live = undefined;
        // The next successful pass opens a new subscription from its checkpoint.
        if (!stopped) schedulePass(retryDelayMs);
      }
    })();
  };

  const loop = async () => {
    while (!stopped) {
      if (!passRequested) {
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        continue;
      }
      passRequested = false;
      try {
        if (await runPass()) {
          caughtUpAt = performance.now();
          followLive();
          settleWaiters();
          // A waiter's head is committed but readAll does not show it yet: an older transaction is still
          // open (PostgreSQL). Its commit may not wake us (another type), so look again soon.
          if (waiters.size > 0) schedulePass(heldBackPollMs);
        }
      } catch (error) {
        if (error instanceof ProjectionSuperseded || error instanceof CheckpointOfAnotherLedger) {
          fatal = error;
          report(error);
          settleWaiters();
          return;
        }
        report(error);
        schedulePass(retryDelayMs);
      }
      settleWaiters();
    }
  };
  const running = loop();

  return {
    projection,
    async waitForCaughtUp({ timeoutMs = 10_000 } = {}) {
      if (fatal !== undefined) throw fatal;
      if (stopped) throw new Error(`projection ${projection.name} is stopped`);
      // The head, not an empty read: on PostgreSQL an empty read can mean "held back behind an older open
      // transaction" while events committed before this call are waiting to become readable.
      const head = await store.headPosition();
      requestPass();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(notCaughtUp(projection, timeoutMs, fault));
        }, timeoutMs);
        const waiter: Waiter = {
          head,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
          reject: (error: unknown) => {
            clearTimeout(timer);
            reject(error);
          },
        };
        waiters.add(waiter);
      });
    },
    lag: () => projectionLag(db, store, projection),
    lastError: () => fatal ?? fault,
    async stop() {
      if (stopped) return;
      stopped = true;
      clearTimeout(retryTimer);
      clearTimeout(paceTimer);
      wake?.();
      await live?.close();
      await running;
      await following;
      for (const waiter of waiters) waiter.reject(new Error(`projection ${projection.name} was stopped`));
      waiters.clear();
    },
  };
}

/** waitForCaughtUp's answer when its time ran out, naming the runner's last fault if there was one. */
export function notCaughtUp(projection: Projection, timeoutMs: number, fault: unknown): Error {
  const cause = fault === undefined ? '' : `; last fault: ${String(fault)}`;
  return new Error(`projection ${projection.name} did not catch up within ${timeoutMs} ms${cause}`, { cause: fault });
}

/** How far behind the ledger a projection's stored checkpoint is: the checkpoint row and one indexed ledger read. */
export async function projectionLag(db: Db, store: EventStore, projection: Projection): Promise<ProjectionLag> {
  const stored = (await loadOrCreateCheckpoint(db, projection.name, projection.version)).position;
  // Held-back events count too (firstPending does not wait for older transactions): they are behind.
  const oldest = await store.firstPending(stored, { types: projection.eventTypes });
  return {
    projection: projection.name,
    pending: oldest !== undefined,
    secondsBehind: oldest ? Math.max(0, (Date.now() - oldest.recordedAt.getTime()) / 1_000) : 0,
    paceSeconds: (projection.livePaceMs ?? 0) / 1_000,
    ...(projection.readyLagSeconds === undefined ? {} : { readyLagSeconds: projection.readyLagSeconds }),
    checkpoint: stored,
  };
}

/**
 * Loads (or creates) the checkpoint, checks it is in this ledger, and makes it this version's: an older stored
 * version means the read model was built by older code, so it is emptied and rebuilt from the start of the
 * ledger.
 */
async function prepareCheckpoint(db: Db, projection: Projection, ledger: LedgerIdentity): Promise<StoredCheckpoint> {
  for (;;) {
    const stored = await checkLedger(db, await loadOrCreateCheckpoint(db, projection.name, projection.version), ledger);
    if (stored.version === projection.version) return stored;
    if (stored.version > projection.version) throw new ProjectionSuperseded(projection.name, stored.version, projection.version);
    const reset = await db.transaction((tx) => resetProjection(tx, projection, stored));
    if (reset) return { projection: projection.name, version: projection.version, position: 'start', ledger };
  }
}
