// The canonical leaf of a ledger event (docs/verifiable-ledger.md, "The leaf"): the UTF-8 bytes of one JSON
// object in the RFC 8785 (JCS) canonical form, so a third party recomputes it from an exported event with
// any JCS implementation, or by hand.
import { hashLeafText } from './merkle.ts';

/** The fields a leaf commits to, as text where a JSON number could not carry them exactly. */
export interface LeafEvent {
  /** The event id (uuid, lowercase as PostgreSQL prints it). */
  id: string;
  stream: string;
  /** The 0-based revision in its stream, in decimal. */
  revision: string;
  type: string;
  /** The event's data as parsed from the stored JSON. */
  data: unknown;
  metadata: unknown;
  /** When the store recorded it: UTC, ISO 8601 with exactly six fraction digits (microseconds), `Z`. */
  recordedAt: string;
}

export const RECORDED_AT_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/** A value that JSON (and so JCS) cannot carry exactly. */
export class NotCanonicalizable extends Error {
  override readonly name = 'NotCanonicalizable';
}

/**
 * RFC 8785: object members sorted by the UTF-16 code units of their names, no whitespace, strings escaped as
 * ECMAScript's JSON.stringify does, numbers as ECMAScript's Number-to-string (which RFC 8785 adopts). So for
 * plain JSON values whose members are in that order, it is JSON.stringify's output: the value is put in order
 * (copied only where it is not) and written by JSON.stringify, far faster than building the text here. Where
 * an object cannot hold its members in that order (JavaScript puts integer-like names first) the text is
 * built member by member.
 */
export function canonicalJson(value: unknown): string {
  const ordered = inCanonicalOrder(value);
  return ordered === CANNOT ? canonicalJsonByHand(value) : JSON.stringify(ordered);
}

const CANNOT = Symbol('no JavaScript object holds these members in RFC 8785 order');
const INTEGER_LIKE = /^(0|[1-9]\d*)$/;

/** The value with every object's members in RFC 8785 order (itself when they are), or CANNOT. */
function inCanonicalOrder(value: unknown): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new NotCanonicalizable(`${value} has no JSON form`);
    return value;
  }
  if (typeof value !== 'object') throw new NotCanonicalizable(`a ${typeof value} has no JSON form`);
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const ordered = inCanonicalOrder(item);
      if (ordered === CANNOT) return CANNOT;
      if (ordered !== item) (copy ??= value.slice())[i] = ordered;
    }
    return copy ?? value;
  }
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return CANNOT;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  let sorted = true;
  for (let i = 1; i < keys.length && sorted; i++) sorted = keys[i - 1]! < keys[i]!;
  if (!sorted) keys.sort();
  // A copy has no prototype, so a member named __proto__ is a member like any other.
  let out: Record<string, unknown> | undefined = sorted ? undefined : (Object.create(null) as Record<string, unknown>);
  for (const key of keys) {
    const item = record[key];
    if (item === undefined) continue;
    if (!sorted && INTEGER_LIKE.test(key)) return CANNOT;
    const ordered = inCanonicalOrder(item);
    if (ordered === CANNOT) return CANNOT;
    if (ordered !== item && !out) {
      out = Object.create(null) as Record<string, unknown>;
      for (const before of keys) {
        if (before === key) break;
        if (record[before] !== undefined) out[before] = record[before];
      }
    }
    if (out) out[key] = ordered;
  }
  return out ?? value;
}

/**
 * RFC 8785: object members sorted by the UTF-16 code units of their names, no whitespace, strings escaped as
 * ECMAScript's JSON.stringify does, numbers as ECMAScript's Number-to-string (which RFC 8785 adopts).
 */
function canonicalJsonByHand(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new NotCanonicalizable(`${value} has no JSON form`);
      return JSON.stringify(value);
    case 'string':
      return JSON.stringify(value);
    case 'object': {
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++) out += (i > 0 ? ',' : '') + canonicalJsonByHand(value[i]);
        return out + ']';
      }
      // Array.prototype.sort without a comparator compares UTF-16 code units: RFC 8785's order.
      const keys = Object.keys(value).sort();
      const record = value as Record<string, unknown>;
      let out = '{';
      let first = true;
      for (const key of keys) {
        const item = record[key];
        if (item === undefined) continue;
        out += (first ? '' : ',') + JSON.stringify(key) + ':' + canonicalJsonByHand(item);
        first = false;
      }
      return out + '}';
    }
    default:
      throw new NotCanonicalizable(`a ${typeof value} has no JSON form`);
  }
}

/** The leaf bytes: JCS of {data, id, metadata, recordedAt, revision, stream, type}. */
export function leafBytes(event: LeafEvent): Buffer {
  return Buffer.from(leafText(event), 'utf8');
}

function leafText(event: LeafEvent): string {
  return canonicalJson({
      data: event.data,
      id: event.id,
      metadata: event.metadata,
      recordedAt: event.recordedAt,
      revision: event.revision,
      stream: event.stream,
      type: event.type,
    });
}

/** SHA-256(0x00 || leafBytes(event)) */
export function leafHash(event: LeafEvent): Buffer {
  return hashLeafText(leafText(event));
}

/** Why an event cannot be a leaf (a member missing or not in its text form), or undefined. */
export function checkEvent(event: LeafEvent): string | undefined {
  if (typeof event !== 'object' || event === null) return 'not an event';
  for (const field of ['id', 'stream', 'revision', 'type', 'recordedAt'] as const) {
    if (typeof event[field] !== 'string') return `its ${field} is not text`;
  }
  if (!RECORDED_AT_PATTERN.test(event.recordedAt)) return 'its recordedAt is not UTC ISO 8601 with microseconds';
  if (!('data' in event) || !('metadata' in event)) return 'it has no data or metadata';
  return undefined;
}
