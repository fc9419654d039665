// Recorders compose: the service sends the same batches to the ledger and to metrics.
import type { AdmissionSummary, Recorder, UnresolvedAdmissionSummary } from './types.ts';

/**
 * Hands each batch to every recorder at once. The first is the recorder of record: only its failure fails the
 * batch, so the Governor keeps and retries it. A failure of the others (metrics) is reported as a process
 * warning and not retried, because a retry would hand the primary the same counts twice.
 */
export function fanOutRecorder(primary: Recorder, ...others: Recorder[]): Recorder {
  const all = [primary, ...others];
  // Summaries may be made again only when every recorder lets go of them.
  const released = all.every((each) => each.released !== undefined)
    ? (admissions: readonly AdmissionSummary[]) => all.forEach((each) => each.released!(admissions))
    : undefined;
  return {
    ...(released !== undefined && { released }),
    async record(admissions: readonly AdmissionSummary[], unresolved: readonly UnresolvedAdmissionSummary[], batchId?: string) {
      const [first, ...rest] = await Promise.allSettled(all.map((each) => each.record(admissions, unresolved, batchId)));
      for (const result of rest) {
        if (result.status === 'rejected') process.emitWarning(toError(result.reason), 'GovernanceRecorderWarning');
      }
      if (first!.status === 'rejected') throw first!.reason;
    },
  };
}

function toError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason));
}
