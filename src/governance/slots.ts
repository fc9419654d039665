// Every (dimension, allowance) pair the Governor meters gets a fixed slot index, derived from the catalog once,
// so per-tenant state is an array indexed by slot rather than a map keyed by strings built per call.
import { DIMENSION_CATALOG } from './dimensions.ts';
import type { LimiterKind } from './dimensions.ts';
import { DIMENSIONS } from './types.ts';
import type { Allowance, Dimension, OverLimitBehaviour } from './types.ts';

export interface SlotSpec {
  index: number;
  dimension: Dimension;
  dimensionIndex: number;
  allowance: Allowance | null;
  kind: Exclude<LimiterKind, 'COUNT_CEILING'>;
  overLimit: OverLimitBehaviour;
  /** Whether messages on this allowance are also charged once per message before decoding. */
  messageCharged: boolean;
}

/** Key used in SLOT_TABLE for dimensions without allowances. */
const NO_ALLOWANCE = 'NONE';

export const SLOTS: readonly SlotSpec[] = DIMENSIONS.flatMap((dimension, dimensionIndex) => {
  const spec = DIMENSION_CATALOG[dimension];
  if (spec.kind === 'COUNT_CEILING') return [];
  const allowances: (Allowance | null)[] = spec.allowances.length > 0 ? [...spec.allowances] : [null];
  return allowances.map((allowance) => ({
    index: 0,
    dimension,
    dimensionIndex,
    allowance,
    kind: spec.kind as Exclude<LimiterKind, 'COUNT_CEILING'>,
    overLimit: (allowance && spec.overLimitByAllowance[allowance]) || spec.overLimit,
    messageCharged: allowance !== null && spec.messageChargedAllowances.includes(allowance),
  }));
}).map((slot, index) => ({ ...slot, index }));

export const SLOT_COUNT = SLOTS.length;

const SLOT_TABLE: Record<string, Record<string, number>> = {};
for (const slot of SLOTS) {
  (SLOT_TABLE[slot.dimension] ??= {})[slot.allowance ?? NO_ALLOWANCE] = slot.index;
}

/** The slot of a (dimension, allowance) pair, or -1 when the Governor does not meter that pair. */
export function slotIndexOf(dimension: Dimension, allowance: Allowance | null | undefined): number {
  const byAllowance = SLOT_TABLE[dimension];
  if (byAllowance === undefined) return -1;
  const index = byAllowance[allowance ?? NO_ALLOWANCE];
  return index === undefined ? -1 : index;
}
