// Sparkplug B payloads (protobuf) decoded and counted: each metric that carries a value is one reading ("one
// stored value", docs/governance-model.md); a metric marked null or without a value is not. Metrics are passed
// on as JSON-safe entries: 64-bit integers as numbers when exact, else decimal strings; bytes as base64.
//
// The bytes are first scanned against the bounds of payloadBounds.ts (template and message nesting, metric
// count), then decoded with the protobuf decoder sparkplug-payload generated from Tahu's sparkplug_b.proto,
// and the decoded messages are made into values here, once each. Not with sparkplug-payload's decodePayload:
// it reads every metric's and property's value twice (decodeMetric and decodePropertyValue call getValue twice),
// so its time doubles with each level of nested templates or property sets (depth 20 took 1.4 s, depth 60 would
// take centuries), and it loops over a data set's declared column count, which the sender chooses. Here every
// decoded message is visited once, so decoding is linear in the payload's size, which the size cap bounds.
import sparkplugProto from 'sparkplug-payload/lib/sparkplugPayloadProto.js';
import type { Decoded } from '../pipeline/index.ts';
import { scanSparkplugPayload } from './payloadBounds.ts';

const { Payload } = sparkplugProto.org.eclipse.tahu.protobuf;
type ProtoMetric = sparkplugProto.org.eclipse.tahu.protobuf.Payload.IMetric;
type ProtoTemplate = sparkplugProto.org.eclipse.tahu.protobuf.Payload.ITemplate;
type ProtoDataSet = sparkplugProto.org.eclipse.tahu.protobuf.Payload.IDataSet;
type ProtoPropertySet = sparkplugProto.org.eclipse.tahu.protobuf.Payload.IPropertySet;
type ProtoPropertyValue = sparkplugProto.org.eclipse.tahu.protobuf.Payload.IPropertyValue;
type ProtoMetaData = sparkplugProto.org.eclipse.tahu.protobuf.Payload.IMetaData;

export interface SparkplugReading {
  deviceId: string;
  name?: string;
  alias?: number | string;
  at?: number | string;
  type?: string;
  value: unknown;
}

/** Why a payload was not decoded: over a bound of payloadBounds.ts, or not Sparkplug B at all. */
export type SparkplugDecoded = Decoded<SparkplugReading[]> | { status: 'over-bounds'; message: string };

export function decodeSparkplugMetrics(payload: Buffer, deviceId: string): SparkplugDecoded {
  const bounds = scanSparkplugPayload(payload);
  if (bounds.status === 'over') return { status: 'over-bounds', message: bounds.message };
  if (bounds.status === 'malformed') return { status: 'invalid', message: `not a Sparkplug B payload: ${bounds.message}` };
  let metrics: ProtoMetric[];
  try {
    metrics = Payload.decode(payload).metrics ?? [];
  } catch (error) {
    return { status: 'invalid', message: `not a Sparkplug B payload: ${(error as Error).message}` };
  }
  const readings: SparkplugReading[] = [];
  for (const metric of metrics) {
    const value = metricValue(metric);
    if (value === null || value === undefined) continue;
    readings.push({
      deviceId,
      ...(metric.name ? { name: metric.name } : {}),
      ...(has(metric, 'alias') ? { alias: jsonSafe(metric.alias) as number | string } : {}),
      ...(has(metric, 'timestamp') ? { at: jsonSafe(metric.timestamp) as number | string } : {}),
      type: typeName(metric.datatype),
      value,
    });
  }
  return { status: 'decoded', value: readings, readingCount: readings.length };
}

/** Sparkplug's data type names (sparkplug_b.proto DataType), by number. */
const TYPE_NAMES = [
  'Unknown', 'Int8', 'Int16', 'Int32', 'Int64', 'UInt8', 'UInt16', 'UInt32', 'UInt64', 'Float', 'Double', 'Boolean',
  'String', 'DateTime', 'Text', 'UUID', 'DataSet', 'Bytes', 'File', 'Template', 'PropertySet', 'PropertySetList',
];

function typeName(type: number | null | undefined): string | undefined {
  return TYPE_NAMES[type ?? 0];
}

/** A field the decoder read from the bytes (decoded messages hold defaults on their prototype). */
function has(message: object, field: string): boolean {
  return Object.hasOwn(message, field);
}

function metricValue(metric: ProtoMetric): unknown {
  if (metric.isNull === true) return null;
  switch (metric.datatype) {
    case 16:
      return metric.datasetValue ? dataSetValue(metric.datasetValue) : null;
    case 19:
      return metric.templateValue ? templateValue(metric.templateValue) : null;
    default:
      // A metric cannot hold a property set (sparkplug_b.proto has no such field): those types are no value.
      return scalarValue(metric.datatype, metric as ScalarFields);
  }
}

interface ScalarFields {
  intValue?: number | null;
  longValue?: unknown;
  floatValue?: number | null;
  doubleValue?: number | null;
  booleanValue?: boolean | null;
  stringValue?: string | null;
  bytesValue?: Uint8Array | null;
}

