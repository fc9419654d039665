// Runs a projection in a worker on the PostgreSQL ledger, behind the same ProjectionRunner interface as one run
// in the service's own thread. A worker is a worker thread, or a child process in a session of its own
// (ProjectionIsolation, below): what follows says "thread" for either.
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
//
// No stored event may end the service through its thread (quarantine.ts). The thread's heap is limited
// (maxHeapMb: a runaway page ends the thread with ERR_WORKER_OUT_OF_MEMORY, never the process), and a watchdog
// here ends a thread whose event loop has not turned for maxBlockedMs while it applied a page (a page that
// computes without end). The thread says which events each transaction applies; when it ends in the middle of
// one, the next thread applies that page one event at a time (isolateFirstPage), and when a thread ends while
// it applied one event alone, that event is set aside here, in the transaction that moves the checkpoint past
// it (quarantineAlone), and the next thread goes on after it. So a poison event costs two threads, not a loop.
import { fork } from 'node:child_process';
import { constants as osConstants } from 'node:os';
import { EventEmitter } from 'node:events';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { SERVICE_NODE_FLAGS } from '../gcTuning.ts';
import type { Db } from '../db/db.ts';
import type { EventStore } from './eventStore.ts';
import type { Projection } from './projection.ts';
import { notCaughtUp, projectionLag, type ProjectionRunner, type ProjectionRunnerOptions } from './projectionRunner.ts';
import {
  BEAT_MS,
  type FromProjectionWorker,
  type PostgresConnection,
  type ProjectionWorkerData,
  type SentError,
  type ToProjectionWorker,
} from './projectionWorkerThread.ts';
import type { ApplyAttempt } from './projectPage.ts';
import { eventRef, quarantineAlone } from './quarantine.ts';

export type { PostgresConnection } from './projectionWorkerThread.ts';

/**
 * Where a projection worker runs: a worker thread of the service's process, or a child process in a session of its
 * own. On Linux the scheduler shares the cores between sessions first (autogroups, sched(7)), and a thread's nice
 * value orders only the threads of its session: a thread's page, however niced, and the garbage collections V8's
 * helper threads do for it (at the service's priority) were charged to the admitting thread's session, which then
 * waited for a core (60-120 ms at 50,000 active tenants on two cores: bench/scale.ts). A child process' page is
 * charged to its own session, and its nice value (Projection.threadNice) lowers that whole session.
 */
export type ProjectionIsolation = 'thread' | 'process';

export interface ProjectionWorkerOptions extends ProjectionRunnerOptions {
  /** The worker's module: one that calls serveProjectionWorker with this projection among its own. */
  entry: URL;
  /** A worker thread (the default) or a child process. */
  isolation?: ProjectionIsolation;
  connection: PostgresConnection;
  /** How long stop() waits for the thread's last page to commit before it ends the thread. */
  stopTimeoutMs?: number;
  /** The thread's heap (V8 old generation), MB: past it the thread ends, not the process. */
  maxHeapMb?: number;
  /** How long the thread's event loop may stay blocked while it applies a page before the thread is ended, ms. */
  maxBlockedMs?: number;
}

/** GOVERNANCE_PROJECTION_WORKER_MAX_HEAP_MB's default: several times what a page of the admission trends holds at 50,000 active tenants. */
export const DEFAULT_WORKER_MAX_HEAP_MB = 1_024;
/** GOVERNANCE_PROJECTION_MAX_BLOCKED_SECONDS' default, in ms: a page yields every millisecond or so. */
export const DEFAULT_WORKER_MAX_BLOCKED_MS = 30_000;
/** How often the watchdog looks at the thread's beats. */
const WATCH_MS = 250;

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

/** The running worker as startProjectionWorker sees it: a Worker, or a child process made to look like one. */
interface WorkerHost extends EventEmitter {
  postMessage(message: ToProjectionWorker): void;
  terminate(): Promise<unknown>;
}

