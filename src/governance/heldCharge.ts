// A readings charge decided now and tallied once its caller knows what became of the request
// (Governor.hold, Governor.chargeUntilSettled): the HTTP ingest door charges readings before it checks the
// credential and before the sink takes them (docs/governance-model.md, the order of a door's checks), and only then knows whether they were taken.
import type { AllowanceState } from './allowanceState.ts';
import type { QuotaMeter } from './quotaMeter.ts';
import { OUTCOME_ADMITTED, OUTCOME_REJECTED, OUTCOME_UNAUTHENTICATED } from './allowanceState.ts';

/**
 * - admitted: taken (HTTP 202): counted as admitted.
 * - unauthenticated: the credential failed after the charge (HTTP 401): counted as unauthenticated, apart.
 * - rejected: refused for its content after the charge (the sink can never take it: too large for NATS, not
 *   serialisable; HTTP 413/400, a broker message acknowledged and skipped): counted as rejected, never admitted.
 * - withdrawn: not taken for a reason of the service's or of another limit (HTTP 503, a 429 on API_REQUESTS):
 *   not counted; the client's retry is.
 * Whatever is not admitted gives the units it took of a period quota back: a quota counts only what was taken,
 * so neither a client's retries nor requests with a wrong key spend a tenant's day.
 */
export type ChargeOutcome = 'admitted' | 'unauthenticated' | 'rejected' | 'withdrawn';

export type HeldTally = (allowance: AllowanceState, at: number, units: number, outcome: number, cause: number) => void;

/**
 * The caller's end of a held charge: the Governor fills it (Governor.hold), the caller settles it. A caller may
 * make one per request or reuse one once it is settled.
 */
export class HeldCharge {
  // The held admission's tally arguments, as fields rather than an object of their own: the HTTP ingest door
  // holds one charge per request.
  /** null when nothing is held: the charge was refused (already tallied), nothing is tallied (no Recorder), or it was settled. */
  private allowance: AllowanceState | null = null;
  private cause = -1;
  private at = 0;
  private units = 0;
  private tally: HeldTally | null = null;
  // The period quota the units were taken from, where, and in which period (QuotaMeter.giveBackTaken).
  private quota: QuotaMeter | null = null;
  private quotaFrom = 0;
  private quotaPeriodStartMs = 0;

  /** Called by the Governor with what settle will tally; `allowance` null when there is nothing to settle. */
  hold(allowance: AllowanceState | null, cause: number, at: number, units: number, tally: HeldTally): void {
    this.allowance = allowance;
    this.cause = cause;
    this.at = at;
    this.units = units;
    this.tally = tally;
  }

  /** Called by the Governor after hold: the quota an admitted charge took its units from, or null. */
  holdQuota(quota: QuotaMeter | null): void {
    this.quota = quota;
    if (quota === null) return;
    this.quotaFrom = quota.lastTake;
    this.quotaPeriodStartMs = quota.startMs;
  }

  /** Tallies the admitted charge as `outcome`. Only the first call counts; a refused charge has nothing to settle. */
  settle(outcome: ChargeOutcome): void {
    const quota = this.quota;
    if (quota !== null) {
      this.quota = null;
      if (outcome !== 'admitted') quota.giveBackTaken(this.units, this.quotaFrom, this.quotaPeriodStartMs);
    }
    const allowance = this.allowance;
    if (allowance === null) return;
    this.allowance = null;
    if (outcome === 'withdrawn') return;
    const code = outcome === 'admitted' ? OUTCOME_ADMITTED : outcome === 'rejected' ? OUTCOME_REJECTED : OUTCOME_UNAUTHENTICATED;
    // The unresolved cause describes admissions at the platform default; unauthenticated units are not admitted.
    this.tally!(allowance, this.at, this.units, code, outcome === 'admitted' ? this.cause : -1);
  }

  get settled(): boolean {
    return this.allowance === null && this.quota === null;
  }
}

/** A held charge with a copy of its decision, as Governor.chargeUntilSettled makes one per call. */
export class DecidedCharge<Decision> extends HeldCharge {
  /** `Decision` is the Governor's AdmitDecision (a parameter here, so this file does not import the Governor). */
  constructor(readonly decision: Decision) {
    super();
  }
}
