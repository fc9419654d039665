import sparkplug from 'sparkplug-payload';
import { describe, expect, it } from 'vitest';
import { decodeSparkplugMetrics } from '../../../../src/doors/sparkplug/metrics.ts';
import { parseSparkplugTopic, sparkplugSubscriptions, tenantOfGroup } from '../../../../src/doors/sparkplug/topics.ts';

const codec = sparkplug.get('spBv1.0')!;

describe('Sparkplug B topics', () => {
  it('subscribes to NDATA and DDATA only, shared', () => {
    expect(sparkplugSubscriptions('governance')).toEqual(['$share/governance/spBv1.0/+/NDATA/+', '$share/governance/spBv1.0/+/DDATA/+/+']);
  });

  it('reads group, type, edge node and device', () => {
    expect(parseSparkplugTopic('spBv1.0/line-1/NDATA/edge-1')).toEqual({ status: 'parsed', group: 'line-1', type: 'NDATA', edgeNode: 'edge-1', device: null });
    expect(parseSparkplugTopic('spBv1.0/line-1/DDATA/edge-1/pump-7')).toMatchObject({ status: 'parsed', type: 'DDATA', device: 'pump-7' });
  });

  it.each(['spBv1.0/line-1/NBIRTH/edge-1', 'spBv1.0/line-1/DDATA/edge-1', 'spBv1.0/line-1/NDATA/edge-1/x', 'spAv1.0/line-1/NDATA/e', 'spBv1.0/li\uFFFDne/NDATA/e'])(
    'refuses %s',
    (topic) => expect(parseSparkplugTopic(topic).status).toBe('invalid'),
  );

  it('maps a group to its tenant, else the group is the tenant', () => {
    const map = new Map([['line-1', 'acme']]);
    expect(tenantOfGroup('line-1', map)).toBe('acme');
    expect(tenantOfGroup('line-2', map)).toBe('line-2');
  });
});

describe('Sparkplug B metrics', () => {
  it('counts each metric with a value and makes 64-bit values and bytes JSON-safe', () => {
    const payload = Buffer.from(
      codec.encodePayload({
        timestamp: 1_800_000_000_000,
        metrics: [
          { name: 'big', type: 'UInt64', value: 12345 },
          { name: 'raw', type: 'Bytes', value: new Uint8Array([1, 2, 3]) },
          { name: 'gone', type: 'Int32', value: null, isNull: true },
        ] as never,
      }),
    );
    const decoded = decodeSparkplugMetrics(payload, 'edge-1');
    expect(decoded).toMatchObject({ status: 'decoded', readingCount: 2 });
    if (decoded.status !== 'decoded') return;
    expect(decoded.value).toEqual([
      { deviceId: 'edge-1', name: 'big', type: 'UInt64', value: 12345 },
      { deviceId: 'edge-1', name: 'raw', type: 'Bytes', value: 'AQID' },
    ]);
    expect(JSON.parse(JSON.stringify(decoded.value))).toEqual(decoded.value);
  });

  it('says so when the payload is not Sparkplug B', () => {
    expect(decodeSparkplugMetrics(Buffer.from('garbage garbage'), 'e').status).toBe('invalid');
  });
});
