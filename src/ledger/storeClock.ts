// The ledger's clock as the Recorder sees it: the database stamps each summary event's recorded_at, which picks
// its day partition (migrations/0100_ledger_summary_partitions.sql), so where a UTC midnight falls for summary
// references (keySourceIndex.ts) is the database's midnight, not the service's. The Recorder reads the store's
// clock off the flush path, about once a minute (a one-row SELECT), and estimates it between readings as its
// own clock plus the offset last measured, with an error of half that reading's round trip plus a drift
// allowance. Unknown (no reading yet, none for ten minutes, or a store without a clock of its own) is
// answered as such, and the key index then keeps its widest margin.

/** How often the store's clock is read. */
export const READ_EVERY_MS = 60_000;
/** A reading older than this is not used: the estimate is unknown until the next one. */
export const READING_KEPT_MS = 10 * 60_000;
/** After a failed reading, the next is tried no sooner than this. */
export const RETRY_AFTER_MS = 10_000;
/** Added to each reading's error: what two clocks kept by NTP may drift apart in a reading's lifetime, and more. */
export const DRIFT_ALLOWANCE_MS = 1_000;

export interface StoreTime {
  /** The store's clock now, estimated (Unix ms). */
  nowMs: number;
  /** How far off `nowMs` may be either way; null when the store's clock is not known (nowMs is then the local clock). */
  errorMs: number | null;
}

export class StoreClock {
  private offsetMs = 0;
  private errorMs = 0;
  private readAtMs = Number.NEGATIVE_INFINITY;
  private triedAtMs = Number.NEGATIVE_INFINITY;
  private reading = false;

  /**
   * @param readStoreMs the store's clock (Unix ms), or undefined for a store whose clock is the service's own
   *   or that keeps no day partitions
   * @param now the local clock the Recorder plans by
   */
  constructor(
    private readonly readStoreMs: (() => Promise<number>) | undefined,
    private readonly now: () => number,
  ) {}

  /** Starts a reading when one is due (never awaited: the estimate improves for later plans). Never throws. */
  readIfDue(): void {
    if (this.readStoreMs === undefined || this.reading) return;
    const sentAt = this.now();
    if (sentAt - this.readAtMs < READ_EVERY_MS || sentAt - this.triedAtMs < RETRY_AFTER_MS) return;
    this.reading = true;
    this.triedAtMs = sentAt;
    this.readStoreMs()
      .then(
        (storeMs) => {
          const answeredAt = this.now();
          if (!Number.isFinite(storeMs) || answeredAt < sentAt) return;
          this.offsetMs = storeMs - (sentAt + answeredAt) / 2;
          this.errorMs = (answeredAt - sentAt) / 2 + DRIFT_ALLOWANCE_MS;
          this.readAtMs = answeredAt;
        },
        () => {
          // Kept as it was: a reading too old is dropped by its age (READING_KEPT_MS).
        },
      )
      .finally(() => {
        this.reading = false;
      });
  }

  /** The store's clock at local time `localMs`. */
  at(localMs: number): StoreTime {
    if (localMs - this.readAtMs > READING_KEPT_MS || localMs < this.readAtMs - READ_EVERY_MS) return { nowMs: localMs, errorMs: null };
    return { nowMs: localMs + this.offsetMs, errorMs: this.errorMs };
  }
}