/**
 * The service's own profiling and GC tracing flags (`--cpu-prof`, `--cpu-prof-dir=DIR`, `--heap-prof`, `--trace-gc`
 * and the like, in their `--flag=value` form), passed on to each worker process as a worker thread shares them: a
 * profile of the service is then a profile of its projections too. A name of its own (`--cpu-prof-name`) is not
 * passed on: the processes would write one file over another.
 */
const DIAGNOSTIC_FLAGS = process.execArgv.filter((flag) => /^--(cpu-prof|heap-prof|trace-gc)/.test(flag) && !/^--(cpu|heap)-prof-name/.test(flag));

/**
 * A child process running `entry` (from the TypeScript sources, with tsx's loader) in a session of its own, its
 * V8 old generation limited to `maxHeapMb`. It emits what a Worker emits: 'message'; 'error' with the uncaught
 * exception the process sent before it exited, or an Error whose code is ERR_WORKER_OUT_OF_MEMORY when V8 ended it
 * out of heap (its last words on stderr, which is passed on); 'exit' with the exit code (128 + the signal's number
 * when a signal ended it).
 */
function processHost(entry: URL, maxHeapMb: number, data: ProjectionWorkerData): WorkerHost {
  const loader = entry.pathname.endsWith('.ts') ? ['--import', import.meta.resolve('tsx')] : [];
  const child = fork(fileURLToPath(entry), [], {
    execArgv: [...loader, ...SERVICE_NODE_FLAGS, ...DIAGNOSTIC_FLAGS, `--max-old-space-size=${maxHeapMb}`],
    serialization: 'advanced',
    detached: true,
    stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
  });
  const host = new EventEmitter() as WorkerHost;
  let lastWords = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    process.stderr.write(chunk);
    lastWords = (lastWords + chunk.toString('utf8')).slice(-4_096);
  });
  let crashed = false;
  child.on('message', (message: FromProjectionWorker) => {
    if (message.kind === 'crashed') {
      crashed = true;
      host.emit('error', new ProjectionWorkerError(message.error));
    } else host.emit('message', message);
  });
  child.on('error', (error) => host.emit('error', error));
  child.on('exit', (code, signal) => {
    if (!crashed && /JavaScript heap out of memory|Reached heap limit/.test(lastWords)) {
      host.emit('error', Object.assign(new Error(`the projection's worker process ran out of memory (${maxHeapMb} MB)`), { code: 'ERR_WORKER_OUT_OF_MEMORY' }));
    }
    host.emit('exit', code ?? 128 + (signal ? (osConstants.signals[signal] ?? 0) : 0));
  });
  host.postMessage = (message) => {
    if (child.connected) child.send(message);
  };
  host.terminate = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    return Promise.resolve();
  };
  host.postMessage({ kind: 'start', data });
  return host;
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

