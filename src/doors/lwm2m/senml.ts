// SenML (RFC 8428) as LwM2M 1.1 Send carries it: SenML JSON (Content-Format 110) and SenML CBOR (112, integer
// labels, decoded with cborg). Base fields (bn, bt, bu) are resolved into each record; each record that
// carries a value (v, vs, vb or vd; a sum s also counts) is one reading ("one stored value", docs/governance-model.md).
// Records are passed on as plain JSON: {deviceId, name, at?, unit?, value | stringValue | boolValue | dataValue}.
import { decode as decodeCbor } from 'cborg';
import type { Decoded } from '../pipeline/index.ts';

export const SENML_JSON = 110;
export const SENML_CBOR = 112;

/** RFC 8428 section 6: the CBOR labels of the SenML fields. */
const CBOR_LABELS: Record<string, string> = {
  '-1': 'bver',
  '-2': 'bn',
  '-3': 'bt',
  '-4': 'bu',
  '-5': 'bv',
  '-6': 'bs',
  '0': 'n',
  '1': 'u',
  '2': 'v',
  '3': 'vs',
  '4': 'vb',
  '5': 's',
  '6': 't',
  '7': 'ut',
  '8': 'vd',
};

export interface SenmlReading {
  deviceId: string;
  name: string;
  at?: number;
  unit?: string;
  value?: number;
  stringValue?: string;
  boolValue?: boolean;
  dataValue?: string;
  sum?: number;
}

/** SenML CBOR labels are integers, so maps are decoded as Maps and turned into records keyed by the label. */
function decodeCborPack(payload: Buffer): unknown {
  const pack: unknown = decodeCbor(payload, { useMaps: true });
  return Array.isArray(pack) ? pack.map((record: unknown) => (record instanceof Map ? Object.fromEntries(record) : record)) : pack;
}

/** RFC 8428: a time below 2**28 is relative to now. */
const RELATIVE_TIME_BELOW = 2 ** 28;

export function decodeSenml(payload: Buffer, contentFormat: number, deviceId: string, nowMs: number): Decoded<SenmlReading[]> {
  let pack: unknown;
  try {
    pack = contentFormat === SENML_CBOR ? decodeCborPack(payload) : JSON.parse(payload.toString('utf8'));
  } catch (error) {
    return { status: 'invalid', message: `the payload is not SenML ${contentFormat === SENML_CBOR ? 'CBOR' : 'JSON'}: ${(error as Error).message}` };
  }
  if (!Array.isArray(pack)) return { status: 'invalid', message: 'a SenML pack is an array of records' };
  const readings: SenmlReading[] = [];
  let baseName = '';
  let baseTime = 0;
  let baseUnit: string | undefined;
  for (let i = 0; i < pack.length; i++) {
    const raw: unknown = pack[i];
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { status: 'invalid', message: `record ${i} is not a map` };
    const record = contentFormat === SENML_CBOR ? relabel(raw as Record<string, unknown>) : (raw as Record<string, unknown>);
    if (record.bn !== undefined) {
      if (typeof record.bn !== 'string') return { status: 'invalid', message: `record ${i}: bn must be a string` };
      baseName = record.bn;
    }
    if (record.bt !== undefined) {
      if (!isFiniteNumber(record.bt)) return { status: 'invalid', message: `record ${i}: bt must be a number` };
      baseTime = record.bt;
    }
    if (record.bu !== undefined) {
      if (typeof record.bu !== 'string') return { status: 'invalid', message: `record ${i}: bu must be a string` };
      baseUnit = record.bu;
    }
    const reading = readingOf(record, i, deviceId, baseName, baseTime, baseUnit, nowMs);
    if (typeof reading === 'string') return { status: 'invalid', message: reading };
    if (reading !== null) readings.push(reading);
  }
  return { status: 'decoded', value: readings, readingCount: readings.length };
}

function readingOf(
  record: Record<string, unknown>,
  i: number,
  deviceId: string,
  baseName: string,
  baseTime: number,
  baseUnit: string | undefined,
  nowMs: number,
): SenmlReading | null | string {
  const { n, t, u, v, vs, vb, vd, s } = record;
  if (n !== undefined && typeof n !== 'string') return `record ${i}: n must be a string`;
  if (t !== undefined && !isFiniteNumber(t)) return `record ${i}: t must be a number`;
  if (u !== undefined && typeof u !== 'string') return `record ${i}: u must be a string`;
  const reading: SenmlReading = { deviceId, name: baseName + (n ?? '') };
  if (v !== undefined) {
    if (!isFiniteNumber(v)) return `record ${i}: v must be a number`;
    reading.value = v;
  } else if (vs !== undefined) {
    if (typeof vs !== 'string') return `record ${i}: vs must be a string`;
    reading.stringValue = vs;
  } else if (vb !== undefined) {
    if (typeof vb !== 'boolean') return `record ${i}: vb must be a boolean`;
    reading.boolValue = vb;
  } else if (vd !== undefined) {
    if (typeof vd === 'string') reading.dataValue = vd;
    else if (vd instanceof Uint8Array) reading.dataValue = Buffer.from(vd).toString('base64url');
    else return `record ${i}: vd must be data`;
  } else if (s !== undefined) {
    if (!isFiniteNumber(s)) return `record ${i}: s must be a number`;
    reading.sum = s;
  } else {
    // A record without a value (base fields only) is not a reading.
    return null;
  }
  if (reading.name === '') return `record ${i} has a value but no name`;
  const time = baseTime + ((t as number | undefined) ?? 0);
  if (time !== 0) reading.at = time < RELATIVE_TIME_BELOW ? nowMs + time * 1000 : time * 1000;
  const unit = (u as string | undefined) ?? baseUnit;
  if (unit !== undefined) reading.unit = unit;
  return reading;
}

function relabel(record: Record<string, unknown>): Record<string, unknown> {
  const named: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record)) named[CBOR_LABELS[key] ?? key] = value;
  return named;
}

function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}
