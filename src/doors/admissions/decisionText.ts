// A decision of the admission API's answer as JSON text, the same bytes JSON.stringify writes for the object
// Governor.admit returns, made from the Governor's own record of the decision (Governor.decide) without an
// object per item. A batch's decisions repeat a few shapes (admitted with so much left, refused for so long),
// so each text is made once and kept in a small direct-mapped table, found again by comparing every field.
import type { AdmitDecision } from '../../governance/index.ts';

/** AdmitDecision's fields, in the order Governor.admit's copy lists them (and JSON.stringify writes them). */
const FIELDS = [
  'admitted',
  'behaviour',
  'limit',
  'remaining',
  'retryAfterSeconds',
  'burst',
  'neverFits',
  'scope',
  'source',
  'quotaExceeded',
  'quotaPeriod',
] as const satisfies readonly (keyof AdmitDecision)[];

// A field added to AdmitDecision and not listed above fails to compile here (test/unit/doors/admissions checks
// the order against admit's copy).
type Unlisted = Exclude<keyof AdmitDecision, (typeof FIELDS)[number]>;
const EVERY_FIELD_LISTED: [Unlisted] extends [never] ? true : Unlisted = true;
void EVERY_FIELD_LISTED;

/** A decision's text, kept with the fields it was written from. */
export interface DecisionText extends Readonly<AdmitDecision> {
  readonly text: string;
}

/** Distinct decisions kept (a power of two); a batch of one tenant mix has a handful. */
const SLOTS = 256;

export class DecisionTexts {
  private readonly written: (DecisionText | undefined)[] = new Array<DecisionText | undefined>(SLOTS).fill(undefined);

  /**
   * The decision's JSON text. Every field is compared (numbers by value: -0 and 0 write alike, NaN never
   * matches and is written anew), so a kept text is the one JSON.stringify would write.
   */
  textOf(decision: Readonly<AdmitDecision>): DecisionText {
    const slot = (((decision.remaining * 31 + decision.retryAfterSeconds * 7 + decision.limit * 131 + decision.burst) | 0) ^ (decision.admitted ? 0x55 : 0)) & (SLOTS - 1);
    const kept = this.written[slot];
    if (
      kept !== undefined &&
      kept.remaining === decision.remaining &&
      kept.retryAfterSeconds === decision.retryAfterSeconds &&
      kept.admitted === decision.admitted &&
      kept.limit === decision.limit &&
      kept.burst === decision.burst &&
      kept.behaviour === decision.behaviour &&
      kept.neverFits === decision.neverFits &&
      kept.scope === decision.scope &&
      kept.source === decision.source &&
      kept.quotaExceeded === decision.quotaExceeded &&
      kept.quotaPeriod === decision.quotaPeriod
    ) {
      return kept;
    }
    const copy = {} as Record<string, unknown>;
    for (const field of FIELDS) copy[field] = decision[field];
    const text = JSON.stringify(copy);
    const written: DecisionText = { ...(copy as unknown as AdmitDecision), text };
    this.written[slot] = written;
    return written;
  }
}