/** Starts `projection` in a worker thread or process (isolation); resolves once its runner has started there (or rejects as starting it did). */
export async function startProjectionWorker(
  db: Db,
  store: EventStore,
  projection: Projection,
  {
    entry,
    connection,
    isolation = 'thread',
    stopTimeoutMs = 10_000,
    maxHeapMb = DEFAULT_WORKER_MAX_HEAP_MB,
    maxBlockedMs = DEFAULT_WORKER_MAX_BLOCKED_MS,
    onError,
    onQuarantined,
    onApplying: _onApplying,
    isolateFirstPage: _isolateFirstPage,
    ...runner
  }: ProjectionWorkerOptions,
): Promise<ProjectionRunner> {
  const retryDelayMs = runner.retryDelayMs ?? 1_000;
  // Several beats at the least: a beat late by a garbage collection is not a blocked loop.
  const blockedMs = Math.max(maxBlockedMs, BEAT_MS * 8);
  const threadModule = threadStart(entry);
  /** What the messages and quarantine reasons call the worker. */
  const noun = isolation === 'process' ? 'worker process' : 'worker thread';
  /** The next thread applies its first page one event at a time: the one before ended while it applied that page. */
  let isolateNext = false;
  /** The transaction the current thread is in the middle of, as it said (ApplyAttempt). */
  let inFlight: ApplyAttempt | undefined;
  /** Why the watchdog ended the current thread, if it did. */
  let endedBecause: string | undefined;
  /** The last uncaught error of the current thread ('error' comes before 'exit'). */
  let threadError: unknown;

  let worker: WorkerHost | undefined;
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
      const workerData: ProjectionWorkerData = {
        projection: projection.name,
        connection,
        runner: { ...runner, isolateFirstPage: isolateNext },
        forwardCommits: projection.afterCommit !== undefined,
      };
      const thread: WorkerHost =
        isolation === 'process'
          ? processHost(entry, maxHeapMb, workerData)
          : new Worker(threadModule.start, {
              workerData,
              eval: threadModule.eval,
              stdout: false,
              stderr: false,
              resourceLimits: { maxOldGenerationSizeMb: maxHeapMb },
            });
      worker = thread;
      ready = false;
      inFlight = undefined;
      endedBecause = undefined;
      threadError = undefined;
      let lastBeatAt = performance.now();
      let lastWatchAt = lastBeatAt;
      const watchdog = setInterval(() => {
        const now = performance.now();
        // This thread was itself held (its timers ran late): the beats it has not read yet are not the thread's fault.
        if (now - lastWatchAt > WATCH_MS * 4) lastBeatAt = now;
        lastWatchAt = now;
        if (inFlight === undefined || endedBecause !== undefined || now - lastBeatAt <= blockedMs) return;
        endedBecause = `it held the projection's ${noun}'s event loop for more than ${blockedMs / 1_000} s`;
        void thread.terminate();
      }, WATCH_MS);
      watchdog.unref();
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
          case 'beat':
            lastBeatAt = performance.now();
            return;
          case 'applying':
            lastBeatAt = performance.now();
            inFlight = message.attempt;
            // A page got through: the next thread (if one is needed) starts as usual.
            if (message.attempt === undefined) isolateNext = false;
            return;
          case 'quarantined':
            onQuarantined?.(message.notice);
            return;
        }
      });
      // An exception nobody caught in the thread ends the thread only; its 'exit' follows.
      thread.on('error', (error) => {
        threadError = error;
        report(error);
      });
      thread.on('exit', (code) => {
        clearInterval(watchdog);
        if (worker === thread) {
          worker = undefined;
          ready = false;
        }
        if (!started) {
          reject(new Error(`projection ${projection.name}: its ${noun} ended (code ${code}) before it started`));
          return;
        }
        if (stopped || fatal !== undefined) return;
        report(new Error(`projection ${projection.name}: its ${noun} ended (code ${code}); starting another`));
        const attempt = inFlight;
        inFlight = undefined;
        if (attempt === undefined) {
          scheduleRestart();
          return;
        }
        if (!attempt.alone || attempt.events.length !== 1) {
          // Ended in the middle of a page: the next thread applies it one event at a time to find the culprit.
          isolateNext = true;
          scheduleRestart();
          return;
        }
        // Ended while it applied one event alone: that event is set aside, and the next thread goes on after it.
        void setAside(attempt, endedBecause ?? threadEndReason(noun, code, threadError, maxHeapMb)).finally(scheduleRestart);
      });
    });

  const setAside = async (attempt: ApplyAttempt, why: string) => {
    const event = eventRef(attempt.events[0]!);
    const reason = `${why} when applied alone`;
    try {
      if (await quarantineAlone(db, attempt.from, event, reason)) {
        isolateNext = false;
        onQuarantined?.({ projection: projection.name, ...event, reason });
      }
    } catch (error) {
      // The database is away: the next thread applies the page alone again, and a second end sets it aside then.
      isolateNext = true;
      report(error);
    }
  };

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

/** Why a thread ended, as a quarantine reason: out of memory, or the code and error it ended with. */
function threadEndReason(noun: string, code: number, error: unknown, maxHeapMb: number): string {
  const errorCode = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if (errorCode === 'ERR_WORKER_OUT_OF_MEMORY') return `it ran the projection's ${noun} out of memory (its heap is limited to ${maxHeapMb} MB)`;
  const detail = error instanceof Error ? `: ${error.name}: ${error.message}` : '';
  return `it ended the projection's ${noun} (exit code ${code}${detail})`;
}
