// Sparkplug B payloads (protobuf) decoded with sparkplug-payload, and counted: each metric that carries a
// value is one reading ("one stored value", docs/governance-model.md); a metric marked null or without a value is not.
// Metrics are passed on as JSON-safe entries: 64-bit integers as numbers when exact, else decimal strings;
// bytes as base64.
import sparkplug from 'sparkplug-payload';
import type { Decoded } from '../pipeline/index.ts';

const codec = sparkplug.get('spBv1.0')!;

export interface SparkplugReading {
  deviceId: string;
  name?: string;
  alias?: number | string;
  at?: number | string;
  type?: string;
  value: unknown;
}

export function decodeSparkplugMetrics(payload: Buffer, deviceId: string): Decoded<SparkplugReading[]> {
  let decoded: ReturnType<typeof codec.decodePayload>;
  try {
    decoded = codec.decodePayload(payload);
  } catch (error) {
    return { status: 'invalid', message: `not a Sparkplug B payload: ${(error as Error).message}` };
  }
  const readings: SparkplugReading[] = [];
  for (const metric of decoded.metrics ?? []) {
    if (metric.isNull === true || metric.value === null || metric.value === undefined) continue;
    readings.push({
      deviceId,
      ...(metric.name ? { name: metric.name } : {}),
      ...(metric.alias !== null && metric.alias !== undefined ? { alias: jsonSafe(metric.alias) as number | string } : {}),
      ...(metric.timestamp !== null && metric.timestamp !== undefined ? { at: jsonSafe(metric.timestamp) as number | string } : {}),
      type: metric.type,
      value: jsonSafe(metric.value),
    });
  }
  return { status: 'decoded', value: readings, readingCount: readings.length };
}

/** Long values, bytes and nested data sets or templates made into plain JSON. */
function jsonSafe(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (isLong(value)) {
    const number = value.toNumber();
    return Number.isSafeInteger(number) ? number : value.toString();
  }
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (Array.isArray(value)) return value.map(jsonSafe);
  return Object.fromEntries(Object.entries(value).map(([key, each]) => [key, jsonSafe(each)]));
}

function isLong(value: object): value is { toNumber(): number; toString(): string } {
  return typeof (value as { toNumber?: unknown }).toNumber === 'function' && 'low' in value && 'high' in value;
}
