// Counts of one allowance over a span of whole seconds: what the Governor hands the Recorder. Plain number
// fields, reset in place, so counting a decision allocates nothing.

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
  hitSeconds = 0;
  /** Admitted at the platform default while the tenant's ceilings were unknown, by cause. */
  unresolvedUnits = [0, 0, 0];
  unresolvedMessages = [0, 0, 0];

  clear(second: number): void {
    this.fromSecond = second;
    this.toSecond = second;
    this.decisions = 0;
    this.admittedUnits = 0;
    this.admittedMessages = 0;
    this.shedUnits = 0;
    this.shedMessages = 0;
    this.rejectedUnits = 0;
    this.rejectedMessages = 0;
    this.hitSeconds = 0;
    for (let cause = 0; cause < 3; cause++) {
      this.unresolvedUnits[cause] = 0;
      this.unresolvedMessages[cause] = 0;
    }
  }

  /** Adds another span; the result covers both (windows merge, no count is lost). */
  merge(other: Tally): void {
    if (other.decisions === 0) return;
    if (this.decisions === 0) {
      this.fromSecond = other.fromSecond;
      this.toSecond = other.toSecond;
    } else {
      if (other.fromSecond < this.fromSecond) this.fromSecond = other.fromSecond;
      if (other.toSecond > this.toSecond) this.toSecond = other.toSecond;
    }
    this.decisions += other.decisions;
    this.admittedUnits += other.admittedUnits;
    this.admittedMessages += other.admittedMessages;
    this.shedUnits += other.shedUnits;
    this.shedMessages += other.shedMessages;
    this.rejectedUnits += other.rejectedUnits;
    this.rejectedMessages += other.rejectedMessages;
    this.hitSeconds += other.hitSeconds;
    for (let cause = 0; cause < 3; cause++) {
      this.unresolvedUnits[cause]! += other.unresolvedUnits[cause]!;
      this.unresolvedMessages[cause]! += other.unresolvedMessages[cause]!;
    }
  }
}
