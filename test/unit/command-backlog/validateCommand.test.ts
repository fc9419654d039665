import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { MAX_ID_LENGTH, MAX_PAYLOAD_BYTES, checkText, validateEnqueue, validateRef } from '../../../src/command-backlog/validateCommand.ts';

const valid = { tenantId: 'acme', commandId: 'cmd-1', deviceId: 'dev-1', payload: { op: 'open' } };

describe('validateEnqueue', () => {
  it('passes a well-formed command through', () => {
    expect(validateEnqueue(valid)).toEqual({ status: 'valid', ...valid, fingerprint: expect.any(String) });
  });

  it.each([
    ['commandId', ''],
    ['commandId', '   '],
    ['commandId', 'x'.repeat(MAX_ID_LENGTH + 1)],
    ['commandId', 42],
    ['deviceId', ''],
    ['deviceId', 'd'.repeat(MAX_ID_LENGTH + 1)],
    ['deviceId', 'a\u0000b'],
    ['tenantId', ''],
  ])('refuses %s %j', (field, value) => {
    expect(validateEnqueue({ ...valid, [field]: value })).toMatchObject({ status: 'invalid', field });
  });

  it('accepts ids of exactly the maximum length', () => {
    expect(validateEnqueue({ ...valid, commandId: 'c'.repeat(MAX_ID_LENGTH), deviceId: 'd'.repeat(MAX_ID_LENGTH) })).toMatchObject({ status: 'valid' });
  });

  it('measures the payload in UTF-8 bytes of its JSON', () => {
    const overhead = JSON.stringify({ b: '' }).length;
    expect(validateEnqueue({ ...valid, payload: { b: 'x'.repeat(MAX_PAYLOAD_BYTES - overhead) } })).toMatchObject({ status: 'valid' });
    expect(validateEnqueue({ ...valid, payload: { b: 'x'.repeat(MAX_PAYLOAD_BYTES - overhead + 1) } })).toMatchObject({ field: 'payload' });
    // 'é' is two bytes in UTF-8: half as many characters fill the limit.
    expect(validateEnqueue({ ...valid, payload: { b: 'é'.repeat((MAX_PAYLOAD_BYTES - overhead) / 2 + 1) } })).toMatchObject({ field: 'payload' });
  });

  it.each([
    ['undefined', undefined],
    ['a function', () => 1],
    ['a bigint', 1n],
    ['NaN', { n: Number.NaN }],
    ['Infinity', [Number.POSITIVE_INFINITY]],
    ['a Date', { at: new Date() }],
    ['a Map', new Map()],
    ['a nested undefined', { a: { b: undefined } }],
    ['a NUL character', { s: 'a\u0000' }],
  ])('refuses a payload holding %s', (_label, payload) => {
    expect(validateEnqueue({ ...valid, payload })).toMatchObject({ status: 'invalid', field: 'payload' });
  });

  it('accepts any JSON value that round-trips and PostgreSQL stores exactly', () => {
    // Integers beyond 2^53 are refused on purpose (a double cannot hold them exactly): they are left out here.
    const unsafeInteger = (_key: string, value: unknown) => {
      if (typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value)) throw new RangeError('unsafe');
      return value;
    };
    const storable = (payload: unknown) => {
      try {
        JSON.stringify(payload, unsafeInteger);
        return true;
      } catch {
        return false;
      }
    };
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), (payload) => {
        const json = JSON.stringify(payload);
        fc.pre(!json.includes('\\u0000') && Buffer.byteLength(json) <= MAX_PAYLOAD_BYTES && storable(payload));
        expect(validateEnqueue({ ...valid, payload })).toMatchObject({ status: 'valid' });
      }),
    );
  });

  it('accepts a shared (not cyclic) sub-object and refuses a cycle', () => {
    const shared = { x: 1 };
    expect(validateEnqueue({ ...valid, payload: { a: shared, b: shared } })).toMatchObject({ status: 'valid' });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(validateEnqueue({ ...valid, payload: cyclic })).toMatchObject({ field: 'payload', message: expect.stringContaining('refers back') });
  });
});

describe('validateRef and checkText', () => {
  it('checks the tenant and command ids of a settlement', () => {
    expect(validateRef({ tenantId: 'acme', commandId: 'c' })).toBeUndefined();
    expect(validateRef({ tenantId: 'acme', commandId: '' })).toMatchObject({ field: 'commandId' });
  });

  it('requires a non-blank reason where one is required', () => {
    expect(checkText('reason', undefined, true)).toMatchObject({ field: 'reason' });
    expect(checkText('reason', '  ', true)).toMatchObject({ field: 'reason' });
    expect(checkText('error', undefined, false)).toBeUndefined();
    expect(checkText('error', 'x'.repeat(1_001), false)).toMatchObject({ field: 'error' });
  });
});
