import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalJson, leafBytes, leafHash } from '../../../../src/ledger/verifiable/index.ts';

/** RFC 8785 built member by member, the plain way: what the fast path (JSON.stringify of ordered values) must equal. */
function reference(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).filter((key) => record[key] !== undefined).sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${reference(record[key])}`).join(',')}}`;
}

describe('the canonical leaf', () => {
  it('writes what the member-by-member form writes, for values JavaScript orders its own way', () => {
    const values: unknown[] = [
      JSON.parse('{"b":1,"a":{"d":[{"z":1,"y":2}],"c":null},"10":true,"9":false}'),
      JSON.parse('{"__proto__":{"x":1},"a":2}'),
      JSON.parse('{"a":{"__proto__":1,"b":{"y":1,"x":2}},"b":[3,{"q":1,"p":2}]}'),
      { '\u{1F600}': 1, '\uE000': 2, é: 3, e: 4, E: 5 },
      { a: undefined, b: [1.5, -0, 1e21, 1e-7, 'x"\\\n\u0001'] },
      [[], {}, [{}], { z: { y: { x: {} } } }],
      { sorted: { a: 1, b: { d: 1, c: 2 } } },
    ];
    for (const value of values) expect(canonicalJson(value)).toBe(reference(value));
  });


  it('writes RFC 8785 canonical JSON: sorted members, ECMAScript numbers, no whitespace', () => {
    // RFC 8785 section 3.2.3's ordering example and its number forms.
    expect(canonicalJson({ '\u20ac': 'Euro Sign', '\r': 'Carriage Return', '\ufb33': 'Hebrew Letter Dalet With Dagesh', '1': 'One', '\ud83d\ude00': 'Emoji: Grinning Face', '\u0080': 'Control', '\u00f6': 'Latin Small Letter O With Diaeresis' })).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
    expect(canonicalJson({ numbers: [333333333.3333333, 1e30, 4.5, 0.002, 1e-27, -0, 1e21, 1e20] })).toBe(
      '{"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27,0,1e+21,100000000000000000000]}',
    );
    expect(canonicalJson({ b: [true, null, 'x\n"'], a: { d: 1, c: {} } })).toBe('{"a":{"c":{},"d":1},"b":[true,null,"x\\n\\""]}');
  });

  it('is the same for the same event however its data was ordered, and differs for any changed field', () => {
    const event = {
      id: '6f1c3a1e-3f0b-4c55-9a8e-0d1f2e3c4b5a',
      stream: 'tenant-acme',
      revision: '3',
      type: 'TenantOverrideSet',
      data: { limit: 100, dimension: 'messages' },
      metadata: { actor: 'op@example.com' },
      recordedAt: '2026-12-03T02:27:00.123456Z',
    };
    const bytes = leafBytes(event);
    expect(bytes.toString('utf8')).toBe(
      '{"data":{"dimension":"messages","limit":100},"id":"6f1c3a1e-3f0b-4c55-9a8e-0d1f2e3c4b5a","metadata":{"actor":"op@example.com"},' +
        '"recordedAt":"2026-12-03T02:27:00.123456Z","revision":"3","stream":"tenant-acme","type":"TenantOverrideSet"}',
    );
    expect(leafHash({ ...event, data: { dimension: 'messages', limit: 100 } })).toEqual(leafHash(event));
    // As a third party recomputes it: SHA-256 over 0x00 and the bytes.
    expect(leafHash(event).toString('hex')).toBe(createHash('sha256').update(Buffer.from([0])).update(bytes).digest('hex'));
    for (const changed of [{ revision: '4' }, { data: { limit: 101, dimension: 'messages' } }, { recordedAt: '2026-12-03T02:27:00.123457Z' }, { stream: 'tenant-acm' }]) {
      expect(leafHash({ ...event, ...changed })).not.toEqual(leafHash(event));
    }
  });
});
