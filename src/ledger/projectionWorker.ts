// Runs a projection in a worker thread on the PostgreSQL ledger, behind the same ProjectionRunner interface as
// one run in the service's own thread.
//
// Why: at tens of thousands of active tenants the admission-trends projection reads, parses and merges tens of
// thousands of summaries a second. In the thread that admits, that work and the garbage it leaves held the event
// loop for tens of milliseconds at a time, and every admission and every ledger flush waited behind it. In a
// thread of its own it has its own loop and its own heap (its garbage collections stop only itself); the
// database keeps it exactly-once as before (the checkpoint in the page's transaction), so nothing else changes.
//
// The thread opens its own connections (PostgresConnection); lag() is read here from the stored checkpoint, as
// in the service's thread. A thread that ends unexpectedly is reported (onError) and started again after
// retryDelayMs; waits in progress carry over to the new one.
import { Worker } from 'node:worker_threads';
import type { Db } from '../db/db.ts';
import type { EventStore } from './eventStore.ts';
import type { Projection } from './projection.ts';
import { notCaughtUp, projectionLag, type ProjectionRunner, type ProjectionRunnerOptions } from './projectionRunner.ts';
import type { FromProjectionWorker, PostgresConnection, ProjectionWorkerData, SentError, ToProjectionWorker } from './projectionWorkerThread.ts';

export type { PostgresConnection } from './projectionWorkerThread.ts';

export interface ProjectionWorkerOptions extends ProjectionRunnerOptions {
  /** The thread's module: one that calls serveProjectionWorker with this projection among its own. */
  entry: URL;
  connection: PostgresConnection;
  /** How long stop() waits for the thread's last page to commit before it ends the thread. */
  stopTimeoutMs?: number;
}

/**
 * The thread's start: the entry itself once compiled; from the TypeScript sources (tests, `npm run dev`), a
 * line that registers tsx's loader in the thread first (a `--import tsx` given to the thread is not applied to
 * its own entry on Node 20).
 */
function threadStart(entry: URL): { start: URL | string; eval: boolean } {
  if (!entry.pathname.endsWith('.ts')) return { start: entry, eval: false };
  const tsx = import.meta.resolve('tsx/esm/api');
  return { start: `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); })`, eval: true };
}

/** An error from the thread, with its name, message and stack as they were there. */
export class ProjectionWorkerError extends Error {
  /** It ends the runner for good (SentError.fatal): no new thread is started for it. */
  readonly fatal: boolean;

  constructor(sent: SentError) {
    super(sent.message);
    this.name = sent.name;
    this.fatal = sent.fatal;
    if (sent.stack) this.stack = sent.stack;
  }
}

interface PendingWait {
  deadline: number;
  resolve: () => void;
  reject: (error: unknown) => void;
  timer: NodeJS.Timeout;
}

