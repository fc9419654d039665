import { encode } from 'cborg';
import { describe, expect, it } from 'vitest';
import { decodeSenml, SENML_CBOR, SENML_JSON } from '../../../../src/doors/lwm2m/senml.ts';
import { Registrations } from '../../../../src/doors/lwm2m/registrations.ts';

const NOW = 1_800_000_000_000;

describe('SenML', () => {
  it('resolves base name, time and unit, and counts each record with a value', () => {
    const pack = [
      { bn: '/3303/0/', bt: 1_800_000_000, bu: 'Cel', n: '5700', v: 21.5 },
      { n: '5701', vs: 'Cel', t: 1 },
      { n: '5850', vb: false, u: 'x' },
      { bn: '/3/0/' },
      { n: '0', vd: 'AQID' },
    ];
    const decoded = decodeSenml(Buffer.from(JSON.stringify(pack)), SENML_JSON, 'meter-1', NOW);
    expect(decoded).toMatchObject({ status: 'decoded', readingCount: 4 });
    if (decoded.status !== 'decoded') return;
    expect(decoded.value).toEqual([
      { deviceId: 'meter-1', name: '/3303/0/5700', at: 1_800_000_000_000, unit: 'Cel', value: 21.5 },
      { deviceId: 'meter-1', name: '/3303/0/5701', at: 1_800_000_001_000, unit: 'Cel', stringValue: 'Cel' },
      { deviceId: 'meter-1', name: '/3303/0/5850', at: 1_800_000_000_000, unit: 'x', boolValue: false },
      { deviceId: 'meter-1', name: '/3/0/0', at: 1_800_000_000_000, unit: 'Cel', dataValue: 'AQID' },
    ]);
  });

  it('reads SenML CBOR with integer labels; a time below 2**28 is relative to now', () => {
    // Integer labels, as devices send them (RFC 8428 section 6).
    const pack = encode([
      new Map<number, unknown>([[-2, '/3304/0/'], [-3, -5], [0, '5700'], [2, 40.5]]),
      new Map<number, unknown>([[0, '5701'], [8, new Uint8Array([255])]]),
    ]);
    const decoded = decodeSenml(Buffer.from(pack), SENML_CBOR, 'm', NOW);
    expect(decoded).toEqual({
      status: 'decoded',
      readingCount: 2,
      value: [
        { deviceId: 'm', name: '/3304/0/5700', at: NOW - 5000, value: 40.5 },
        { deviceId: 'm', name: '/3304/0/5701', at: NOW - 5000, dataValue: '_w' },
      ],
    });
  });

  it.each([
    ['not JSON', Buffer.from('{'), SENML_JSON],
    ['not a pack', Buffer.from('{"n":"x","v":1}'), SENML_JSON],
    ['a record that is not a map', Buffer.from('[1]'), SENML_JSON],
    ['a value of the wrong type', Buffer.from('[{"n":"x","v":"1"}]'), SENML_JSON],
    ['a value without a name', Buffer.from('[{"v":1}]'), SENML_JSON],
    ['broken CBOR', Buffer.from([0xff, 0x00]), SENML_CBOR],
  ])('refuses %s', (_, payload, format) => {
    expect(decodeSenml(payload, format, 'm', NOW).status).toBe('invalid');
  });
});

describe('LwM2M registrations', () => {
  it('knows a device by the address it registered from until its lifetime ends, and holds at most its bound', () => {
    const registrations = new Registrations(2);
    const first = registrations.register('10.0.0.1:5683', 'acme', 'meter-1', 60, NOW);
    expect(registrations.at('10.0.0.1:5683', NOW + 59_999)).toMatchObject({ tenantId: 'acme', deviceId: 'meter-1' });
    expect(registrations.update(first.id, '10.0.0.9:1', 600, NOW)).toBe(false);
    expect(registrations.update(first.id, '10.0.0.1:5683', 600, NOW)).toBe(true);
    expect(registrations.at('10.0.0.1:5683', NOW + 599_999)).toBeDefined();
    expect(registrations.at('10.0.0.1:5683', NOW + 600_000)).toBeUndefined();
    registrations.register('a:1', 't', 'd1', 60, NOW);
    registrations.register('b:1', 't', 'd2', 60, NOW);
    registrations.register('c:1', 't', 'd3', 60, NOW);
    expect(registrations.size).toBe(2);
    expect(registrations.at('a:1', NOW)).toBeUndefined();
    const last = registrations.at('c:1', NOW)!;
    expect(registrations.deregister(last.id, 'c:1')).toBe(true);
    expect(registrations.at('c:1', NOW)).toBeUndefined();
  });
});
