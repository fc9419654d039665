// admit() that stays synchronous in a process far from the service: slices of each tenant's budget are
// leased from the service in the background (as YouTube's Doorman and Sentry Relay's global quotas do) and
// spent here; what was admitted and refused goes back every exchange as per-second summaries, which the
// service hands to the same Recorder as its own decisions, so the ledger still sees every one.
//
// When the service cannot be reached, each key meters locally at half its last known limit per second
// (OpenRUM's rule for a lost shared counter), counted in stats().fallbackAdmittedUnits, and summaries wait
// until it answers again: seconds not sent yet merge per key and minute (the service takes no summary
// spanning more), and a summary once sent keeps its id and is sent again unchanged, so the service records
// it once even when the answer that said so was lost. Nothing here ever throws at a caller of admit().
import type { ClientSummary, LeaseAnswer, LeaseExchange, LeaseRequest } from './protocol.ts';

export interface LeasingClientOptions {
  /** Base URL of the service, e.g. http://governance:4000. */
  url: string;
  /** A bearer token of the SERVICE role. */
  token: string;
  /** How often leases are topped up and summaries sent (ms, default 50). */
  exchangeIntervalMs?: number;
  /** After a failed exchange, the next is tried this much later (ms, default 1000). */
  retryMs?: number;
  /** An exchange not answered within this is a failure (ms, default 2000). */
  timeoutMs?: number;
  /** The local limit per second of a key whose limit was never learnt, while the service is unreachable (default 1). */
  unknownLimitFallback?: number;
  now?: () => number;
}

export interface LeasingClientStats {
  /** The last exchange failed: keys meter locally at half their limit. */
  fallbackActive: boolean;
  fallbackAdmittedUnits: number;
  failedExchanges: number;
  /** Summaries waiting to be delivered. */
  pendingSummaries: number;
  /** Summaries the service refused (out of its bounds): dropped, never sent again. */
  refusedSummaries: number;
}

/** How many admits may pass between reads of the wall clock (reading it costs more than an admit). */
const CLOCK_READ_EVERY = 64;
/** Leases and summaries per exchange: the service takes at most 1,000 of each. */
const MAX_PER_EXCHANGE = 1000;
/** Seconds not yet sent merge per key within one minute: the service takes no summary spanning more. */
const SUMMARY_SPAN_SECONDS = 60;

class Allowance {
  granted = 0;
  expiresAtMs = 0;
  /** Per second (per window); 0 until the first grant. */
  limit = 0;
  offered = 0;
  wantedAtMs = Number.NEGATIVE_INFINITY;
  fallbackSecond = -1;
  fallbackUsed = 0;
  second = -1;
  admittedUnits = 0;
  admittedCount = 0;
  refusedUnits = 0;
  refusedCount = 0;

  constructor(
    readonly key: string,
    readonly tenantId: string,
    readonly dimension: string,
    readonly allowance: string | null,
  ) {}
}

export class LeasingClient {
  private readonly byTenant = new Map<string, Map<string, Map<string, Allowance>>>();
  private readonly all: Allowance[] = [];
  /** Closed seconds not sent yet, merged per key and minute (no id yet). */
  private readonly pending = new Map<string, ClientSummary>();
  /** Summaries sent whose fate is unknown (the exchange failed), with their ids; sent again first, unchanged. */
  private unsent: ClientSummary[] = [];
  private refusedSummaries = 0;
  private readonly now: () => number;
  private readonly timer: NodeJS.Timeout;
  private readonly options: Required<Omit<LeasingClientOptions, 'now'>>;
  private clockMs: number;
  private sinceClock = 0;
  private exchanging: Promise<void> | null = null;
  private unreachable = false;
  private retryAtMs = 0;
  private fallbackAdmittedUnits = 0;
  private failedExchanges = 0;
  private closed = false;

  constructor(options: LeasingClientOptions) {
    this.options = { exchangeIntervalMs: 50, retryMs: 1000, timeoutMs: 2000, unknownLimitFallback: 1, ...options };
    this.now = options.now ?? Date.now;
    this.clockMs = this.now();
    this.timer = setInterval(() => this.tick(), this.options.exchangeIntervalMs);
    this.timer.unref();
  }

  /**
   * Admits `units` (a whole number) on the tenant's dimension (and allowance) from the slice leased here, or
   * refuses them.
   * Synchronous, no I/O. A key's first admits, before its first grant arrives (one round trip), are refused:
   * call prepare() ahead for keys known in advance.
   */
  admit(tenantId: string, dimension: string, allowance: string | null = null, units = 1): boolean {
    return this.spend(this.allowanceOf(tenantId, dimension, allowance), units);
  }