/** Starts `projection` in a worker thread; resolves once its runner has started there (or rejects as starting it did). */
export async function startProjectionWorker(
  db: Db,
  store: EventStore,
  projection: Projection,
  { entry, connection, stopTimeoutMs = 10_000, onError, ...runner }: ProjectionWorkerOptions,
): Promise<ProjectionRunner> {
  const retryDelayMs = runner.retryDelayMs ?? 1_000;
  const workerData: ProjectionWorkerData = {
    projection: projection.name,
    connection,
    runner,
    forwardCommits: projection.afterCommit !== undefined,
  };
  const threadModule = threadStart(entry);

  let worker: Worker | undefined;
  /** The current thread's runner has started: it hears waits from now on. */
  let ready = false;
  let stopped = false;
  let fault: unknown;
  let fatal: unknown;
  let restartTimer: NodeJS.Timeout | undefined;
  let exited: Promise<void> = Promise.resolve();
  let nextWaitId = 0;
  const waits = new Map<number, PendingWait>();

  const report = (error: unknown) => {
    fault = error;
    onError?.(error, projection);
  };
  const post = (message: ToProjectionWorker) => {
    if (ready) worker?.postMessage(message);
  };
  const askAgain = () => {
    for (const [id, wait] of waits) post({ kind: 'waitForCaughtUp', id, timeoutMs: Math.max(1, wait.deadline - Date.now()) });
  };
  const settle = (id: number, error?: unknown) => {
    const wait = waits.get(id);
    if (!wait) return;
    waits.delete(id);
    clearTimeout(wait.timer);
    if (error === undefined) wait.resolve();
    else wait.reject(error);
  };

  // One thread's life; resolves once its runner started, rejects if it could not.
  const spawn = () =>
    new Promise<void>((resolve, reject) => {
      let started = false;
      const thread = new Worker(threadModule.start, { workerData, eval: threadModule.eval, stdout: false, stderr: false });
      worker = thread;
      ready = false;
      exited = new Promise((resolveExit) => thread.once('exit', () => resolveExit()));
      thread.on('message', (message: FromProjectionWorker) => {
        switch (message.kind) {
          case 'started':
            started = true;
            ready = true;
            resolve();
            askAgain();
            return;
          case 'startFailed':
            reject(new ProjectionWorkerError(message.error));
            return;
          case 'fault': {
            if (message.error === undefined) {
              fault = undefined;
              return;
            }
            const error = new ProjectionWorkerError(message.error);
            report(error);
            if (error.fatal) {
              fatal = error;
              for (const id of [...waits.keys()]) settle(id, fatal);
            }
            return;
          }
          case 'committed':
            projection.afterCommit?.(message.events);
            return;
          case 'caughtUp':
            settle(message.id, message.error && new ProjectionWorkerError(message.error));
            return;
        }
      });
      // An exception nobody caught in the thread ends the thread only; its 'exit' follows.
      thread.on('error', (error) => report(error));
      thread.on('exit', (code) => {
        if (worker === thread) {
          worker = undefined;
          ready = false;
        }
        if (!started) {
          reject(new Error(`projection ${projection.name}: its worker thread ended (code ${code}) before it started`));
          return;
        }
        if (stopped || fatal !== undefined) return;
        report(new Error(`projection ${projection.name}: its worker thread ended (code ${code}); starting another`));
        scheduleRestart();
      });
    });

  const scheduleRestart = () => {
    clearTimeout(restartTimer);
    restartTimer = setTimeout(() => {
      if (stopped) return;
      spawn().catch((error: unknown) => {
        report(error);
        if (error instanceof ProjectionWorkerError && error.fatal) return;
        scheduleRestart();
      });
    }, retryDelayMs);
  };

  try {
    await spawn();
  } catch (error) {
    await worker?.terminate();
    throw error;
  }

  return {
    projection,
    waitForCaughtUp({ timeoutMs = 10_000 } = {}) {
      if (fatal !== undefined) return Promise.reject(fatal);
      if (stopped) return Promise.reject(new Error(`projection ${projection.name} is stopped`));
      return new Promise<void>((resolve, reject) => {
        const id = nextWaitId++;
        const timer = setTimeout(() => settle(id, notCaughtUp(projection, timeoutMs, fault)), timeoutMs);
        waits.set(id, { deadline: Date.now() + timeoutMs, resolve, reject, timer });
        post({ kind: 'waitForCaughtUp', id, timeoutMs });
      });
    },
    lag: () => projectionLag(db, store, projection),
    lastError: () => fatal ?? fault,
    async stop() {
      if (stopped) return;
      stopped = true;
      clearTimeout(restartTimer);
      const thread = worker;
      if (thread) {
        thread.postMessage({ kind: 'stop' } satisfies ToProjectionWorker);
        const timer = setTimeout(() => void thread.terminate(), stopTimeoutMs);
        await exited;
        clearTimeout(timer);
      }
      for (const id of [...waits.keys()]) settle(id, new Error(`projection ${projection.name} was stopped`));
    },
  };
}
