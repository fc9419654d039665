// Worker threads that analyse export lines (exportLines.ts): JSON parsing, the RFC 8785 form and SHA-256 of
// each leaf, which are most of a verify's work and need no other line. Batches go round the threads and come
// back in the order they were sent, so the verifier's ordered pass sees the lines as the file has them.
import { availableParallelism } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { packagePath } from '../../packageRoot.ts';
import { analyseBatch, type AnalysedBatch } from './exportLines.ts';

/** Lines per message: large enough that a message's cost is small beside its work. */
export const LINES_PER_BATCH = 1_000;
/** Below this many leaves the threads' start costs more than they save: the verify runs inline. */
export const PARALLEL_FROM_LEAVES = 50_000;

/** The thread's module: leafHashWorker.ts from the sources (with tsx's loader), the bundle's leaf-hash-worker.js once built. */
function workerStart(): { start: string | URL; eval: boolean } {
  if (!fileURLToPath(import.meta.url).endsWith('.ts')) return { start: pathToFileURL(packagePath('dist', 'service', 'leaf-hash-worker.js')), eval: false };
  const entry = new URL('./leafHashWorker.ts', import.meta.url);
  const tsx = import.meta.resolve('tsx/esm/api');
  // A `--import tsx` given to the thread is not applied to its own entry on Node 20: register it first.
  return { start: `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); })`, eval: true };
}

/** The default number of worker threads: one per core beside the reading thread, which takes its turn too. */
export function defaultLeafHashers(): number {
  return Math.max(1, availableParallelism() - 1);
}

/**
 * The lines analysed in batches, in order: by `threads` worker threads (at most 2 batches each in flight), or
 * inline when `threads` is 0.
 */
export async function* analyseLines(lines: AsyncIterator<string>, threads: number): AsyncGenerator<AnalysedBatch> {
  if (threads <= 0) {
    let batch: string[] = [];
    for (let next = await lines.next(); !next.done; next = await lines.next()) {
      batch.push(next.value);
      if (batch.length === LINES_PER_BATCH) {
        yield analyseBatch(batch);
        batch = [];
      }
    }
    if (batch.length > 0) yield analyseBatch(batch);
    return;
  }
  const { start, eval: isEval } = workerStart();
  const workers = Array.from({ length: threads }, () => new Worker(start, { eval: isEval }));
  const waiting = new Map<number, { resolve: (batch: AnalysedBatch) => void; reject: (error: unknown) => void }>();
  for (const worker of workers) {
    worker.on('message', ({ id, batch }: { id: number; batch: AnalysedBatch }) => {
      waiting.get(id)?.resolve(batch);
      waiting.delete(id);
    });
    worker.on('error', (error) => {
      for (const pending of waiting.values()) pending.reject(error);
      waiting.clear();
    });
  }
  let sent = 0;
  // This thread takes its turn too: every (threads + 1)-th batch is analysed here rather than waiting idle for
  // the others (on a busy host a worker thread gets no more of a core than this one does).
  const send = (batch: string[]): Promise<AnalysedBatch> => {
    const id = sent++;
    if (id % (threads + 1) === threads) return Promise.resolve(analyseBatch(batch));
    const answer = new Promise<AnalysedBatch>((resolve, reject) => waiting.set(id, { resolve, reject }));
    workers[id % (threads + 1)]!.postMessage({ id, lines: batch });
    return answer;
  };
  const inFlight: Promise<AnalysedBatch>[] = [];
  try {
    let batch: string[] = [];
    let done = false;
    while (!done || inFlight.length > 0) {
      while (!done && inFlight.length < (threads + 1) * 2) {
        const next = await lines.next();
        if (next.done) done = true;
        else batch.push(next.value);
        if (batch.length === LINES_PER_BATCH || (done && batch.length > 0)) {
          inFlight.push(send(batch));
          batch = [];
        }
      }
      const analysed = await inFlight.shift();
      if (analysed) yield analysed;
    }
  } finally {
    // Answers still in flight (the verifier stopped early) are dropped with their threads.
    for (const pending of inFlight) pending.catch(() => undefined);
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
}