  /** Starts leasing for a key before its first admit. */
  prepare(tenantId: string, dimension: string, allowance: string | null = null): void {
    this.allowanceOf(tenantId, dimension, allowance).offered += 1;
  }

  stats(): LeasingClientStats {
    return {
      fallbackActive: this.unreachable,
      fallbackAdmittedUnits: this.fallbackAdmittedUnits,
      failedExchanges: this.failedExchanges,
      pendingSummaries: this.pending.size + this.unsent.length,
      refusedSummaries: this.refusedSummaries,
    };
  }

  /** Sends every summary (the current second's too) and stops; never rejects. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.closed = true;
    while (this.exchanging !== null) await this.exchanging;
    this.collect(true);
    // In slices of what one exchange carries; a failed one ends the attempt (the summaries are lost with the process).
    while (this.pending.size + this.unsent.length > 0) {
      const failedBefore = this.failedExchanges;
      await this.exchange([]);
      if (this.failedExchanges !== failedBefore) break;
    }
  }

  private allowanceOf(tenantId: string, dimension: string, allowance: string | null): Allowance {
    let dimensions = this.byTenant.get(tenantId);
    if (dimensions === undefined) this.byTenant.set(tenantId, (dimensions = new Map()));
    let allowances = dimensions.get(dimension);
    if (allowances === undefined) dimensions.set(dimension, (allowances = new Map()));
    const name = allowance ?? '';
    let state = allowances.get(name);
    if (state === undefined) {
      state = new Allowance(`${tenantId}\u0000${dimension}\u0000${name}`, tenantId, dimension, allowance);
      allowances.set(name, state);
      this.all.push(state);
    }
    return state;
  }

  private spend(state: Allowance, units: number): boolean {
    // Units are whole numbers (the service refuses a summary with a fraction in it, and every count in it
    // with it): anything else is refused here and counted nowhere.
    if (!Number.isSafeInteger(units) || units < 0) return false;
    if (++this.sinceClock >= CLOCK_READ_EVERY) this.readClock();
    const nowMs = this.clockMs;
    state.offered += units;
    let admitted: boolean;
    if (this.unreachable) {
      const second = Math.floor(nowMs / 1000);
      if (second !== state.fallbackSecond) {
        state.fallbackSecond = second;
        state.fallbackUsed = 0;
      }
      const cap = state.limit > 0 ? state.limit / 2 : this.options.unknownLimitFallback;
      admitted = state.fallbackUsed + units <= cap;
      if (admitted) {
        state.fallbackUsed += units;
        this.fallbackAdmittedUnits += units;
      }
    } else {
      if (nowMs >= state.expiresAtMs) state.granted = 0;
      admitted = state.granted >= units;
      if (admitted) state.granted -= units;
    }
    const second = Math.floor(nowMs / 1000);
    if (second !== state.second) this.closeSecond(state, second);
    if (admitted) {
      state.admittedUnits += units;
      state.admittedCount++;
    } else {
      state.refusedUnits += units;
      state.refusedCount++;
    }
    return admitted;
  }

  private readClock(): void {
    this.sinceClock = 0;
    this.clockMs = this.now();
  }

  /** Moves the counts of the state's open second to the pending summaries and opens `second`. */
  private closeSecond(state: Allowance, second: number): void {
    if (state.admittedCount + state.refusedCount > 0) {
      const pendingKey = `${state.key}\u0000${Math.floor(state.second / SUMMARY_SPAN_SECONDS)}`;
      const summary = this.pending.get(pendingKey);
      const hit = state.refusedCount > 0 ? 1 : 0;
      if (summary === undefined) {
        this.pending.set(pendingKey, {
          tenantId: state.tenantId,
          dimension: state.dimension,
          allowance: state.allowance,
          fromSecond: state.second,
          seconds: 1,
          admittedUnits: state.admittedUnits,
          admittedCount: state.admittedCount,
          refusedUnits: state.refusedUnits,
          refusedCount: state.refusedCount,
          hitSeconds: hit,
        });
      } else {
        // Undelivered seconds of one key and minute merge into one span: memory grows by a summary per key and
        // minute while the service is unreachable, and no span reaches past its minute.
        const to = Math.max(summary.fromSecond + summary.seconds - 1, state.second);
        summary.fromSecond = Math.min(summary.fromSecond, state.second);
        summary.seconds = to - summary.fromSecond + 1;
        summary.admittedUnits += state.admittedUnits;
        summary.admittedCount += state.admittedCount;
        summary.refusedUnits += state.refusedUnits;
        summary.refusedCount += state.refusedCount;
        summary.hitSeconds = Math.min(summary.hitSeconds + hit, summary.seconds);
      }
    }
    state.second = second;
    state.admittedUnits = 0;
    state.admittedCount = 0;
    state.refusedUnits = 0;
    state.refusedCount = 0;
  }

