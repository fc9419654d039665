// How much of one turn of the event loop the HTTP server's requests may take. Each turn of a busy loop runs
// every request that arrived while the one before ran: at 50,000 active tenants through the doors (128
// connections, 0.2-1 ms a request) one turn served most connections' requests at once, and the loop's
// timers (the ledger's flush, the request-timeout check, everything due) waited 118-244 ms behind them
// (bench/scale.ts). Past the budget a request waits in a queue, in arrival order, and the queue is worked
// through from the timers of later turns, as much of it per turn as the budget allows. No request is refused
// or dropped: under load an answer is later, and every turn lets the rest of the process run.
//
// A turn's budget is counted from its first request (in the poll phase, or the queue's own work in the timers
// phase) to the check phase after it, where the turn is closed. Work already running is never cut: a turn
// overruns its budget by at most one request.

/** What one turn's requests may take before the next requests wait for a later turn. */
export const TURN_BUDGET_MS = 10;

export class TurnBudget {
  /** When this turn's first request ran (performance.now()), or -1 when no turn is open. */
  private turnStartedMs = -1;
  private readonly queue: (() => void)[] = [];
  private head = 0;
  private drainScheduled = false;
  /** Requests that waited for a later turn, since the start (http_requests_deferred_total on /metrics). */
  deferred = 0;

  private readonly closeTurn = () => {
    this.turnStartedMs = -1;
  };

  private readonly drain = () => {
    this.drainScheduled = false;
    this.open(performance.now());
    while (this.head < this.queue.length) {
      if (performance.now() - this.turnStartedMs >= this.budgetMs) {
        this.scheduleDrain();
        break;
      }
      const work = this.queue[this.head]!;
      this.queue[this.head++] = noWork;
      runWork(work);
    }
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    }
  };

  constructor(private readonly budgetMs = TURN_BUDGET_MS) {}

  /** Requests waiting for a later turn now. */
  get waiting(): number {
    return this.queue.length - this.head;
  }

  /**
   * Whether a request may run now: this turn has budget left and no request waits before it. Opens the turn
   * with the first request. When it answers false, hand the request to `later`.
   */
  hasRoom(): boolean {
    const now = performance.now();
    this.open(now);
    return this.head === this.queue.length && now - this.turnStartedMs < this.budgetMs;
  }

  /** Queues a request's work for a later turn, behind those waiting. `work` answers its own faults. */
  later(work: () => void): void {
    this.deferred++;
    this.queue.push(work);
    this.scheduleDrain();
  }

  private open(now: number): void {
    if (this.turnStartedMs >= 0) return;
    this.turnStartedMs = now;
    setImmediate(this.closeTurn);
  }

  /**
   * The queue is worked on from a timer: timers run first in a turn, and a timer set now is never due in the
   * timers phase under way, so the queue's work always waits for a turn after this one.
   */
  private scheduleDrain(): void {
    if (this.drainScheduled) return;
    this.drainScheduled = true;
    setTimeout(this.drain, 0);
  }
}

function noWork(): void {}

function runWork(work: () => void): void {
  try {
    work();
  } catch (error) {
    // The queue goes on; the fault reaches the process as a throw in a handler would have.
    queueMicrotask(() => {
      throw error;
    });
  }
}
