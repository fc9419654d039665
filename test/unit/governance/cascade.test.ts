import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { acceptLimit, DIMENSION_CATALOG, DIMENSIONS, LIMIT_MAX, LIMIT_MIN, resolveCascade, resolveEffectiveLimit, resolveEffectiveLimits, validateLimitValue } from '../../../src/governance/index.ts';
import type { Dimension, LimitLevels, LimitSourceLevel } from '../../../src/governance/index.ts';

const number = fc.oneof(
  fc.integer({ min: LIMIT_MIN, max: LIMIT_MAX }),
  fc.constantFrom(0, -1, -1000, NaN, Infinity, -Infinity, 0.5, 999.9, LIMIT_MAX + 1, Number.MAX_SAFE_INTEGER, 1e300),
  fc.double(),
  fc.integer(),
);
const scalar = fc.oneof(number, fc.string(), fc.constant(null), fc.constant(undefined), fc.boolean(), fc.constant('1000'));
const levelValue = fc.oneof(
  fc.record({ ratePerSecond: scalar, burst: scalar, ceiling: scalar }, { requiredKeys: [] }),
  scalar,
  fc.anything(),
);
const levels = fc.record({ override: levelValue, tier: levelValue, platformDefault: levelValue }, { requiredKeys: [] });
const dimension = fc.constantFrom(...DIMENSIONS);

const inRange = (n: unknown) => typeof n === 'number' && Number.isInteger(n) && n >= LIMIT_MIN && n <= LIMIT_MAX;
const ORDER: [keyof LimitLevels, LimitSourceLevel][] = [
  ['override', 'TENANT_OVERRIDE'],
  ['tier', 'TIER'],
  ['platformDefault', 'PLATFORM_DEFAULT'],
];

