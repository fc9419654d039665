import { describe, expect, it } from 'vitest';
import { eventBytes, jsonBytes, MAX_APPEND_BYTES, maxEventDataBytes, splitAppend, splitBySize } from '../../../src/ledger/appendSize.ts';
import type { NewEvent } from '../../../src/ledger/eventStore.ts';

describe('append size', () => {
  it('counts UTF-8 bytes of the JSON, not characters', () => {
    expect(jsonBytes({ a: 'é' })).toBe(Buffer.byteLength('{"a":"é"}'));
    expect(eventBytes({ type: 'T', data: { a: 1 } })).toBeGreaterThan(jsonBytes({ a: 1 }) + jsonBytes({}));
  });

  it('groups items in order under the byte cap and the count cap; an oversized item stands alone', () => {
    expect(splitBySize([3, 3, 3, 3], (n) => n, 7)).toEqual([[3, 3], [3, 3]]);
    expect(splitBySize([1, 1, 1, 1, 1], (n) => n, 100, 2)).toEqual([[1, 1], [1, 1], [1]]);
    expect(splitBySize([2, 50, 2], (n) => n, 10)).toEqual([[2], [50], [2]]);
    expect(splitBySize([], (n: number) => n, 10)).toEqual([]);
  });

  it('splits a batch of events into appends of at most the cap, in order', () => {
    const events: NewEvent[] = Array.from({ length: 50 }, (_, n) => ({ type: 'Counted', data: { n, pad: 'x'.repeat(200) } }));
    const appends = splitAppend(events, 2_000);
    expect(appends.flat()).toEqual(events);
    for (const append of appends) expect(append.reduce((sum, event) => sum + eventBytes(event), 0)).toBeLessThanOrEqual(2_000);
    expect(splitAppend(events)).toHaveLength(1);
  });

  it('leaves room for the metadata and type in one event’s data', () => {
    const metadata = { actor: 'governor', occurredAt: new Date(0).toISOString() };
    const room = maxEventDataBytes(metadata, 'AdmissionsRecorded');
    const data = 'x'.repeat(room - 2);
    expect(eventBytes({ type: 'AdmissionsRecorded', data, metadata })).toBe(MAX_APPEND_BYTES);
  });
});
