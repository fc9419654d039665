import { describe, expect, it } from 'vitest';
import { overrideApplies } from '../../../src/control-plane/state.ts';
import { viewOf, type StreamEvent } from '../../../src/control-plane/view.ts';

const at = (iso: string, type: string, data: unknown, stream = 'tenant-acme'): StreamEvent => ({
  stream,
  type,
  data,
  metadata: { occurredAt: iso },
  recordedAt: new Date('2030-01-01T00:00:00Z'),
});

const tenantEvents = [
  at('2026-01-01T00:00:00Z', 'TenantRegistered', { tenantId: 'acme', tierId: 'silver' }),
  at('2026-01-02T00:00:00Z', 'SomethingUnrelated', {}),
  at('2026-01-03T00:00:00Z', 'TenantTierAssigned', { tenantId: 'acme', previousTierId: 'silver', tierId: 'gold' }),
];

describe('viewOf', () => {
  it('folds a stream up to and including an instant, by occurredAt', () => {
    const streams = new Map([['tenant-acme', tenantEvents]]);
    expect(viewOf(streams, new Date('2025-12-31T23:59:59Z')).tenant('acme')).toBeUndefined();
    expect(viewOf(streams, new Date('2026-01-02T12:00:00Z')).tenant('acme')?.tierId).toBe('silver');
    expect(viewOf(streams, new Date('2026-01-03T00:00:00Z')).tenant('acme')?.tierId).toBe('gold');
    expect(viewOf(streams).tenant('acme')?.tierId).toBe('gold');
  });

  it('falls back to the recording time when an event states no occurredAt', () => {
    const event = { ...tenantEvents[0]!, metadata: {} };
    expect(viewOf(new Map([['tenant-acme', [event]]]), new Date('2029-12-31T00:00:00Z')).tenant('acme')).toBeUndefined();
  });

  it('knows only the streams it was given', () => {
    expect(viewOf(new Map([['tenant-acme', tenantEvents]])).tier('gold')).toBeUndefined();
  });
});

describe('overrideApplies', () => {
  const override = { value: { ratePerSecond: 5 }, expiresAt: '2026-01-01T00:00:00.000Z' };
  it('applies strictly before expiresAt', () => {
    expect(overrideApplies(override, new Date('2025-12-31T23:59:59.999Z'))).toBe(true);
    expect(overrideApplies(override, new Date('2026-01-01T00:00:00.000Z'))).toBe(false);
    expect(overrideApplies({ ...override, expiresAt: null }, new Date('2100-01-01T00:00:00Z'))).toBe(true);
    expect(overrideApplies(undefined, new Date())).toBe(false);
  });
});