/** The value of a scalar type from the field Sparkplug keeps it in; null for a type that is not a scalar. */
function scalarValue(type: number | null | undefined, fields: ScalarFields): unknown {
  switch (type) {
    case 1: // Int8
    case 2: // Int16
    case 3: // Int32
      return (fields.intValue ?? 0) | 0;
    case 5: // UInt8
    case 6: // UInt16
      return fields.intValue;
    case 4: // Int64: an unsigned 64-bit field holding a two's complement value
      return jsonSafe(isLong(fields.longValue) ? fields.longValue.toSigned() : fields.longValue);
    case 7: // UInt32
    case 8: // UInt64
    case 13: // DateTime
      return jsonSafe(fields.longValue);
    case 9:
      return fields.floatValue;
    case 10:
      return fields.doubleValue;
    case 11:
      return fields.booleanValue;
    case 12: // String
    case 14: // Text
    case 15: // UUID
      return fields.stringValue;
    case 17: // Bytes
    case 18: // File
      return fields.bytesValue ? Buffer.from(fields.bytesValue).toString('base64') : null;
    default:
      return null;
  }
}

/** A template as sparkplug-payload gives it: its metrics (each with its value) and parameters. */
function templateValue(template: ProtoTemplate): Record<string, unknown> {
  const value: Record<string, unknown> = {};
  if (has(template, 'version')) value.version = template.version;
  if (has(template, 'templateRef')) value.templateRef = template.templateRef;
  if (has(template, 'isDefinition')) value.isDefinition = template.isDefinition;
  if (template.metrics && template.metrics.length > 0) value.metrics = template.metrics.map(templateMetric);
  if (template.parameters && template.parameters.length > 0) {
    value.parameters = template.parameters.map((parameter) => ({
      name: parameter.name,
      type: typeName(parameter.type),
      value: scalarValue(parameter.type, parameter as ScalarFields) ?? null,
    }));
  }
  return value;
}

function templateMetric(metric: ProtoMetric): Record<string, unknown> {
  const value: Record<string, unknown> = { value: metricValue(metric) ?? null, type: typeName(metric.datatype) };
  if (has(metric, 'name')) value.name = metric.name;
  if (has(metric, 'timestamp')) value.timestamp = jsonSafe(metric.timestamp);
  if (has(metric, 'alias')) value.alias = jsonSafe(metric.alias);
  if (has(metric, 'isHistorical')) value.isHistorical = metric.isHistorical;
  if (has(metric, 'isTransient')) value.isTransient = metric.isTransient;
  if (metric.metadata) value.metadata = metaDataValue(metric.metadata);
  if (metric.properties) value.properties = propertySetValue(metric.properties);
  return value;
}

/** A data set: its rows, each the values of the elements present, by their column's type. */
function dataSetValue(dataSet: ProtoDataSet): Record<string, unknown> {
  const types = dataSet.types ?? [];
  return {
    numOfColumns: jsonSafe(dataSet.numOfColumns ?? 0),
    columns: dataSet.columns ?? [],
    types: types.map(typeName),
    rows: (dataSet.rows ?? []).map((row) => (row.elements ?? []).map((element, column) => scalarValue(types[column], element as ScalarFields) ?? null)),
  };
}

function propertySetValue(set: ProtoPropertySet): Record<string, unknown> {
  const keys = set.keys ?? [];
  const values = set.values ?? [];
  const value: Record<string, unknown> = {};
  // Keys come from the sender: kept off the prototype chain.
  Object.setPrototypeOf(value, null);
  for (let i = 0; i < keys.length && i < values.length; i++) value[keys[i]!] = propertyValue(values[i]!);
  return value;
}

function propertyValue(property: ProtoPropertyValue): Record<string, unknown> {
  const type = typeName(property.type);
  if (property.isNull === true) return { type, value: null };
  switch (property.type) {
    case 20:
      return { type, value: property.propertysetValue ? propertySetValue(property.propertysetValue) : null };
    case 21:
      return { type, value: property.propertysetsValue ? (property.propertysetsValue.propertyset ?? []).map(propertySetValue) : null };
    default:
      return { type, value: scalarValue(property.type, property as ScalarFields) ?? null };
  }
}

function metaDataValue(metaData: ProtoMetaData): Record<string, unknown> {
  const value: Record<string, unknown> = {};
  for (const field of ['isMultiPart', 'contentType', 'size', 'seq', 'fileName', 'fileType', 'md5', 'description'] as const) {
    if (has(metaData, field)) value[field] = jsonSafe(metaData[field]);
  }
  return value;
}

/** Long values made into numbers when exact, else decimal strings; everything else as it is. */
function jsonSafe(value: unknown): unknown {
  if (isLong(value)) {
    const number = value.toNumber();
    return Number.isSafeInteger(number) ? number : value.toString();
  }
  return value;
}

function isLong(value: unknown): value is { toNumber(): number; toString(): string; toSigned(): unknown } {
  return typeof value === 'object' && value !== null && typeof (value as { toNumber?: unknown }).toNumber === 'function' && 'low' in value && 'high' in value;
}
