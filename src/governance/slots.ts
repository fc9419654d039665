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

// Parallel arrays scanned linearly: the names callers pass are interned constants, so each comparison is a
// pointer check, which measured several times faster than a keyed lookup on a table of varying keys.
const SLOT_DIMENSIONS: readonly Dimension[] = SLOTS.map((slot) => slot.dimension);
const SLOT_ALLOWANCES: readonly (Allowance | null)[] = SLOTS.map((slot) => slot.allowance);

/** The slot of a (dimension, allowance) pair, or -1 when the Governor does not meter that pair. */
export function slotIndexOf(dimension: Dimension, allowance: Allowance | null | undefined): number {
  const wanted = allowance === undefined ? null : allowance;
  for (let index = 0; index < SLOT_COUNT; index++) {
    if (SLOT_DIMENSIONS[index] === dimension && SLOT_ALLOWANCES[index] === wanted) return index;
  }
  return -1;
}
