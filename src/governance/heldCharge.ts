// A readings charge decided now and tallied once its caller knows what became of the request
// (Governor.chargeUntilSettled): the HTTP ingest door charges readings before it checks the credential and
// before the sink takes them (docs/governance-model.md, the order of a door's checks), and only then knows whether they were taken.
import type { AllowanceState } from './allowanceState.ts';
import { OUTCOME_ADMITTED, OUTCOME_UNAUTHENTICATED } from './allowanceState.ts';

/**
 * - admitted: taken (HTTP 202): counted as admitted.
 * - unauthenticated: the credential failed after the charge (HTTP 401): counted as unauthenticated, apart.
 * - withdrawn: not taken for a reason of the service's or of another limit (HTTP 503, a 429 on API_REQUESTS):
 *   not counted; the client's retry is.
 */
export type ChargeOutcome = 'admitted' | 'unauthenticated' | 'withdrawn';

export type HeldTally = (allowance: AllowanceState, at: number, units: number, outcome: number, cause: number) => void;

/** `Decision` is the Governor's AdmitDecision (a parameter here, so this file does not import the Governor). */
export class HeldCharge<Decision> {
  // The held admission's tally arguments, as fields rather than an object of their own: the HTTP ingest door
  // holds one charge per request.
  private allowance: AllowanceState | null;

  /** `allowance` is null when the charge was refused (already tallied) or nothing is tallied (no Recorder). */
  constructor(
    readonly decision: Decision,
    allowance: AllowanceState | null,
    private readonly cause: number,
    private readonly at: number,
    private readonly units: number,
    private readonly tally: HeldTally,
  ) {
    this.allowance = allowance;
  }

  /** Tallies the admitted charge as `outcome`. Only the first call counts; a refused charge has nothing to settle. */
  settle(outcome: ChargeOutcome): void {
    const allowance = this.allowance;
    if (allowance === null) return;
    this.allowance = null;
    if (outcome === 'withdrawn') return;
    const code = outcome === 'admitted' ? OUTCOME_ADMITTED : OUTCOME_UNAUTHENTICATED;
    // The unresolved cause describes admissions at the platform default; unauthenticated units are not admitted.
    this.tally(allowance, this.at, this.units, code, outcome === 'admitted' ? this.cause : -1);
  }

  get settled(): boolean {
    return this.allowance === null;
  }
}