  private collect(includeCurrent: boolean): void {
    const second = Math.floor(this.now() / 1000);
    for (const state of this.all) {
      if (state.second >= 0 && (includeCurrent || state.second < second)) this.closeSecond(state, includeCurrent ? -1 : second);
    }
  }

  private tick(): void {
    this.readClock();
    if (this.exchanging !== null || this.closed) return;
    if (this.unreachable && this.clockMs < this.retryAtMs) return;
    this.collect(false);
    const leases: LeaseRequest[] = [];
    const asked: Allowance[] = [];
    for (const state of this.all) {
      if (state.offered === 0 && this.clockMs >= state.expiresAtMs) continue;
      // Twice the demand of one exchange interval (Doorman sizes leases by demand), asked for when what is
      // held falls below one interval's demand or has expired.
      const want = Math.max(1, Math.ceil(2 * state.offered));
      const held = this.clockMs >= state.expiresAtMs ? 0 : state.granted;
      state.offered = 0;
      if (held >= want / 2 && !this.unreachable) continue;
      leases.push({ tenantId: state.tenantId, dimension: state.dimension, allowance: state.allowance, want });
      asked.push(state);
    }
    if (leases.length === 0 && this.pending.size === 0 && this.unsent.length === 0) return;
    void this.exchange(leases, asked);
  }

  /** Up to MAX_PER_EXCHANGE summaries to send: the unsent ones first, unchanged, then new ones, each given an id. */
  private takeSummaries(): ClientSummary[] {
    const summaries = this.unsent.splice(0, MAX_PER_EXCHANGE);
    for (const [key, summary] of this.pending) {
      if (summaries.length >= MAX_PER_EXCHANGE) break;
      this.pending.delete(key);
      summary.id = globalThis.crypto.randomUUID();
      summaries.push(summary);
    }
    return summaries;
  }

  private exchange(leases: LeaseRequest[], asked: Allowance[] = []): Promise<void> {
    // The leases past what one exchange carries are asked for at the next tick.
    leases = leases.slice(0, MAX_PER_EXCHANGE);
    asked = asked.slice(0, MAX_PER_EXCHANGE);
    const summaries = this.takeSummaries();
    const body: LeaseExchange = { leases, summaries };
    // A grant is valid for validForMs from when the service decided it (to the end of its window); the request
    // left before that, so counting from the send time never lets a slice outlive the service's window, however
    // late the answer arrives. Counted from the answer's arrival, a late answer let the rest of one window's
    // grant be spent in the next, on top of that window's own (up to twice the limit in a window).
    const sentAtMs = this.now();
    const run = async () => {
      try {
        const response = await fetch(`${this.options.url}/v1/leases`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${this.options.token}` },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(this.options.timeoutMs),
        });
        if (!response.ok) throw new Error(`lease exchange answered ${response.status}`);
        const answer = (await response.json()) as LeaseAnswer;
        const nowMs = this.now();
        asked.forEach((state, i) => {
          const grant = answer.grants[i];
          if (grant === undefined) return;
          if (nowMs >= state.expiresAtMs) state.granted = 0;
          state.granted += grant.granted;
          state.expiresAtMs = sentAtMs + grant.validForMs;
          state.limit = grant.limit;
        });
        // A refused summary is out of the service's bounds and would be refused again: dropped, counted.
        answer.summaries?.forEach((outcome) => {
          if ('error' in outcome) this.refusedSummaries++;
        });
        this.unreachable = false;
      } catch {
        this.failedExchanges++;
        this.unreachable = true;
        this.retryAtMs = this.now() + this.options.retryMs;
        for (const state of asked) state.granted = 0;
        // Perhaps recorded, perhaps not: sent again first, unchanged and under the same ids, so never twice.
        this.unsent = summaries.concat(this.unsent);
      }
    };
    this.exchanging = run().finally(() => {
      this.exchanging = null;
    });
    return this.exchanging;
  }
}
