// The worker-thread side of startProjectionWorker (projectionWorker.ts): runs one projection's runner on its own
// connections to the PostgreSQL ledger, in a thread with its own event loop and heap, and answers the service's
// thread over the worker port. A thread entry calls serveProjectionWorker with the projections it may run
// (projections/worker.ts).
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { openPostgres } from '../db/postgres.ts';
import type { RecordedEvent } from './eventStore.ts';
import { createPostgresEventStore } from './postgres/postgresEventStore.ts';
import type { Projection } from './projection.ts';
import {
  startProjectionRunner,
  ProjectionSuperseded,
  type ProjectionRunner,
  type ProjectionRunnerOptions,
  type QuarantineNotice,
} from './projectionRunner.ts';
import type { ApplyAttempt } from './projectPage.ts';
import { CheckpointOfAnotherLedger } from './checkpoints.ts';

/** Where the worker finds the ledger and its read models: the service's own database and schema. */
export interface PostgresConnection {
  connectionString: string;
  schema?: string;
}

export interface ProjectionWorkerData {
  projection: string;
  connection: PostgresConnection;
  /** The runner's options but its callbacks (a function does not cross to the thread: they come back as messages). */
  runner: Omit<ProjectionRunnerOptions, 'onError' | 'onQuarantined' | 'onApplying'>;
  /** The service's projection has an afterCommit: send it what each page committed. */
  forwardCommits: boolean;
}

/** An error as it crosses the thread boundary (a class and its fields do not survive structured cloning). */
export interface SentError {
  name: string;
  message: string;
  stack?: string;
  /** Ends the runner for good (ProjectionSuperseded, CheckpointOfAnotherLedger): restarting cannot help. */
  fatal: boolean;
}

export type ToProjectionWorker = { kind: 'waitForCaughtUp'; id: number; timeoutMs: number } | { kind: 'stop' };

export type FromProjectionWorker =
  | { kind: 'started' }
  | { kind: 'startFailed'; error: SentError }
  /** The runner's last fault changed: an error, or undefined once a later page succeeded. */
  | { kind: 'fault'; error: SentError | undefined }
  | { kind: 'committed'; events: readonly RecordedEvent[] }
  | { kind: 'caughtUp'; id: number; error?: SentError }
  /** The thread's event loop turns (sent every BEAT_MS): one that stops coming while a page is applied is blocked. */
  | { kind: 'beat' }
  /** A transaction that applies these events begins (attempt), or the last one ended (undefined). */
  | { kind: 'applying'; attempt: ApplyAttempt | undefined }
  | { kind: 'quarantined'; notice: QuarantineNotice };

export function sendableError(error: unknown): SentError {
  const fatal = error instanceof ProjectionSuperseded || error instanceof CheckpointOfAnotherLedger;
  if (error instanceof Error) return { name: error.name, message: error.message, stack: error.stack, fatal };
  return { name: 'Error', message: String(error), fatal };
}

/** How often the thread looks whether the runner's last fault cleared (a page succeeded since). */
const FAULT_CHECK_MS = 1_000;

/** How often the thread tells the service's thread that its event loop turns (projectionWorker.ts' watchdog). */
export const BEAT_MS = 250;

/**
 * Lowers this thread's priority alone to the projection's threadNice: on Linux setpriority() with pid 0 applies to
 * the calling thread. Elsewhere it applies to the whole process, the admitting thread too, so there the thread runs
 * at the process' priority. A higher nice value is never refused to an unprivileged thread; a failure leaves the
 * thread as it was.
 */
function lowerThreadPriority(nice: number): void {
  if (process.platform !== 'linux' || nice <= 0) return;
  try {
    setPriority(nice);
  } catch {
    // Runs at the process' priority.
  }
}

/** The thread's main: runs the projection named in workerData until the service's thread says stop. */
export async function serveProjectionWorker(projections: readonly Projection[]): Promise<void> {
  const port = parentPort;
  if (!port) throw new Error('serveProjectionWorker runs in a worker thread');
  const data = workerData as ProjectionWorkerData;
  const send = (message: FromProjectionWorker) => port.postMessage(message);
  const found = projections.find((projection) => projection.name === data.projection);
  if (!found) {
    send({ kind: 'startFailed', error: sendableError(new Error(`this worker runs no projection named ${data.projection}`)) });
    return;
  }
  lowerThreadPriority(found.threadNice ?? 0);
  const projection: Projection = data.forwardCommits
    ? {
        ...found,
        afterCommit(events) {
          found.afterCommit?.(events);
          send({ kind: 'committed', events });
        },
      }
    : found;
  // The runner's pages, the roll-ups that follow them (Projection.afterPages), its live subscription (LISTEN) and
  // a spare for waitForCaughtUp's head read.
  const db = openPostgres({ connectionString: data.connection.connectionString, schema: data.connection.schema, max: 4 });
  const store = createPostgresEventStore(db);
  const closeStorage = async () => {
    await store.close().catch(() => {});
    await db.close().catch(() => {});
  };

  let lastSentFault: unknown;
  let runner: ProjectionRunner;
  try {
    runner = await startProjectionRunner(db, store, projection, {
      ...data.runner,
      onError: (error) => {
        lastSentFault = error;
        send({ kind: 'fault', error: sendableError(error) });
      },
      onQuarantined: (notice) => send({ kind: 'quarantined', notice }),
      onApplying: (attempt) => send({ kind: 'applying', attempt }),
    });
  } catch (error) {
    await closeStorage();
    send({ kind: 'startFailed', error: sendableError(error) });
    return;
  }
  const beat = setInterval(() => send({ kind: 'beat' }), BEAT_MS);
  const faultCheck = setInterval(() => {
    if (lastSentFault !== undefined && runner.lastError() === undefined) {
      lastSentFault = undefined;
      send({ kind: 'fault', error: undefined });
    }
  }, FAULT_CHECK_MS);

  port.on('message', (message: ToProjectionWorker) => {
    if (message.kind === 'waitForCaughtUp') {
      runner.waitForCaughtUp({ timeoutMs: message.timeoutMs }).then(
        () => send({ kind: 'caughtUp', id: message.id }),
        (error: unknown) => send({ kind: 'caughtUp', id: message.id, error: sendableError(error) }),
      );
      return;
    }
    clearInterval(faultCheck);
    clearInterval(beat);
    void (async () => {
      await runner.stop();
      await closeStorage();
      // Nothing else keeps the thread alive: it ends once the port closes (the service's thread waits for its exit).
      port.close();
    })();
  });
  send({ kind: 'started' });
}
