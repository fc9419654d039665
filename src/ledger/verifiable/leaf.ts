// The canonical leaf of a ledger event (docs/verifiable-ledger.md, "The leaf"): the UTF-8 bytes of one JSON
// object in the RFC 8785 (JCS) canonical form, so a third party recomputes it from an exported event with
// any JCS implementation, or by hand.
import { hashLeaf } from './merkle.ts';

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
 * ECMAScript's JSON.stringify does, numbers as ECMAScript's Number-to-string (which RFC 8785 adopts).
 */
export function canonicalJson(value: unknown): string {
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
        for (let i = 0; i < value.length; i++) out += (i > 0 ? ',' : '') + canonicalJson(value[i]);
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
        out += (first ? '' : ',') + JSON.stringify(key) + ':' + canonicalJson(item);
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
  return Buffer.from(
    canonicalJson({
      data: event.data,
      id: event.id,
      metadata: event.metadata,
      recordedAt: event.recordedAt,
      revision: event.revision,
      stream: event.stream,
      type: event.type,
    }),
    'utf8',
  );
}

/** SHA-256(0x00 || leafBytes(event)) */
export function leafHash(event: LeafEvent): Buffer {
  return hashLeaf(leafBytes(event));
}