describe('resolveEffectiveLimit', () => {
  it('always resolves to finite in-range integers from the highest valid level, never unlimited', () => {
    fc.assert(
      fc.property(dimension, levels, (dim: Dimension, given: LimitLevels) => {
        const { value, source } = resolveEffectiveLimit(dim, given);
        const kind = DIMENSION_CATALOG[dim].kind;
        if (kind === 'COUNT_CEILING') {
          expect(inRange(value.ceiling)).toBe(true);
          expect(value.ratePerSecond).toBeUndefined();
        } else {
          expect(inRange(value.ratePerSecond)).toBe(true);
          if (kind === 'TOKEN_BUCKET') expect(inRange(value.burst)).toBe(true);
          else expect(value.burst).toBeUndefined();
        }
        const essential = kind === 'COUNT_CEILING' ? 'ceiling' : 'ratePerSecond';
        const firstValid = ORDER.find(([key]) => {
          const raw = given[key];
          return typeof raw === 'object' && raw !== null && inRange((raw as Record<string, unknown>)[essential]);
        });
        expect(source).toBe(firstValid ? firstValid[1] : 'SHIPPED_DEFAULT');
        if (firstValid) {
          expect(value[essential]).toBe((given[firstValid[0]] as Record<string, unknown>)[essential]);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('skips zero, negative, NaN, infinite, fractional, string and absurd values', () => {
    for (const bad of [0, -5, NaN, Infinity, 12.5, '500', LIMIT_MAX + 1, null]) {
      const result = resolveEffectiveLimit('INGEST', {
        override: { ratePerSecond: bad, burst: 10 },
        tier: { ratePerSecond: 300, burst: 600 },
      });
      expect(result).toEqual({ value: { ratePerSecond: 300, burst: 600 }, source: 'TIER' });
    }
    expect(resolveEffectiveLimit('INGEST', {})).toEqual({
      value: { ratePerSecond: 1000, burst: 2000 },
      source: 'SHIPPED_DEFAULT',
    });
    expect(resolveEffectiveLimit('UNDELIVERED_COMMANDS', { platformDefault: { ceiling: 0 } }).source).toBe('SHIPPED_DEFAULT');
  });

  it('derives a missing or invalid burst from the same level rate at the shipped ratio, capped', () => {
    expect(resolveEffectiveLimit('INGEST', { override: { ratePerSecond: 50_000 }, tier: { ratePerSecond: 10, burst: 20 } })).toEqual({
      value: { ratePerSecond: 50_000, burst: 100_000 },
      source: 'TENANT_OVERRIDE',
    });
    expect(acceptLimit('PROVISIONING', { ratePerSecond: 100, burst: -3 })).toEqual({ ratePerSecond: 100, burst: 2500 });
    expect(acceptLimit('INGEST', { ratePerSecond: 900_000 })).toEqual({ ratePerSecond: 900_000, burst: LIMIT_MAX });
  });

  it('accepts at a level exactly what input validation accepts', () => {
    fc.assert(
      fc.property(dimension, levelValue, (dim: Dimension, raw: unknown) => {
        const validated = validateLimitValue(dim, raw);
        if (validated.ok) expect(acceptLimit(dim, raw)).toMatchObject(validated.value);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('resolveEffectiveLimits', () => {
  it('resolves every dimension of a tenant record, filling the platform level', () => {
    const limits = resolveEffectiveLimits(
      { tenantId: 'acme', tierId: 'gold', levels: { INGEST: { tier: { ratePerSecond: 400, burst: 800 } } } },
      { EGRESS: { ratePerSecond: 50, burst: 60 } },
    );
    expect(limits.map((each) => each.dimension)).toEqual([...DIMENSIONS]);
    expect(limits.find((each) => each.dimension === 'INGEST')).toMatchObject({ source: 'TIER', value: { ratePerSecond: 400 } });
    expect(limits.find((each) => each.dimension === 'EGRESS')).toMatchObject({ source: 'PLATFORM_DEFAULT', value: { burst: 60 } });
    expect(limits.find((each) => each.dimension === 'API_REQUESTS')).toMatchObject({ source: 'SHIPPED_DEFAULT', value: { ratePerSecond: 5000 } });
  });
});

describe('resolveCascade', () => {
  it('picks the first accepted level for any kind of setting (AI model, branding)', () => {
    const models = new Set(['small', 'large']);
    const accept = (raw: unknown) => (typeof raw === 'string' && models.has(raw) ? raw : undefined);
    expect(resolveCascade([{ source: 'TENANT', value: 'huge' }, { source: 'TIER', value: 'small' }], accept)).toEqual({ value: 'small', source: 'TIER' });
    expect(resolveCascade([{ source: 'TENANT', value: undefined }], accept)).toBeUndefined();
  });
});

describe('validateLimitValue', () => {
  it('refuses fields that do not apply to the dimension kind', () => {
    expect(validateLimitValue('INGEST', { ratePerSecond: 10, ceiling: 5 })).toMatchObject({ ok: false, field: 'ceiling' });
    expect(validateLimitValue('UNDELIVERED_COMMANDS', { ratePerSecond: 10 })).toMatchObject({ ok: false, field: 'ratePerSecond' });
    expect(validateLimitValue('API_REQUESTS', { ratePerSecond: 10, burst: 20 })).toMatchObject({ ok: false, field: 'burst' });
  });
  it('refuses out-of-range numbers with a clear message and accepts good ones', () => {
    expect(validateLimitValue('INGEST', { ratePerSecond: 0 })).toMatchObject({ ok: false, field: 'ratePerSecond', message: expect.stringMatching(/1 to 1,000,000/) });
    expect(validateLimitValue('INGEST', { ratePerSecond: 10, burst: 1.5 })).toMatchObject({ ok: false, field: 'burst' });
    expect(validateLimitValue('INGEST', { burst: 10 })).toMatchObject({ ok: false, field: 'ratePerSecond' });
    expect(validateLimitValue('INGEST', 'fast')).toMatchObject({ ok: false, field: 'value' });
    expect(validateLimitValue('INGEST', { ratePerSecond: 10 })).toEqual({ ok: true, value: { ratePerSecond: 10 } });
    expect(validateLimitValue('UNDELIVERED_COMMANDS', { ceiling: 1_000_000 })).toEqual({ ok: true, value: { ceiling: 1_000_000 } });
  });
});
