// Counts of one allowance over a span of whole seconds, waiting for the Recorder: the closed seconds an
// AllowanceState has folded in since the last flush (several of them when a slow Recorder made windows merge).

export const CAUSE_PENDING = 0;
export const CAUSE_UNREACHABLE = 1;
export const CAUSE_UNKNOWN_TENANT = 2;
export const CAUSE_NAMES = ['pending', 'unreachable', 'unknown-tenant'] as const;

export class Tally {
  fromSecond = 0;
  toSecond = 0;
  decisions = 0;
  admittedUnits = 0;
  admittedMessages = 0;
  shedUnits = 0;
  shedMessages = 0;
  rejectedUnits = 0;
  rejectedMessages = 0;
  unauthenticatedUnits = 0;
  unauthenticatedMessages = 0;
  hitSeconds = 0;
  /** Admitted at the platform default while the tenant's ceilings were unknown, by cause. */
  readonly unresolvedUnits = [0, 0, 0];
  readonly unresolvedMessages = [0, 0, 0];

  clear(): void {
    this.decisions = 0;
    this.admittedUnits = 0;
    this.admittedMessages = 0;
    this.shedUnits = 0;
    this.shedMessages = 0;
    this.rejectedUnits = 0;
    this.rejectedMessages = 0;
    this.unauthenticatedUnits = 0;
    this.unauthenticatedMessages = 0;
    this.hitSeconds = 0;
    for (let cause = 0; cause < CAUSE_NAMES.length; cause++) {
      this.unresolvedUnits[cause] = 0;
      this.unresolvedMessages[cause] = 0;
    }
  }

  /** Widens the span to cover `second`. */
  cover(second: number): void {
    if (this.decisions === 0) {
      this.fromSecond = second;
      this.toSecond = second;
    } else if (second < this.fromSecond) this.fromSecond = second;
    else if (second > this.toSecond) this.toSecond = second;
  }
}
