import fc from 'fast-check';
import sparkplug from 'sparkplug-payload';
import { describe, expect, it } from 'vitest';
import { decodeSparkplugMetrics } from '../../../../src/doors/sparkplug/metrics.ts';
import { MAX_MESSAGE_DEPTH, MAX_MESSAGES, MAX_METRICS, MAX_TEMPLATE_DEPTH, scanSparkplugPayload } from '../../../../src/doors/sparkplug/payloadBounds.ts';
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

/** A metric whose value is a template `depth` deep, the innermost holding `leaf`. */
function nestedTemplate(depth: number, leaf: Record<string, unknown> = { name: 'leaf', type: 'Int32', value: 7 }): Record<string, unknown> {
  let metric = leaf;
  for (let level = 0; level < depth; level++) {
    metric = { name: `t${level}`, type: 'Template', value: { templateRef: 'udt', isDefinition: false, metrics: [metric] } };
  }
  return metric;
}

const encoded = (metrics: unknown[]) => Buffer.from(codec.encodePayload({ timestamp: 1_800_000_000_000, metrics: metrics as never }));

/** A protobuf length-delimited field: tag, length, bytes. */
function field(number: number, bytes: Buffer): Buffer {
  const varint = (value: number) => {
    const out: number[] = [];
    while (value >= 0x80) {
      out.push((value & 0x7f) | 0x80);
      value >>>= 7;
    }
    out.push(value);
    return Buffer.from(out);
  };
  return Buffer.concat([varint((number << 3) | 2), varint(bytes.length), bytes]);
}

