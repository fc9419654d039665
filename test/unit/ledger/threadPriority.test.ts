// The projection worker thread lowers its own CPU priority (src/ledger/threadPriority.ts), and only its own: the
// thread that admits keeps the process' priority. Run in a thread of its own, as the projection worker runs it,
// and read back from the kernel (/proc/<pid>/task/<tid>/stat).
import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { currentThreadId, PROJECTION_THREAD_NICE } from '../../../src/ledger/threadPriority.ts';

/** A thread's nice value as the kernel reports it (field 19 of its stat line). */
function niceOf(tid: number): number {
  const stat = readFileSync(`/proc/${process.pid}/task/${tid}/stat`, 'utf8');
  // The command name (field 2) is in parentheses and may hold spaces: the fields are counted after it.
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}

describe.skipIf(process.platform !== 'linux')('the projection worker thread’s priority', () => {
  it('is lowered in the thread that asks, and nowhere else', async () => {
    const mainTid = currentThreadId()!;
    const before = niceOf(mainTid);
    const tsx = import.meta.resolve('tsx/esm/api');
    const module = new URL('../../../src/ledger/threadPriority.ts', import.meta.url).href;
    // As projectionWorker.ts starts a TypeScript thread entry: tsx registered in the thread, then the module.
    const worker = new Worker(
      `const { parentPort } = require('node:worker_threads');
       import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(module)}); }).then((priority) => {
         const tid = priority.currentThreadId();
         parentPort.postMessage({ tid, lowered: priority.lowerThisThreadsPriority(), again: priority.lowerThisThreadsPriority(5) });
         parentPort.once('message', () => process.exit(0));
       });`,
      { eval: true },
    );
    try {
      const answer = await new Promise<{ tid: number; lowered: number | null; again: number | null }>((resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
      });
      expect(answer.tid).not.toBe(mainTid);
      expect(answer.lowered).toBe(Math.max(before, PROJECTION_THREAD_NICE));
      expect(niceOf(answer.tid)).toBe(answer.lowered);
      // Never raised again (a lower nice would need a privilege, and would undo the point).
      expect(answer.again).toBe(answer.lowered);
      expect(niceOf(mainTid)).toBe(before);
    } finally {
      worker.postMessage('exit');
      await new Promise((resolve) => worker.once('exit', resolve));
    }
  });
});
