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
  const parts: string[] = [];
  write(value, parts);
  return parts.join('');
}

function write(value: unknown, out: string[]): void {
  if (value === null) {
    out.push('null');
    return;
  }
  switch (typeof value) {
    case 'boolean':
      out.push(value ? 'true' : 'false');
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new NotCanonicalizable(`${value} has no JSON form`);
      out.push(JSON.stringify(value));
      return;
    case 'string':
      out.push(JSON.stringify(value));
      return;
    case 'object': {
      if (Array.isArray(value)) {
        out.push('[');
        value.forEach((item, i) => {
          if (i > 0) out.push(',');
          write(item, out);
        });
        out.push(']');
        return;
      }
      // Default sort compares UTF-16 code units, which is RFC 8785's order.
      const entries = Object.entries(value as Record<string, unknown>).filter(([, item]) => item !== undefined);
      entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      out.push('{');
      entries.forEach(([key, item], i) => {
        if (i > 0) out.push(',');
        out.push(JSON.stringify(key), ':');
        write(item, out);
      });
      out.push('}');
      return;
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