describe('Sparkplug B bounds (payloadBounds.ts), checked on the bytes before any decoder', () => {
  it(`refuses the 60-deep template of issue 34 in milliseconds, and takes templates ${MAX_TEMPLATE_DEPTH} deep`, () => {
    const poison = encoded([nestedTemplate(60)]);
    const startedAt = performance.now();
    const refused = decodeSparkplugMetrics(poison, 'edge-1');
    const tookMs = performance.now() - startedAt;
    console.log(`the ${poison.length}-byte, 60-deep payload was refused in ${tookMs.toFixed(2)} ms`);
    expect(refused).toMatchObject({ status: 'over-bounds', message: `templates nested more than ${MAX_TEMPLATE_DEPTH} deep` });
    expect(tookMs).toBeLessThan(50);

    expect(decodeSparkplugMetrics(encoded([nestedTemplate(MAX_TEMPLATE_DEPTH + 1)]), 'edge-1').status).toBe('over-bounds');
    const deepest = decodeSparkplugMetrics(encoded([nestedTemplate(MAX_TEMPLATE_DEPTH)]), 'edge-1');
    expect(deepest).toMatchObject({ status: 'decoded', readingCount: 1 });
    expect(scanSparkplugPayload(encoded([nestedTemplate(MAX_TEMPLATE_DEPTH)]))).toMatchObject({ status: 'within', templateDepth: MAX_TEMPLATE_DEPTH, metricCount: MAX_TEMPLATE_DEPTH + 1 });
  });

  it(`counts the metrics inside templates: ${MAX_METRICS} in all are taken, one more is refused`, () => {
    const inTemplate = (count: number) => ({ name: 'udt', type: 'Template', value: { metrics: Array.from({ length: count }, (_, i) => ({ name: `m${i}`, type: 'Int32', value: i })) } });
    const top = Array.from({ length: 99 }, (_, i) => ({ name: `top${i}`, type: 'Int32', value: i }));
    // 99 top-level metrics, the template metric and what it holds.
    expect(decodeSparkplugMetrics(encoded([...top, inTemplate(MAX_METRICS - 100)]), 'e')).toMatchObject({ status: 'decoded', readingCount: 100 });
    expect(decodeSparkplugMetrics(encoded([...top, inTemplate(MAX_METRICS - 99)]), 'e')).toEqual({ status: 'over-bounds', message: `more than ${MAX_METRICS} metrics` });
  });

  it(`bounds the nesting of any message (property sets inside property sets) at ${MAX_MESSAGE_DEPTH}`, () => {
    // PropertySet { values: PropertyValue { type: 20, propertyset_value: PropertySet { ... } } }, as raw bytes.
    const propertySets = (depth: number) => {
      let set: Buffer = Buffer.alloc(0);
      for (let level = 0; level < depth; level++) set = field(2, Buffer.concat([Buffer.from([0x08, 20]), field(9, set)]));
      return set;
    };
    const metricWithProperties = (depth: number) => field(2, Buffer.concat([Buffer.from([0x20, 3, 0x50, 1]), field(9, propertySets(depth))]));
    // Payload (1) > Metric (2) > PropertySet (3) > PropertyValue (4) > ... > the innermost, empty set: 30 levels
    // are 63 messages deep.
    expect(scanSparkplugPayload(metricWithProperties(30))).toMatchObject({ status: 'within', messageDepth: 63 });
    expect(decodeSparkplugMetrics(metricWithProperties(30), 'e')).toMatchObject({ status: 'decoded', readingCount: 1 });
    expect(decodeSparkplugMetrics(metricWithProperties(31), 'e')).toEqual({ status: 'over-bounds', message: `messages nested more than ${MAX_MESSAGE_DEPTH} deep` });
    expect(decodeSparkplugMetrics(metricWithProperties(5_000), 'e').status).toBe('over-bounds');
  });

  it(`bounds the messages of any kind in one payload at ${MAX_MESSAGES}: 1 MB of empty data set values is refused before decoding`, () => {
    // Metric { datatype: DataSet, dataset_value: DataSet { types: [Int32], rows: Row { elements: DataSetValue {} } x n } }
    const dataSet = (rows: number) => {
      const row = field(4, field(1, Buffer.alloc(0)));
      const set = Buffer.concat([Buffer.from([0x18, 0x03]), ...Array.from({ length: rows }, () => row)]);
      return field(2, Buffer.concat([Buffer.from([0x20, 16]), field(17, set)]));
    };
    // The payload, the metric, its data set: 3 messages; each row 2 more.
    expect(scanSparkplugPayload(dataSet((MAX_MESSAGES - 3) >> 1))).toMatchObject({ status: 'within' });
    expect(decodeSparkplugMetrics(dataSet((MAX_MESSAGES - 3) >> 1), 'e')).toMatchObject({ status: 'decoded', readingCount: 1 });
    const flood = dataSet(250_000);
    expect(flood.length).toBeGreaterThan(999_000);
    const startedAt = performance.now();
    expect(decodeSparkplugMetrics(flood, 'e')).toEqual({ status: 'over-bounds', message: `more than ${MAX_MESSAGES} messages` });
    console.log(`${flood.length} bytes of empty data set values refused in ${(performance.now() - startedAt).toFixed(1)} ms`);
  });

  it.each([
    ['a length past the end', Buffer.from([0x12, 0x7f, 0x01])],
    ['a group (wire type 3), which the decoder would follow recursively', Buffer.from([0x13, 0x13, 0x13, 0x14, 0x14, 0x14])],
    ['a message field sent as a varint', Buffer.from([0x10, 0x05])],
    ['a truncated varint', Buffer.from([0x08, 0xff, 0xff])],
  ])('says %s is not Sparkplug B, without decoding it', (_, bytes) => {
    expect(scanSparkplugPayload(bytes).status).toBe('malformed');
    expect(decodeSparkplugMetrics(bytes, 'e').status).toBe('invalid');
  });

  it('decodes templates, data sets and properties once each, as sparkplug-payload shapes them', () => {
    const payload = encoded([
      {
        name: 'pump',
        type: 'Template',
        value: {
          version: 'v1',
          templateRef: 'Pump',
          isDefinition: false,
          metrics: [
            { name: 'rpm', type: 'Int32', value: -5, properties: { unit: { type: 'String', value: 'rpm' } } },
            { name: 'inner', type: 'Template', value: { templateRef: 'Motor', metrics: [{ name: 'on', type: 'Boolean', value: true }] } },
          ],
          parameters: [{ name: 'limit', type: 'Double', value: 2.5 }],
        },
      },
      { name: 'table', type: 'DataSet', value: { numOfColumns: 2, columns: ['a', 'b'], types: ['Int32', 'String'], rows: [[1, 'x'], [2, 'y']] } },
      { name: 'big', type: 'UInt64', value: Number.MAX_SAFE_INTEGER + 1 },
    ]);
    const decoded = decodeSparkplugMetrics(payload, 'edge-1');
    if (decoded.status !== 'decoded') throw new Error(`not decoded: ${JSON.stringify(decoded)}`);
    expect(decoded.readingCount).toBe(3);
    expect(JSON.parse(JSON.stringify(decoded.value))).toEqual([
      {
        deviceId: 'edge-1',
        name: 'pump',
        type: 'Template',
        value: {
          version: 'v1',
          templateRef: 'Pump',
          isDefinition: false,
          metrics: [
            { name: 'rpm', type: 'Int32', value: -5, properties: { unit: { type: 'String', value: 'rpm' } } },
            { name: 'inner', type: 'Template', value: { templateRef: 'Motor', metrics: [{ name: 'on', type: 'Boolean', value: true }] } },
          ],
          parameters: [{ name: 'limit', type: 'Double', value: 2.5 }],
        },
      },
      { deviceId: 'edge-1', name: 'table', type: 'DataSet', value: { numOfColumns: 2, columns: ['a', 'b'], types: ['Int32', 'String'], rows: [[1, 'x'], [2, 'y']] } },
      { deviceId: 'edge-1', name: 'big', type: 'UInt64', value: '9007199254740992' },
    ]);
  });

  it('decodes the largest payload within the bounds in time linear in its size', () => {
    // 580 chains of templates 16 deep (9,860 metrics), each ending in 1,500 bytes of text: about 1 MiB, the
    // default INGEST_MAX_BODY_BYTES. sparkplug-payload's decodePayload would read each leaf 2^16 times.
    const chains = Array.from({ length: 580 }, (_, i) => nestedTemplate(MAX_TEMPLATE_DEPTH, { name: `leaf${i}`, type: 'String', value: 'x'.repeat(1500) }));
    const payload = encoded(chains);
    expect(payload.length).toBeGreaterThan(1_000_000);
    const startedAt = performance.now();
    const decoded = decodeSparkplugMetrics(payload, 'edge-1');
    const tookMs = performance.now() - startedAt;
    console.log(`${payload.length} bytes, ${MAX_TEMPLATE_DEPTH} templates deep, decoded in ${tookMs.toFixed(1)} ms`);
    expect(decoded).toMatchObject({ status: 'decoded', readingCount: 580 });
    // About 55 ms on an idle core; a busy shared machine gets room, far from the seconds of a doubling decoder.
    expect(tookMs).toBeLessThan(1_000);
  });
});

