// How much of one turn of the event loop the HTTP server's requests may take. Each turn of a busy loop runs
// every request that arrived while the one before ran: at 50,000 active tenants through the doors (128
// connections, 0.2-1 ms a request) one turn served most connections' requests at once, and the loop's
// timers (the ledger's flush, the request-timeout check, everything due) waited 118-244 ms behind them
// (bench/scale.ts). Past the budget a request waits in a queue, in arrival order, and the queue is worked
// through one request a turn, with the timers and the rest of the process' work between them. No request is
// refused or dropped: under load an answer is later, and every turn lets the rest of the process run.
//
// A turn's budget is counted from its first request to the check phase after it, where the turn is closed;
// the time of a request's work that follows its handler (ticks, microtasks) counts, since the next request's
// callback comes after it. Work already running is never cut: a turn overruns its budget by one request.

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

  /**
   * Runs the queue's first request, then lets the loop turn before the next one. One a turn: a request's own
   * work goes on after its handler returns (its body's events, the decision after an await), in the ticks and
   * microtasks that follow the callback that started it, and a loop over the queue in one callback would have
   * started every request within the budget and run all their work after it, in one burst.
   */
  private readonly drain = () => {
    this.drainScheduled = false;
    if (this.head === this.queue.length) return;
    const work = this.queue[this.head]!;
    this.queue[this.head++] = noWork;
    runWork(work);
    if (this.head < this.queue.length) this.scheduleDrain();
    else {
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

  /** The queue's next request runs from the check phase of this turn or, from there, of the next one. */
  private scheduleDrain(): void {
    if (this.drainScheduled) return;
    this.drainScheduled = true;
    setImmediate(this.drain);
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
