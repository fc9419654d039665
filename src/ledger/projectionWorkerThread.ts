// The worker side of startProjectionWorker (projectionWorker.ts): runs one projection's runner on its own
// connections to the PostgreSQL ledger, with its own event loop and heap, and answers the service over a channel:
// a worker thread's port, or a child process' IPC channel (ProjectionIsolation). An entry module calls
// serveProjectionWorker with the projections it may run (projections/worker.ts); the same module serves either.
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { openPostgres } from '../db/postgres.ts';
import { setSessionNice } from '../sessionPriority.ts';
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

export type ToProjectionWorker =
  | { kind: 'waitForCaughtUp'; id: number; timeoutMs: number }
  | { kind: 'stop' }
  /** A child process' first message: what a thread gets as its workerData. */
  | { kind: 'start'; data: ProjectionWorkerData };

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
  | { kind: 'quarantined'; notice: QuarantineNotice }
  /** A child process' uncaught exception, sent before it exits (a thread's comes as the Worker's 'error'). */
  | { kind: 'crashed'; error: SentError };

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

/** How the worker hears the service and answers it: a thread's port, or a child process' IPC channel. */
interface Channel {
  data: ProjectionWorkerData;
  isProcess: boolean;
  send(message: FromProjectionWorker): void;
  onMessage(listener: (message: ToProjectionWorker) => void): void;
  /** Ends the worker once its storage is closed. */
  close(): void;
  /** Sends a start's failure and ends the worker (a thread ends by itself once its main returns). */
  failStart(error: SentError): void;
}

function threadChannel(port: NonNullable<typeof parentPort>): Channel {
  return {
    data: workerData as ProjectionWorkerData,
    isProcess: false,
    send: (message) => port.postMessage(message),
    onMessage: (listener) => port.on('message', listener),
    // Nothing else keeps the thread alive: it ends once the port closes (the service's thread waits for its exit).
    close: () => port.close(),
    failStart: (error) => port.postMessage({ kind: 'startFailed', error } satisfies FromProjectionWorker),
  };
}

/**
 * A child process' channel, once the service's first message (its workerData) came. The process ends when the
 * channel does (the service ended, even by SIGKILL: no runner outlives it), and an uncaught exception is sent
 * to the service before the process exits, as a thread's comes to the Worker.
 */
async function processChannel(): Promise<Channel> {
  const sendRaw = process.send?.bind(process);
  if (!sendRaw) throw new Error('serveProjectionWorker runs in a worker thread or a child process with an IPC channel');
  process.on('disconnect', () => process.exit(0));
  process.on('uncaughtException', (error) => {
    sendRaw({ kind: 'crashed', error: sendableError(error) } satisfies FromProjectionWorker, undefined, {}, () => process.exit(1));
  });
  const listeners: ((message: ToProjectionWorker) => void)[] = [];
  const data = await new Promise<ProjectionWorkerData>((resolve) => {
    process.on('message', (message: ToProjectionWorker) => {
      if (message.kind === 'start') resolve(message.data);
      else for (const listener of listeners) listener(message);
    });
  });
  return {
    data,
    isProcess: true,
    send: (message) => {
      if (process.connected) sendRaw(message);
    },
    onMessage: (listener) => listeners.push(listener),
    close: () => process.exit(0),
    failStart: (error) => sendRaw({ kind: 'startFailed', error } satisfies FromProjectionWorker, undefined, {}, () => process.exit(0)),
  };
}

/** The worker's main: runs the projection named in its workerData until the service says stop. */
export async function serveProjectionWorker(projections: readonly Projection[]): Promise<void> {
  const channel = parentPort ? threadChannel(parentPort) : await processChannel();
  const { data, send } = channel;
  const found = projections.find((projection) => projection.name === data.projection);
  if (!found) {
    channel.failStart(sendableError(new Error(`this worker runs no projection named ${data.projection}`)));
    return;
  }
  // A child process is a session of its own (projectionWorker.ts): its nice value is its session's (sessionPriority.ts).
  if (channel.isProcess && (found.threadNice ?? 0) > 0) await setSessionNice(found.threadNice!);
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
    channel.failStart(sendableError(error));
    return;
  }
  const beat = setInterval(() => send({ kind: 'beat' }), BEAT_MS);
  const faultCheck = setInterval(() => {
    if (lastSentFault !== undefined && runner.lastError() === undefined) {
      lastSentFault = undefined;
      send({ kind: 'fault', error: undefined });
    }
  }, FAULT_CHECK_MS);

  channel.onMessage((message) => {
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
      channel.close();
    })();
  });
  send({ kind: 'started' });
}
