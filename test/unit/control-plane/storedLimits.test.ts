// Whatever a command is given, a limit it stores is one the cascade accepts as it is: validation and the
// cascade share one definition of "valid", so nothing the control plane writes is silently skipped later.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { acceptLimit, DIMENSIONS } from '../../../src/governance/index.ts';
import type { Dimension } from '../../../src/governance/index.ts';
import { setTierLimit } from '../../../src/control-plane/tierCommands.ts';
import { given, type GivenEvent } from '../../support/controlPlaneSpec.ts';

const gold: GivenEvent = { stream: 'tier-gold', type: 'TierDefined', data: { tierId: 'gold', name: 'Gold' } };
const field = fc.option(
  fc.oneof(fc.integer({ min: -5, max: 1_000_005 }), fc.double({ noNaN: false }), fc.constantFrom(0, 1, 1_000_000, 1_000_001, Number.POSITIVE_INFINITY)),
  { nil: undefined },
);

describe('limits the control plane stores', () => {
  it('are accepted by the cascade unchanged, or refused with a typed error', () => {
    fc.assert(
      fc.property(fc.constantFrom(...DIMENSIONS), field, field, field, (dimension: Dimension, ratePerSecond, burst, ceiling) => {
        const outcome = given(gold).when(setTierLimit, { tierId: 'gold', dimension, ratePerSecond, burst, ceiling });
        if ('error' in outcome) {
          expect(['InvalidLimit']).toContain(outcome.error.kind);
          return;
        }
        const event = outcome.events[0]!;
        if (event.type !== 'TierLimitSet') throw new Error(`unexpected ${event.type}`);
        const accepted = acceptLimit(dimension, event.data.value);
        expect(accepted).toBeDefined();
        for (const [name, value] of Object.entries(event.data.value)) expect(accepted![name as keyof typeof accepted]).toBe(value);
      }),
      { numRuns: 2_000 },
    );
  });
});
