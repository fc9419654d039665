// Turns the per-second tallies of dirty allowances into Recorder batches. Entries are keyed by
// (tenant, dimension, allowance) or (tenant, dimension, cause); a batch the Recorder failed to take stays here
// and the next flush adds into the same entries, so memory is bounded by active keys and no count is lost.
import type { AllowanceState } from './allowanceState.ts';
import { CAUSE_NAMES } from './tally.ts';
import type { Tally } from './tally.ts';
import type { AdmissionSummary, UnresolvedAdmissionSummary } from './types.ts';

export class AdmissionBatch {
  readonly admissions = new Map<string, AdmissionSummary>();
  readonly unresolved = new Map<string, UnresolvedAdmissionSummary>();

  get isEmpty(): boolean {
    return this.admissions.size === 0 && this.unresolved.size === 0;
  }

  /** Drops entries a Recorder stored before it failed (RecordedInPart), so the next try does not count them twice. */
  forget(admissions: ReadonlySet<AdmissionSummary>, unresolved: ReadonlySet<UnresolvedAdmissionSummary>): void {
    for (const [key, entry] of this.admissions) if (admissions.has(entry)) this.admissions.delete(key);
    for (const [key, entry] of this.unresolved) if (unresolved.has(entry)) this.unresolved.delete(key);
  }

  add(allowance: AllowanceState, tally: Tally): void {
    const { tenantId, slot } = allowance;
    const key = `${tenantId}\u0000${slot.index}`;
    const entry = this.admissions.get(key);
    if (entry === undefined) {
      this.admissions.set(key, {
        tenantId,
        dimension: slot.dimension,
        allowance: slot.allowance,
        fromSecond: tally.fromSecond,
        seconds: tally.toSecond - tally.fromSecond + 1,
        admittedUnits: tally.admittedUnits,
        admittedMessages: tally.admittedMessages,
        shedUnits: tally.shedUnits,
        shedMessages: tally.shedMessages,
        rejectedUnits: tally.rejectedUnits,
        rejectedMessages: tally.rejectedMessages,
        unauthenticatedUnits: tally.unauthenticatedUnits,
        unauthenticatedMessages: tally.unauthenticatedMessages,
        hitSeconds: tally.hitSeconds,
      });
    } else {
      widen(entry, tally.fromSecond, tally.toSecond);
      entry.admittedUnits += tally.admittedUnits;
      entry.admittedMessages += tally.admittedMessages;
      entry.shedUnits += tally.shedUnits;
      entry.shedMessages += tally.shedMessages;
      entry.rejectedUnits += tally.rejectedUnits;
      entry.rejectedMessages += tally.rejectedMessages;
      entry.unauthenticatedUnits = (entry.unauthenticatedUnits ?? 0) + tally.unauthenticatedUnits;
      entry.unauthenticatedMessages = (entry.unauthenticatedMessages ?? 0) + tally.unauthenticatedMessages;
      entry.hitSeconds += tally.hitSeconds;
    }
    for (let cause = 0; cause < CAUSE_NAMES.length; cause++) {
      const messages = tally.unresolvedMessages[cause]!;
      if (messages === 0) continue;
      this.addUnresolved(tenantId, allowance, cause, tally, messages);
    }
  }

  private addUnresolved(tenantId: string, allowance: AllowanceState, cause: number, tally: Tally, messages: number): void {
    const key = `${tenantId}\u0000${allowance.slot.dimension}\u0000${cause}`;
    const units = tally.unresolvedUnits[cause]!;
    const entry = this.unresolved.get(key);
    if (entry === undefined) {
      this.unresolved.set(key, {
        tenantId,
        dimension: allowance.slot.dimension,
        cause: CAUSE_NAMES[cause]!,
        fromSecond: tally.fromSecond,
        seconds: tally.toSecond - tally.fromSecond + 1,
        units,
        messages,
      });
    } else {
      widen(entry, tally.fromSecond, tally.toSecond);
      entry.units += units;
      entry.messages += messages;
    }
  }
}

function widen(entry: { fromSecond: number; seconds: number }, fromSecond: number, toSecond: number): void {
  const to = Math.max(entry.fromSecond + entry.seconds - 1, toSecond);
  entry.fromSecond = Math.min(entry.fromSecond, fromSecond);
  entry.seconds = to - entry.fromSecond + 1;
}