describe('Sparkplug B bounds, property-based', () => {
  it('never throws on arbitrary bytes: the scan and the decode answer with a status', () => {
    let runs = 0;
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), (bytes) => {
        runs++;
        const payload = Buffer.from(bytes);
        expect(['within', 'over', 'malformed']).toContain(scanSparkplugPayload(payload).status);
        expect(['decoded', 'invalid', 'over-bounds']).toContain(decodeSparkplugMetrics(payload, 'e').status);
      }),
      { numRuns: 3000 },
    );
    console.log(`arbitrary payloads: ${runs} runs completed`);
    expect(runs).toBe(3000);
  });

  it(`refuses exactly the templates nested more than ${MAX_TEMPLATE_DEPTH} deep, and decodes the others with one reading per top-level metric`, () => {
    let runs = 0;
    let refused = 0;
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 24 }), { minLength: 1, maxLength: 6 }), (depths) => {
        runs++;
        const decoded = decodeSparkplugMetrics(encoded(depths.map((depth) => nestedTemplate(depth))), 'e');
        if (Math.max(...depths) > MAX_TEMPLATE_DEPTH) {
          refused++;
          expect(decoded.status).toBe('over-bounds');
        } else {
          expect(decoded).toMatchObject({ status: 'decoded', readingCount: depths.length });
        }
      }),
      { numRuns: 500 },
    );
    console.log(`nested templates: ${runs} runs completed, ${refused} refused`);
    expect(runs).toBe(500);
  });
});
