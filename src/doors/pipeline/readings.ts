// The HTTP ingest body and how it is counted. A reading is one stored value (docs/governance-model.md): one key of a
// measurement entry, one location or one alert. The body is
//
//   {"readings": [
//     {"deviceId": "pump-7", "at": "2026-11-29T14:00:00Z", "measurements": {"temperature": 21.5, "pressure": 1.2}},
//     {"deviceId": "pump-7", "location": {"latitude": 52.1, "longitude": 4.3}},
//     {"deviceId": "pump-7", "alert": {"type": "overheat", "level": "warning", "message": "above 90 C"}}
//   ]}
//
// and costs 2 + 1 + 1 = 4 readings. An entry may carry several kinds at once (measurements and a location
// taken together); it costs the sum. The top level is strict: a field other than "readings" (a "deviceId" put
// there instead of in each reading, say) is refused naming it, never ignored. Entries are passed on to the sink as sent: the front door checks only
// what it must to count them, and the pipeline behind it validates values.

export type DecodedReadings =
  | { status: 'decoded'; entries: readonly Record<string, unknown>[]; readingCount: number }
  | { status: 'invalid'; message: string };

const EXPECTED = 'expected {"readings": [ ... ]}';
/** Fields of a reading, named in the message when sent at the top level. */
const READING_FIELDS = new Set(['deviceId', 'at', 'measurements', 'location', 'alert']);

export function decodeReadings(body: Buffer): DecodedReadings {
  const parsed = parseJson(body);
  if (parsed.status === 'invalid') return parsed;
  return readingsOf(parsed.value);
}

/** The readings of a body already parsed as JSON, counted; or what is wrong with it. */
export function readingsOf(document: unknown): DecodedReadings {
  if (!isObject(document)) return invalid(`the body must be a JSON object; ${EXPECTED}`);
  const readings = document.readings;
  if (readings === undefined) return invalid(`"readings" is missing; ${EXPECTED}`);
  if (!Array.isArray(readings)) return invalid(`"readings" must be an array; ${EXPECTED}`);
  for (const field in document) {
    if (field !== 'readings' && Object.hasOwn(document, field)) {
      const hint = READING_FIELDS.has(field) ? `: "${field}" belongs in each reading` : '';
      return invalid(`unknown field "${field.slice(0, 64)}" at the top level${hint}; ${EXPECTED}`);
    }
  }
  let readingCount = 0;
  for (let i = 0; i < readings.length; i++) {
    const entry: unknown = readings[i];
    if (!isObject(entry)) return invalid(`readings[${i}] is not an object`);
    const cost = costOf(entry, `readings[${i}]`);
    if (typeof cost === 'string') return invalid(cost);
    readingCount += cost;
  }
  return { status: 'decoded', entries: readings as Record<string, unknown>[], readingCount };
}

/** Readings in one entry, or the message saying why it cannot be counted. */
function costOf(entry: Record<string, unknown>, where: string): number | string {
  if (entry.deviceId !== undefined && typeof entry.deviceId !== 'string') return `${where}.deviceId must be a string`;
  const { measurements, location, alert } = entry;
  let cost = 0;
  if (measurements !== undefined) {
    if (!isObject(measurements)) return `${where}.measurements must be an object of name to value`;
    cost += ownKeyCount(measurements);
  }
  if (location !== undefined) {
    if (!isObject(location)) return `${where}.location must be an object`;
    cost += 1;
  }
  if (alert !== undefined) {
    if (!isObject(alert)) return `${where}.alert must be an object`;
    cost += 1;
  }
  if (cost === 0) return `${where} carries no reading: give measurements (at least one), a location or an alert`;
  return cost;
}

/** Object.keys(object).length without the array: every entry of every request is counted. */
function ownKeyCount(object: Record<string, unknown>): number {
  let count = 0;
  for (const key in object) if (Object.hasOwn(object, key)) count++;
  return count;
}

/**
 * The deepest a JSON body may nest, counting objects and arrays: a reading is 4 deep
 * (`{"readings":[{"measurements":{...}}]}`), and a value of a few levels more is plenty. JSON.parse reads any
 * depth, but JSON.stringify, which writes the batch for the sink, recurses and fails on a body 100,000 deep:
 * such a body is refused here (400) before it is charged or reaches the sink.
 */
export const MAX_JSON_DEPTH = 32;

export function parseJson(body: Buffer): { status: 'parsed'; value: unknown } | { status: 'invalid'; message: string } {
  if (body.length === 0) return invalid('the body is empty; it must be JSON');
  if (nestsDeeperThan(body, MAX_JSON_DEPTH)) return invalid(`the body nests objects and arrays more than ${MAX_JSON_DEPTH} deep`);
  try {
    return { status: 'parsed', value: JSON.parse(body.toString('utf8')) };
  } catch (error) {
    return invalid(`the body is not valid JSON: ${(error as Error).message}`);
  }
}

/**
 * Whether the JSON text opens more than `maxDepth` objects and arrays inside one another, read as bytes before
 * parsing (no allocation, no recursion). Brackets inside strings do not count; UTF-8 continuation bytes are
 * never ASCII, so a byte-wise scan sees every quote, backslash and bracket as the parser will. Invalid JSON
 * that passes is left to JSON.parse.
 */
function nestsDeeperThan(body: Buffer, maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const byte = body[i]!;
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) inString = true;
    else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (++depth > maxDepth) return true;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) depth--;
  }
  return false;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(message: string): { status: 'invalid'; message: string } {
  return { status: 'invalid', message };
}
