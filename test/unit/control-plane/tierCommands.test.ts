import { describe, expect, it } from 'vitest';
import { clearTierLimit, defineTier, setTierDefaultModel, setTierLimit } from '../../../src/control-plane/tierCommands.ts';
import { given, type GivenEvent } from '../../support/controlPlaneSpec.ts';

const goldDefined: GivenEvent = { stream: 'tier-gold', type: 'TierDefined', data: { tierId: 'gold', name: 'Gold' } };
const goldIngest: GivenEvent = {
  stream: 'tier-gold',
  type: 'TierLimitSet',
  data: { tierId: 'gold', dimension: 'INGEST', previous: null, value: { ratePerSecond: 5000, burst: 10000 } },
};

describe('defineTier', () => {
  it('given nothing, defines the tier on its own stream', () => {
    expect(given().when(defineTier, { tierId: 'gold', name: ' Gold ' })).toEqual({
      stream: 'tier-gold',
      events: [{ type: 'TierDefined', data: { tierId: 'gold', name: 'Gold' } }],
    });
  });

  it('given the tier exists, refuses with TierAlreadyDefined', () => {
    expect(given(goldDefined).when(defineTier, { tierId: 'gold', name: 'Gold again' })).toMatchObject({
      error: { kind: 'TierAlreadyDefined', field: 'tierId' },
    });
  });

  it('refuses an empty name and a malformed id', () => {
    expect(given().when(defineTier, { tierId: 'gold', name: '  ' })).toMatchObject({ error: { kind: 'InvalidInput', field: 'name' } });
    expect(given().when(defineTier, { tierId: 'gold tier', name: 'Gold' })).toMatchObject({ error: { kind: 'InvalidInput', field: 'tierId' } });
  });
});

describe('setTierLimit', () => {
  it('given a defined tier, sets the limit with no previous value', () => {
    expect(given(goldDefined).when(setTierLimit, { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 5000, burst: 10000, reason: 'launch' })).toEqual({
      stream: 'tier-gold',
      events: [{ type: 'TierLimitSet', data: { tierId: 'gold', dimension: 'INGEST', previous: null, value: { ratePerSecond: 5000, burst: 10000 } } }],
      reason: 'launch',
    });
  });

  it('given a limit already set, carries it as the previous value', () => {
    expect(given(goldDefined, goldIngest).when(setTierLimit, { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 6000 })).toMatchObject({
      events: [{ data: { previous: { ratePerSecond: 5000, burst: 10000 }, value: { ratePerSecond: 6000 } } }],
    });
  });

  it('sets a ceiling on UNDELIVERED_COMMANDS', () => {
    expect(given(goldDefined).when(setTierLimit, { tierId: 'gold', dimension: 'UNDELIVERED_COMMANDS', ceiling: 250 })).toMatchObject({
      events: [{ data: { value: { ceiling: 250 } } }],
    });
  });

  it.each([
    ['a rate of 0', { dimension: 'INGEST', ratePerSecond: 0 }, 'InvalidLimit', 'ratePerSecond'],
    ['a rate above 1,000,000', { dimension: 'INGEST', ratePerSecond: 1_000_001 }, 'InvalidLimit', 'ratePerSecond'],
    ['a fractional burst', { dimension: 'EGRESS', ratePerSecond: 10, burst: 2.5 }, 'InvalidLimit', 'burst'],
    ['a negative ceiling', { dimension: 'UNDELIVERED_COMMANDS', ceiling: -1 }, 'InvalidLimit', 'ceiling'],
    ['a ceiling for a rate dimension', { dimension: 'INGEST', ratePerSecond: 10, ceiling: 5 }, 'InvalidLimit', 'ceiling'],
    ['a rate for UNDELIVERED_COMMANDS', { dimension: 'UNDELIVERED_COMMANDS', ratePerSecond: 10 }, 'InvalidLimit', 'ratePerSecond'],
    ['no rate at all', { dimension: 'AI_INFERENCE' }, 'InvalidLimit', 'ratePerSecond'],
    ['an unknown dimension', { dimension: 'BANDWIDTH', ratePerSecond: 10 }, 'UnknownDimension', 'dimension'],
    ['a reason over 2,000 characters', { dimension: 'INGEST', ratePerSecond: 10, reason: 'x'.repeat(2001) }, 'InvalidInput', 'reason'],
  ])('refuses %s', (_name, fields, kind, field) => {
    expect(given(goldDefined).when(setTierLimit, { tierId: 'gold', ...fields })).toMatchObject({ error: { kind, field } });
  });

  it('refuses an unknown tier', () => {
    expect(given().when(setTierLimit, { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 10 })).toMatchObject({
      error: { kind: 'UnknownTier', field: 'tierId' },
    });
  });
});

describe('clearTierLimit', () => {
  it('given a limit, clears it and records what it was', () => {
    expect(given(goldDefined, goldIngest).when(clearTierLimit, { tierId: 'gold', dimension: 'INGEST', reason: 'back to default' })).toEqual({
      stream: 'tier-gold',
      events: [{ type: 'TierLimitCleared', data: { tierId: 'gold', dimension: 'INGEST', previous: { ratePerSecond: 5000, burst: 10000 } } }],
      reason: 'back to default',
    });
  });

  it('given no limit on that dimension, refuses: there is nothing to clear', () => {
    expect(given(goldDefined, goldIngest).when(clearTierLimit, { tierId: 'gold', dimension: 'EGRESS' })).toMatchObject({
      error: { kind: 'InvalidInput', field: 'dimension' },
    });
  });
});

describe('setTierDefaultModel', () => {
  it('names the default model and later clears it', () => {
    const named = given(goldDefined).when(setTierDefaultModel, { tierId: 'gold', model: 'llama-3.1-8b' });
    expect(named).toMatchObject({ events: [{ type: 'TierDefaultModelSet', data: { previous: null, model: 'llama-3.1-8b' } }] });
    const withModel: GivenEvent = { stream: 'tier-gold', type: 'TierDefaultModelSet', data: { tierId: 'gold', previous: null, model: 'llama-3.1-8b' } };
    expect(given(goldDefined, withModel).when(setTierDefaultModel, { tierId: 'gold', model: null })).toMatchObject({
      events: [{ data: { previous: 'llama-3.1-8b', model: null } }],
    });
  });

  it('refuses a malformed model name', () => {
    expect(given(goldDefined).when(setTierDefaultModel, { tierId: 'gold', model: 'two words' })).toMatchObject({ error: { kind: 'InvalidInput', field: 'model' } });
  });
});
