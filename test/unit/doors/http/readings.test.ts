import { describe, expect, it } from 'vitest';
import { decodeReadings, MAX_JSON_DEPTH } from '../../../../src/doors/pipeline/readings.ts';
import { decodeUplinks } from '../../../../src/doors/http/uplinks.ts';

const body = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));

describe('decodeReadings', () => {
  it('counts one reading per measurement key, location and alert', () => {
    const decoded = decodeReadings(
      body({
        readings: [
          { deviceId: 'pump-7', measurements: { temperature: 21.5, pressure: 1.2 } },
          { deviceId: 'pump-7', location: { latitude: 52.1, longitude: 4.3 } },
          { alert: { type: 'overheat' } },
          { measurements: { rpm: 3 }, location: { latitude: 1, longitude: 2 } },
        ],
      }),
    );
    expect(decoded).toMatchObject({ status: 'decoded', readingCount: 6 });
    expect(decoded.status === 'decoded' && decoded.entries).toHaveLength(4);
  });

  it('256 one-key entries cost 256 readings', () => {
    const readings = Array.from({ length: 256 }, (_, i) => ({ measurements: { [`m${i}`]: i } }));
    expect(decodeReadings(body({ readings }))).toMatchObject({ readingCount: 256 });
  });

  it(`nests at most ${MAX_JSON_DEPTH} objects and arrays deep; brackets inside strings, escaped quotes included, do not count`, () => {
    // {"readings":[{"measurements":{"t": ...}}]} opens 4 levels; the value adds the rest.
    const nested = (depth: number) => `{"readings":[{"measurements":{"t":${'['.repeat(depth - 4)}${']'.repeat(depth - 4)}}}]}`;
    expect(decodeReadings(body(nested(MAX_JSON_DEPTH)))).toMatchObject({ status: 'decoded', readingCount: 1 });
    expect(decodeReadings(body(nested(MAX_JSON_DEPTH + 1)))).toEqual({
      status: 'invalid',
      message: `the body nests objects and arrays more than ${MAX_JSON_DEPTH} deep`,
    });
    // 100,000 deep: refused by the scan, before JSON.parse and long before JSON.stringify would overflow its stack.
    expect(decodeReadings(body(nested(100_000)))).toMatchObject({ status: 'invalid' });
    const inString = JSON.stringify({ readings: [{ measurements: { t: `\\"${'['.repeat(1000)}"\\` } }] });
    expect(decodeReadings(body(inString))).toMatchObject({ status: 'decoded', readingCount: 1 });
  });

  it('an empty array costs nothing', () => {
    expect(decodeReadings(body({ readings: [] }))).toMatchObject({ status: 'decoded', readingCount: 0 });
  });

  it.each([
    ['', 'the body is empty'],
    ['{"readings": [', 'the body is not valid JSON'],
    ['[1,2]', 'the body must be a JSON object'],
    ['"text"', 'the body must be a JSON object'],
    ['{}', '"readings" is missing'],
    ['{"readings": {"a": 1}}', '"readings" must be an array'],
    ['{"readings": [{"measurements": {"t": 1}}, 7]}', 'readings[1] is not an object'],
    ['{"readings": [null]}', 'readings[0] is not an object'],
    ['{"readings": [[]]}', 'readings[0] is not an object'],
    ['{"readings": [{"measurements": [1]}]}', 'readings[0].measurements must be an object'],
    ['{"readings": [{"location": "here"}]}', 'readings[0].location must be an object'],
    ['{"readings": [{"alert": 1}]}', 'readings[0].alert must be an object'],
    ['{"readings": [{"deviceId": 5, "alert": {}}]}', 'readings[0].deviceId must be a string'],
    ['{"readings": [{"deviceId": "d"}]}', 'readings[0] carries no reading'],
    ['{"readings": [{"measurements": {}}]}', 'readings[0] carries no reading'],
  ])('refuses %j saying %j', (text, message) => {
    const decoded = decodeReadings(body(text));
    expect(decoded.status).toBe('invalid');
    expect(decoded.status === 'invalid' && decoded.message).toContain(message);
  });
});

describe('decodeUplinks', () => {
  it('an array of N uplinks is N; a single object is one', () => {
    expect(decodeUplinks(body([{ a: 1 }, { b: 2 }, {}]))).toMatchObject({ status: 'decoded', uplinks: [{ a: 1 }, { b: 2 }, {}] });
    expect(decodeUplinks(body({ devEUI: '0011' }))).toMatchObject({ status: 'decoded', uplinks: [{ devEUI: '0011' }] });
  });

  it.each([
    ['nope', 'not valid JSON'],
    ['42', 'an uplink object or an array of them'],
    ['[{}, "x"]', 'uplinks[1] is not an object'],
  ])('refuses %j saying %j', (text, message) => {
    const decoded = decodeUplinks(body(text));
    expect(decoded.status === 'invalid' && decoded.message).toContain(message);
  });
});
